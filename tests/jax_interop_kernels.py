"""Kernels and functions of tests/test_jax_interop.py (kernelc reads kernels from source
files). Most are the examples of Warp's JAX interoperability guide."""

import typing

import kernelc as kc


@kc.kernel
def triple_kernel(input: kc.array(dtype=float), output: kc.array(dtype=float)):
    tid = kc.tid()
    output[tid] = 3.0 * input[tid]


@kc.kernel
def add_kernel(a: kc.array(dtype=int), b: kc.array(dtype=int), output: kc.array(dtype=int)):
    tid = kc.tid()
    output[tid] = a[tid] + b[tid]


@kc.kernel
def sincos_kernel(angle: kc.array(dtype=float), sin_out: kc.array(dtype=float),
                  cos_out: kc.array(dtype=float)):
    tid = kc.tid()
    sin_out[tid] = kc.sin(angle[tid])
    cos_out[tid] = kc.cos(angle[tid])


@kc.kernel
def diagonal_kernel(output: kc.array(dtype=kc.mat33)):
    tid = kc.tid()
    output[tid] = kc.mat33(1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0)


@kc.kernel
def scale_kernel(a: kc.array(dtype=float), s: float, output: kc.array(dtype=float)):
    tid = kc.tid()
    output[tid] = a[tid] * s


@kc.kernel
def scale_vec_kernel(a: kc.array(dtype=kc.vec2), s: float, output: kc.array(dtype=kc.vec2)):
    tid = kc.tid()
    output[tid] = a[tid] * s


@kc.kernel
def matmul_kernel(a: kc.array2d(dtype=float), b: kc.array2d(dtype=float),
                  c: kc.array2d(dtype=float)):
    i, j = kc.tid()
    s = float(0.0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s


@kc.kernel
def vecmat_kernel(a: kc.array(dtype=float), b: kc.array(dtype=kc.vec3),
                  c: kc.array(dtype=kc.mat22), d: kc.array(dtype=float),
                  e: kc.array(dtype=kc.vec3), f: kc.array(dtype=kc.mat22)):
    tid = kc.tid()
    d[tid] = 2.0 * a[tid]
    e[tid] = b[tid] * a[tid]
    f[tid] = kc.transpose(c[tid])


@kc.kernel
def rowsum_kernel(matrix: kc.array2d(dtype=float), sums: kc.array1d(dtype=float)):
    i, j = kc.tid()
    kc.atomic_add(sums, i, matrix[i, j])


@kc.kernel
def lookup_kernel(table: kc.array(dtype=float), indices: kc.array(dtype=int),
                  output: kc.array(dtype=float)):
    i = kc.tid()
    output[i] = table[indices[i]]


@kc.kernel
def scale_sum_square(a: kc.array(dtype=float), b: kc.array(dtype=float), s: float,
                     out: kc.array(dtype=float)):
    tid = kc.tid()
    out[tid] = (a[tid] * s + b[tid]) ** 2.0


@kc.kernel
def multi_output(a: kc.array(dtype=float), b: kc.array(dtype=float), s: float,
                 c: kc.array(dtype=float), d: kc.array(dtype=float)):
    tid = kc.tid()
    c[tid] = a[tid] ** 2.0
    d[tid] = a[tid] * b[tid] * s


@kc.kernel
def scale_vec2(a: kc.array(dtype=kc.vec2), s: float, out: kc.array(dtype=kc.vec2)):
    tid = kc.tid()
    out[tid] = a[tid] * s


@kc.kernel
def sin_of_sum(a: kc.array2d(dtype=float), out: kc.array(dtype=float)):
    # The outer axis is looped over inside the kernel: launch over the inner one only.
    j = kc.tid()
    s = float(0.0)
    for m in range(a.shape[0]):
        s += a[m, j]
    out[j] = kc.sin(s)


@kc.kernel
def generic_kernel(a: kc.array(dtype=typing.Any), out: kc.array(dtype=typing.Any)):
    tid = kc.tid()
    out[tid] = a[tid]


@kc.kernel
def scalar_output_kernel(a: kc.array(dtype=float), out: float):
    tid = kc.tid()
    a[tid] = out


def example_func(a: kc.array(dtype=float), b: kc.array(dtype=kc.vec2), s: float,
                 c: kc.array(dtype=float), d: kc.array(dtype=kc.vec2)):
    kc.launch(scale_kernel, dim=a.shape, inputs=[a, s], outputs=[c])
    kc.launch(scale_vec_kernel, dim=b.shape, inputs=[b, s], outputs=[d])


def accumulate_func(a: kc.array(dtype=float), total: kc.array(dtype=float)):
    kc.launch(add_into_kernel, dim=a.shape, inputs=[a, total])


@kc.kernel
def add_into_kernel(a: kc.array(dtype=float), total: kc.array(dtype=float)):
    tid = kc.tid()
    total[tid] = total[tid] + a[tid]


def returns_value(a: kc.array(dtype=float), b: kc.array(dtype=float)) -> int:
    return 1


def unannotated(a, b: kc.array(dtype=float)):
    pass


def failing_func(a: kc.array(dtype=float), b: kc.array(dtype=float)):
    raise ValueError("failing_func always fails")
