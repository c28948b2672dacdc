"""The cases of `tests/autodiff_programs.py`: inputs, tapes, and what each returns.

Each case takes a NumPy generator (seeded by the case's name, so that Warp and kernelc see
the same inputs), runs its kernels forward on a `wp.Tape`, runs the tape backward and
returns the loss, the arrays and every `.grad` as NumPy arrays. `wp` is the library the
kernels were built with (see autodiff_programs).
"""

import zlib

import numpy as np

from tests import autodiff_programs as K

wp = K.wp
N = K.N


def uniform(rng, shape, low=-2.0, high=2.0, dtype=np.float32):
    """Random values in [low, high), none within 0.05 of zero."""
    x = rng.uniform(low, high, shape)
    x[np.abs(x) < 0.05] = 0.5 * (low + high) if abs(low + high) > 0.1 else 0.5
    return x.astype(dtype)


def columns(rng, specs, slot, dtype):
    """One column per spec, drawn from the spec's `slot`-th range."""
    cols = [uniform(rng, N, *(s[slot] if len(s) > slot else (-4, 4)), dtype=dtype)
            for s in specs]
    return np.stack(cols, axis=1)


def arrays(**values):
    """wp arrays with gradients, from (NumPy array, dtype) pairs or float NumPy arrays."""
    out = {}
    for name, v in values.items():
        data, dtype = v if isinstance(v, tuple) else (v, None)
        if dtype is None:
            dtype = wp.float64 if data.dtype == np.float64 else wp.float32
        out[name] = wp.array(data, dtype=dtype, requires_grad=True)
    return out


def tape_backward(loss, launches):
    """Runs `launches()` on a new tape, then the tape backward from `loss`."""
    tape = wp.Tape()
    with tape:
        launches()
    tape.backward(loss)
    return tape


def report(loss=None, **named):
    """The loss, each array's values and each array's gradient, as NumPy copies (a CPU
    array's `.numpy()` is a view, which later launches would change)."""
    result = {} if loss is None else {"loss": loss.numpy().copy()}
    for name, a in named.items():
        result[name] = a.numpy().copy()
        result[name + ".grad"] = a.grad.numpy().copy()
    return result


def single(kernel, dim, dtype=np.float32, extra=(), **values):
    """Launches `kernel(*values, *extra, loss)` on a tape and runs it backward."""
    named = arrays(**values)
    loss = wp.zeros(1, dtype=wp.float64 if dtype == np.float64 else wp.float32,
                    requires_grad=True)
    tape_backward(loss, lambda: wp.launch(kernel, dim=dim,
                                          inputs=[*named.values(), *extra, loss]))
    return report(loss, **named)


def seeded(kernel, named, extra, **seeds):
    """Launches `kernel(*named, *extra)` on a tape, seeds the gradients of the arrays named
    in `seeds` with constants and runs it backward (no loss: the seeds are the outputs')."""
    tape = wp.Tape()
    with tape:
        wp.launch(kernel, dim=N, inputs=[*named.values(), *extra])
    for name, value in seeds.items():
        named[name].grad.fill_(value)
    tape.backward()
    return report(**named)


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def run_case(name):
    return CASES[name](np.random.default_rng(zlib.crc32(name.encode())))


def _scalars(kernel, specs, rng, dtype):
    names = ("x",) if kernel is K.k_unary else ("x", "y", "z")
    values = {name: columns(rng, specs, slot + 1, dtype) for slot, name in enumerate(names)}
    values["w"] = uniform(rng, (N, len(specs)), 0.5, 2.0, dtype)
    return single(kernel, N, dtype, **values)


for _dt in (np.float32, np.float64):
    for _name, _k, _specs in (("unary", K.k_unary, K.UNARY), ("binary", K.k_binary, K.BINARY)):
        def _scalar_case(rng, _k=_k, _specs=_specs, _dt=_dt):
            return _scalars(_k, _specs, rng, _dt)
        CASES[f"{_name}_{np.dtype(_dt).name}"] = _scalar_case


def _vecs(rng, shape, n, dtype):
    return (uniform(rng, (*shape, n), -2, 2), dtype)


@case
def vec3(rng):
    shape = (N, len(K.VEC3))
    b = uniform(rng, (*shape, 3), 0.3, 2)  # divisors
    return single(K.k_vec3, N, a=_vecs(rng, shape, 3, wp.vec3), b=(b, wp.vec3),
                  c=_vecs(rng, shape, 3, wp.vec3))


@case
def vec24(rng):
    return single(K.k_vec24, N, a=_vecs(rng, (N,), 2, wp.vec2), b=_vecs(rng, (N,), 2, wp.vec2),
                  p=_vecs(rng, (N,), 4, wp.vec4), q=_vecs(rng, (N,), 4, wp.vec4))


def _well_conditioned(rng, shape, n):
    m = uniform(rng, (*shape, n, n), -1, 1) + 3.0 * np.eye(n, dtype=np.float32)
    return m.astype(np.float32)


@case
def mat33(rng):
    shape = (N, 8)
    return single(K.k_mat33, N, m=(_well_conditioned(rng, shape, 3), wp.mat33),
                  n=(uniform(rng, (*shape, 3, 3)), wp.mat33), v=_vecs(rng, shape, 3, wp.vec3))


@case
def mat24(rng):
    return single(K.k_mat24, N, a=(_well_conditioned(rng, (N,), 2), wp.mat22),
                  b=(uniform(rng, (N, 2, 2)), wp.mat22),
                  p=(_well_conditioned(rng, (N,), 4), wp.mat44),
                  q=(uniform(rng, (N, 4, 4)), wp.mat44))


@case
def quat(rng):
    return single(K.k_quat, N, q=_vecs(rng, (N,), 4, wp.quat), r=_vecs(rng, (N,), 4, wp.quat),
                  v=_vecs(rng, (N,), 3, wp.vec3), axis=_vecs(rng, (N,), 3, wp.vec3),
                  angle=uniform(rng, N, -3, 3))


@case
def transform(rng):
    t = uniform(rng, (N, 7), -2, 2)
    u = uniform(rng, (N, 7), -2, 2)
    u[:, 3:] /= np.linalg.norm(u[:, 3:], axis=1, keepdims=True)
    return single(K.k_transform, N, t=(t, wp.transform), u=(u, wp.transform),
                  p=_vecs(rng, (N,), 3, wp.vec3))


def _params(rng, scale):
    """A `Params` whose arrays (x: floats, y: vec3s) require grad."""
    p = K.Params()
    p.x = wp.array(uniform(rng, N), dtype=float, requires_grad=True)
    p.y = wp.array(uniform(rng, (N, 3)), dtype=wp.vec3, requires_grad=True)
    p.scale = scale
    return p


@case
def struct_of_arrays(rng):
    p = _params(rng, 1.5)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape_backward(loss, lambda: wp.launch(K.k_struct, dim=N, inputs=[p, loss]))
    return report(loss, x=p.x, y=p.y)


@case
def struct_built(rng):
    return single(K.k_struct_built, N, x=uniform(rng, N), y=(uniform(rng, (N, 3)), wp.vec3),
                  z=uniform(rng, N))


@case
def struct_fields(rng):
    return single(K.k_struct_fields, N, m=uniform(rng, N), v=(uniform(rng, (N, 3)), wp.vec3))


@case
def store_through(rng):
    p = _params(rng, 1.0)
    named = arrays(y=uniform(rng, N), z=uniform(rng, N + 1))
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def launches():
        wp.launch(K.k_store_through, dim=N, inputs=[p, named["y"], named["z"]])
        wp.launch(K.k_store_loss, dim=N, inputs=[p, named["z"], loss])

    tape_backward(loss, launches)
    return report(loss, x=p.x, py=p.y, **named)


@case
def funcs(rng):
    return single(K.k_funcs, N, x=uniform(rng, N, -2, 2), y=uniform(rng, N, -2, 2))


@case
def branches(rng):
    return single(K.k_branches, 4 * N, x=uniform(rng, 4 * N, -3, 3), y=uniform(rng, 4 * N, -3, 3))


@case
def loops(rng):
    return single(K.k_loops, N, extra=[5], x=uniform(rng, N, -1, 1), a=uniform(rng, 6, -1, 1))


for _dt in (np.float32, np.float64):
    for _name, _k in (("dyn_product", K.k_dyn_product), ("dyn_sin", K.k_dyn_sin),
                      ("while", K.k_while), ("dyn_used_after", K.k_dyn_used_after)):
        def _loop_case(rng, _k=_k, _dt=_dt):
            return single(_k, N, _dt, extra=[5], x=uniform(rng, N, -1.5, 1.5, _dt),
                          a=uniform(rng, 6, 0.5, 1.5, _dt))
        CASES[f"{_name}_{np.dtype(_dt).name}"] = _loop_case


BREAK_C = np.array([0.0, 3.0])


for _dt in (np.float32, np.float64):
    def _break_case(rng, _dt=_dt):
        a = uniform(rng, 8, -1, 1.5, _dt)
        a[2] = -0.5
        return single(K.k_break_continue, N, _dt, extra=[8], x=uniform(rng, N, 0.5, 3.0, _dt),
                      a=a, c=BREAK_C.astype(_dt))
    CASES[f"break_continue_{np.dtype(_dt).name}"] = _break_case

    def _linalg_case(rng, _dt=_dt):
        vec, mat, quat = ((wp.vec3, wp.mat33, wp.quat) if _dt == np.float32 else
                          (wp.vec3d, wp.mat33d, wp.quatd))
        m = _well_conditioned(rng, (N,), 3).astype(_dt)
        return single(K.k_linalg, N, _dt, v=(uniform(rng, (N, 3), dtype=_dt), vec), m=(m, mat),
                      q=(uniform(rng, (N, 4), dtype=_dt), quat))
    CASES[f"linalg_{np.dtype(_dt).name}"] = _linalg_case


@case
def atomics(rng):
    named = arrays(x=uniform(rng, N), y=uniform(rng, N))
    total = wp.zeros(1, dtype=float, requires_grad=True)
    lo = wp.array([1e6], dtype=float, requires_grad=True)
    hi = wp.array([-1e6], dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.k_atomics, dim=N, inputs=[*named.values(), total, lo, hi])
        wp.launch(K.k_combine, dim=1, inputs=[total, lo, hi, loss])
    tape.backward(loss)
    return report(loss, total=total, lo=lo, hi=hi, **named)


@case
def atomic_nan(rng):
    # NaN in memory gives way and a NaN value is ignored (fmin/fmax); a stored NaN value won
    nan = np.nan
    slot = np.r_[[nan, nan, 2.0, 5.0, 2.0], uniform(rng, N - 5)].astype(np.float32)
    value = np.r_[[nan, 2.0, nan, 2.0, 5.0], uniform(rng, N - 5)].astype(np.float32)
    named = arrays(lo=slot, hi=slot.copy(), value=value)
    out = wp.zeros(N, dtype=float, requires_grad=True)
    return seeded(K.k_atomic_nan, named, [out], lo=1.0, hi=2.0)


@case
def atomic_vec(rng):
    # component-wise updates: each component's gradient goes to the value that won it
    named = arrays(v=(uniform(rng, (N, 3)), wp.vec3), m=(uniform(rng, (N, 2, 2)), wp.mat22),
                   lo=(np.full((1, 3), 1e6, np.float32), wp.vec3),
                   hi=(np.full((1, 2, 2), -1e6, np.float32), wp.mat22))
    return seeded(K.k_atomic_vec, named, [], lo=1.0, hi=3.0)


@case
def grid2d(rng):
    return single(K.k_grid, (5, 5), x=uniform(rng, (5, 5)), y=uniform(rng, (5, 5)))


@case
def repeated_reads(rng):
    return single(K.k_reads, N, x=uniform(rng, N))


@case
def write_then_read(rng):
    return single(K.k_write_read, N, extra=[], x=uniform(rng, N), y=np.zeros(N, np.float32))


@case
def chain_with_copy(rng):
    named = arrays(x=uniform(rng, N), v=(uniform(rng, (N, 3)), wp.vec3))
    y = wp.zeros(N, dtype=float, requires_grad=True)
    z = wp.zeros(N, dtype=float, requires_grad=True)
    w = wp.zeros(N, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.k_square_into, dim=N, inputs=[named["x"], y])
        wp.copy(z, y)
        wp.launch(K.k_sum_sq, dim=N, inputs=[z, loss])
        wp.launch(K.k_scale_vec, dim=N, inputs=[z, named["v"], 0.5, w])
        wp.launch(K.k_vec_loss, dim=N, inputs=[w, loss])
    tape.backward(loss)
    return report(loss, y=y, z=z, w=w, **named)


@case
def zero_and_backward_twice(rng):
    named = arrays(x=uniform(rng, N))
    y = wp.zeros(N, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.k_square_into, dim=N, inputs=[named["x"], y])
        wp.launch(K.k_sum_sq, dim=N, inputs=[y, loss])
    tape.backward(loss)
    first = report(loss, y=y, **named)
    tape.backward(loss)  # accumulates
    twice = report(y=y, **named)
    tape.zero()
    zeroed = report(loss, y=y, **named)
    tape.backward(loss)
    again = report(y=y, **named)
    out = {}
    for tag, r in (("first", first), ("twice", twice), ("zeroed", zeroed), ("again", again)):
        out.update({f"{tag}:{k}": v for k, v in r.items()})
    return out


@case
def components(rng):
    named = arrays(a=_vecs(rng, (N,), 3, wp.vec3), s=uniform(rng, N))
    idx = wp.array(rng.integers(0, 3, N).astype(np.int32), dtype=int)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape_backward(loss, lambda: wp.launch(K.k_components, dim=N,
                                          inputs=[*named.values(), idx, loss]))
    return report(loss, **named)


@case
def cast_reverse(rng):
    return single(K.k_cast_reverse, N, extra=[4], x=uniform(rng, N, dtype=np.float64),
                  y=uniform(rng, N, -1, 1), c=uniform(rng, 6))


@case
def struct_array(rng):
    bodies = np.zeros(N, dtype=K.Body.numpy_dtype())  # (kernelc takes no list of structs)
    bodies["pos"] = uniform(rng, (N, 3))
    bodies["mass"] = uniform(rng, N, 0.5, 2)
    arr = wp.array(bodies, dtype=K.Body, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape_backward(loss, lambda: wp.launch(K.k_struct_array, dim=N, inputs=[arr, loss]))
    value, grad = arr.numpy(), arr.grad.numpy()
    return {"loss": loss.numpy(), "pos": value["pos"], "mass": value["mass"],
            "pos.grad": grad["pos"], "mass.grad": grad["mass"]}


@case
def grid3d_vec_atomics(rng):
    named = arrays(x=uniform(rng, (4, 4, 3)), v=(uniform(rng, (4, 4, 2)), wp.vec2))
    acc = wp.zeros(3, dtype=wp.vec2, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def launches():
        wp.launch(K.k_grid3, dim=(4, 4, 3), inputs=[*named.values(), acc])
        wp.launch(K.k_vec_norms, dim=3, inputs=[acc, loss])

    tape_backward(loss, launches)
    return report(loss, acc=acc, **named)


for _dt in (np.float32, np.float64):
    def _nested_case(rng, _dt=_dt):
        a = uniform(rng, 6, 0.6, 1.2, _dt)
        a[2], a[3], a[5] = 1.5, 0.25, 6.0  # q grows past a[5] in a few steps
        return single(K.k_nested, N, _dt, extra=[4], x=uniform(rng, N, -1.5, 1.5, _dt), a=a)
    CASES[f"nested_{np.dtype(_dt).name}"] = _nested_case


@case
def early_return_vec_loop(rng):
    return single(K.k_early_vec, N, extra=[3], x=uniform(rng, N, -1, 1),
                  v=_vecs(rng, (N,), 3, wp.vec3), b=_vecs(rng, (3,), 3, wp.vec3))


@case
def aliases_and_views(rng):
    """One array passed twice, a slice of it, and a strided column of a 2-D array."""
    x = wp.array(uniform(rng, 6), dtype=float, requires_grad=True)
    m = wp.array(uniform(rng, (3, 4)), dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)

    def launches():
        wp.launch(K.k_pair, dim=6, inputs=[x, x, loss])
        view = x[1:5]
        wp.launch(K.k_pair, dim=4, inputs=[view, view, loss])
        col = m[:, 1]
        wp.launch(K.k_pair, dim=3, inputs=[col, x, loss])

    tape_backward(loss, launches)
    return report(loss, x=x, m=m)


@case
def half(rng):
    h = wp.array(uniform(rng, N).astype(np.float16), dtype=wp.float16, requires_grad=True)
    loss = wp.zeros(1, dtype=wp.float16, requires_grad=True)
    tape_backward(loss, lambda: wp.launch(K.k_half, dim=N, inputs=[h, loss]))
    return report(loss, h=h)


@case
def grads_and_record_func(rng):
    """backward(grads=...) without a loss, then a tape with a recorded Python function."""
    named = arrays(x=uniform(rng, N))
    y = wp.zeros(N, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.k_square_into, dim=N, inputs=[named["x"]], outputs=[y])
    tape.backward(grads={y: wp.array(uniform(rng, N), dtype=float)})
    out = {f"grads:{k}": v for k, v in report(y=y, **named).items()}
    tape.zero()
    z = wp.zeros(N, dtype=float, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(K.k_square_into, dim=N, inputs=[named["x"]], outputs=[y])
        z.assign(y.numpy() * 2.0)  # outside the tape's view: its adjoint is recorded

        def back():
            y.grad.assign(y.grad.numpy() + 2.0 * z.grad.numpy())

        tape.record_func(back, [y, z])
        wp.launch(K.k_pair, dim=N, inputs=[z, z, loss])
    tape.backward(loss)
    out.update({f"record:{k}": v for k, v in report(loss, y=y, z=z, **named).items()})
    return out


def run_all():
    """Every case's results, keyed 'case/field'; failures as 'case/error' strings."""
    import traceback

    results = {}
    for name in CASES:
        try:
            for key, value in run_case(name).items():
                results[f"{name}/{key}"] = value
        except Exception as err:  # reported per case by the test
            traceback.print_exc()
            results[f"{name}/error"] = np.array(f"{type(err).__name__}: {err}")
    return results
