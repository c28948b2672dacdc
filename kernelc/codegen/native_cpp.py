"""The C++ of `@kc.func_native` snippets, shared by the CUDA-C and the CPU backends.

A snippet sees its parameters under Warp's C++ type names, so that Warp's snippets compile
unchanged: `wp::float32`, `wp::vec_t<3, wp::float32>` (`wp::vec3`), `wp::mat_t<2, 2,
wp::float32>`, and `wp::array_t<T>`, which a snippet indexes as `a[i]` (through its data
pointer as Warp does, following the stride of a 1-d array), or reads `a.shape[0]`,
`a.strides[0]` (bytes), `a.data`, `a.ndim`; `wp::address(a, i, j)` / `wp::index(a, i, j)`
follow the strides of any array. It converts to `T*` (for CUDA's `atomicAdd(a, 1)`).

Each snippet becomes a function in namespace `kc_snippets` (which uses namespace `wp`, so
`vec3` works unqualified, as in Warp's generated code) and is called through an entry
point with one ABI on both backends: `entry(void** args, void* ret)` for the forward and
replay functions, `entry(void** args, void** adjoints, void* adj_ret)` for the adjoint.
`args[k]` points at parameter k in kernelc's memory layout (arrays as `{T* data; int64
shape[N]; int64 strides[N]}`, vectors and matrices as packed components, bool one byte);
`kc.ref[T]` parameters are referenced in place, so the caller reads their final values
back from the same memory.
"""

from __future__ import annotations

from kernelc import types as T

__all__ = ["PRELUDE", "cpp_type", "definitions"]

PRELUDE = r"""// ---- native snippets: the C++ names of Warp's types they may use ------------------
namespace wp {
typedef signed char int8;
typedef unsigned char uint8;
typedef short int16;
typedef unsigned short uint16;
typedef int int32;
typedef unsigned int uint32;
typedef long long int64;
typedef unsigned long long uint64;
typedef float float32;
typedef double float64;

template <unsigned N, typename T>
struct vec_t {
    T c[N];
    KC_NATIVE_FN vec_t() : c() {}
    KC_NATIVE_FN explicit vec_t(T s) { for (unsigned i = 0; i < N; ++i) c[i] = s; }
    template <typename... R>
    KC_NATIVE_FN vec_t(T a, T b, R... rest) {
        const T v[] = {a, b, (T)rest...};
        static_assert(sizeof(v) == sizeof(c), "vec_t: one value per component");
        for (unsigned i = 0; i < N; ++i) c[i] = v[i];
    }
    KC_NATIVE_FN T& operator[](int i) { return c[i]; }
    KC_NATIVE_FN const T& operator[](int i) const { return c[i]; }
};

template <unsigned R, unsigned C, typename T>
struct mat_t {
    T data[R][C];  // row-major, as kernelc lays matrices out
    KC_NATIVE_FN mat_t() : data() {}
    KC_NATIVE_FN explicit mat_t(T s) {
        for (unsigned i = 0; i < R * C; ++i) data[i / C][i % C] = s;
    }
    template <typename... A>
    KC_NATIVE_FN mat_t(T a, T b, A... rest) {
        const T v[] = {a, b, (T)rest...};
        static_assert(sizeof(v) == sizeof(data), "mat_t: one value per component, row-major");
        for (unsigned i = 0; i < R * C; ++i) data[i / C][i % C] = v[i];
    }
    KC_NATIVE_FN vec_t<C, T>& operator[](int r) { return *(vec_t<C, T>*)data[r]; }
    KC_NATIVE_FN const vec_t<C, T>& operator[](int r) const { return *(const vec_t<C, T>*)data[r]; }
    KC_NATIVE_FN T& operator()(int r, int c) { return data[r][c]; }
    KC_NATIVE_FN const T& operator()(int r, int c) const { return data[r][c]; }
};

#define KC_VEC_OP(op)                                                                    \
    template <unsigned N, typename T>                                                    \
    KC_NATIVE_FN vec_t<N, T> operator op(const vec_t<N, T>& a, const vec_t<N, T>& b) {   \
        vec_t<N, T> r;                                                                   \
        for (unsigned i = 0; i < N; ++i) r.c[i] = a.c[i] op b.c[i];                      \
        return r;                                                                        \
    }
KC_VEC_OP(+)
KC_VEC_OP(-)
#undef KC_VEC_OP
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T> operator*(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = a.c[i] * s;
    return r;
}
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T> operator*(T s, const vec_t<N, T>& a) { return a * s; }
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T> operator/(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = a.c[i] / s;
    return r;
}
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T> operator-(const vec_t<N, T>& a) { return a * (T)-1; }
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) { return a = a + b; }
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) { return a = a - b; }
template <unsigned N, typename T>
KC_NATIVE_FN vec_t<N, T>& operator*=(vec_t<N, T>& a, T s) { return a = a * s; }
template <unsigned N, typename T>
KC_NATIVE_FN T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T s = T(0);
    for (unsigned i = 0; i < N; ++i) s += a.c[i] * b.c[i];
    return s;
}
template <typename T>
KC_NATIVE_FN vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<3, T>(a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2],
                       a.c[0] * b.c[1] - a.c[1] * b.c[0]);
}

typedef vec_t<2, float32> vec2;
typedef vec_t<3, float32> vec3;
typedef vec_t<4, float32> vec4;
typedef vec2 vec2f;
typedef vec3 vec3f;
typedef vec4 vec4f;
typedef vec_t<2, float64> vec2d;
typedef vec_t<3, float64> vec3d;
typedef vec_t<4, float64> vec4d;
typedef vec_t<2, int32> vec2i;
typedef vec_t<3, int32> vec3i;
typedef vec_t<4, int32> vec4i;
typedef mat_t<2, 2, float32> mat22;
typedef mat_t<3, 3, float32> mat33;
typedef mat_t<4, 4, float32> mat44;
typedef mat22 mat22f;
typedef mat33 mat33f;
typedef mat44 mat44f;
typedef mat_t<2, 2, float64> mat22d;
typedef mat_t<3, 3, float64> mat33d;
typedef mat_t<4, 4, float64> mat44d;

struct shape_t {
    int dims[4];
    KC_NATIVE_FN int operator[](int i) const { return dims[i]; }
    KC_NATIVE_FN int& operator[](int i) { return dims[i]; }
};

template <typename T>
struct array_t {
    T* data;
    T* grad;  // in an adjoint snippet: the gradient array's data (as `adj_<name>.data`)
    shape_t shape;
    int strides[4];  // bytes
    int ndim;
    KC_NATIVE_FN array_t() : data(0), grad(0), shape(), strides(), ndim(0) {}
    KC_NATIVE_FN bool empty() const { return !data; }
    KC_NATIVE_FN operator T*() const { return data; }
    // Warp indexes through the data pointer; a strided 1-d array (a slice) follows its
    // stride here, which is the same for contiguous arrays.
    template <typename I>
    KC_NATIVE_FN T& operator[](I i) const {
        if (ndim == 1) return *(T*)((char*)data + (long long)i * strides[0]);
        return data[i];
    }
};

template <typename T>
KC_NATIVE_FN T* address(const array_t<T>& a, int i) {
    return (T*)((char*)a.data + (long long)i * a.strides[0]);
}
template <typename T>
KC_NATIVE_FN T* address(const array_t<T>& a, int i, int j) {
    return (T*)((char*)a.data + (long long)i * a.strides[0] + (long long)j * a.strides[1]);
}
template <typename T>
KC_NATIVE_FN T* address(const array_t<T>& a, int i, int j, int k) {
    return (T*)((char*)a.data + (long long)i * a.strides[0] + (long long)j * a.strides[1]
                + (long long)k * a.strides[2]);
}
template <typename T>
KC_NATIVE_FN T* address(const array_t<T>& a, int i, int j, int k, int l) {
    return (T*)((char*)a.data + (long long)i * a.strides[0] + (long long)j * a.strides[1]
                + (long long)k * a.strides[2] + (long long)l * a.strides[3]);
}
template <typename T, typename... I>
KC_NATIVE_FN T& index(const array_t<T>& a, I... i) { return *address(a, i...); }
}  // namespace wp

// kernelc's array layout, and the conversions to and from Warp's.
template <typename T, int N>
struct kc_native_array {
    T* data;
    long long shape[N];
    long long strides[N];
};
template <typename T, int N>
KC_NATIVE_FN wp::array_t<T> kc_native_to_wp(const void* p) {
    const kc_native_array<T, N>& a = *(const kc_native_array<T, N>*)p;
    wp::array_t<T> out;
    out.data = a.data;
    out.ndim = N;
    for (int k = 0; k < N; ++k) {
        out.shape.dims[k] = (int)a.shape[k];
        out.strides[k] = (int)a.strides[k];
    }
    return out;
}
template <typename T, int N>
KC_NATIVE_FN void kc_native_from_wp(void* p, const wp::array_t<T>& w) {
    kc_native_array<T, N>& a = *(kc_native_array<T, N>*)p;
    a.data = w.data;
    for (int k = 0; k < N; ++k) {
        a.shape[k] = w.shape.dims[k];
        a.strides[k] = w.strides[k];
    }
}
"""


def cpp_type(t: T.Type) -> str:
    """Warp's C++ spelling of a kernelc type (`wp::vec_t<3, wp::float32>`)."""
    if isinstance(t, T.ScalarType):
        return "bool" if t == T.bool_ else f"wp::{t.name}"
    if isinstance(t, T.VectorType):
        return f"wp::vec_t<{t.length}, {cpp_type(t.dtype)}>"
    if isinstance(t, T.MatrixType):
        return f"wp::mat_t<{t.shape[0]}, {t.shape[1]}, {cpp_type(t.dtype)}>"
    if isinstance(t, T.ArrayType):
        return f"wp::array_t<{cpp_type(t.dtype)}>"
    raise TypeError(f"no C++ type for {t!r} in a native snippet")


def _function(name: str, ret: str, params: list[str], body: str, label: str) -> str:
    # `#line` names the snippet in the compiler's messages, counting from its first line.
    return (f"static KC_NATIVE_FN {ret} {name}({', '.join(params)}) {{\n"
            f"#line 1 \"{label}\"\n{body}\n}}\n")


def _unpack(spec, source: str, k: int, prefix: str = "") -> str:
    """The C++ line binding parameter k (or its adjoint, with prefix `adj_`) from `source`."""
    p = spec.params[k]
    name = prefix + p.name
    if isinstance(p.type, T.ArrayType):
        return (f"    {cpp_type(p.type)} {name} = kc_native_to_wp<{cpp_type(p.type.dtype)}, "
                f"{p.type.ndim}>({source}[{k}]);\n")
    return f"    {cpp_type(p.type)}& {name} = *({cpp_type(p.type)}*){source}[{k}];\n"


def definitions(spec, entry: str) -> str:
    """The snippet's functions (forward, replay and adjoint where given) and their entry
    points, declared with `entry` (`extern "C"` on the CPU, `static __device__` in CUDA)."""
    label = f"native snippet of {spec.name}"
    params = []
    for p in spec.params:
        by_ref = "&" if p.is_ref and not isinstance(p.type, T.ArrayType) else ""
        params.append(f"{cpp_type(p.type)}{by_ref} {p.name}")
    ret = cpp_type(spec.result) if spec.result is not None else "void"
    inner = f"kc_snippet_{spec.digest}"
    out = ["namespace kc_snippets {\nusing namespace wp;\n",
           _function(inner, ret, params, spec.snippet, label)]
    if spec.replay_snippet is not None:
        out.append(_function(inner + "_replay", ret, params, spec.replay_snippet,
                             f"replay snippet of {spec.name}"))
    if spec.adj_snippet is not None:
        adj = [f"{cpp_type(p.type)}& adj_{p.name}" for p in spec.params]
        if spec.result is not None:
            adj.append(f"{ret}& adj_ret")
        out.append(_function(inner + "_adjoint", "void", params + adj, spec.adj_snippet,
                             f"adjoint snippet of {spec.name}"))
    out.append("}  // namespace kc_snippets\n")
    names = ", ".join(p.name for p in spec.params)
    unpack = "".join(_unpack(spec, "kc_args", k) for k in range(len(spec.params)))
    for kind, suffix in (("forward", ""), ("replay", "_replay")):
        if kind == "replay" and spec.replay_snippet is None:
            continue
        call = f"kc_snippets::{inner}{suffix}({names})"
        if spec.result is None:
            store = f"    {call};\n"
        elif isinstance(spec.result, T.ArrayType):
            store = (f"    kc_native_from_wp<{cpp_type(spec.result.dtype)}, "
                     f"{spec.result.ndim}>(kc_ret, {call});\n")
        else:
            store = f"    *({ret}*)kc_ret = {call};\n"
        out.append(f"{entry} void {spec.symbol(kind)}(void** kc_args, void* kc_ret) {{\n"
                   f"    (void)kc_ret;\n{unpack}{store}}}\n")
    if spec.adj_snippet is not None:
        out.append(_adjoint_entry(spec, entry, inner, unpack))
    return "".join(out)


def _adjoint_entry(spec, entry: str, inner: str, unpack: str) -> str:
    adj = "".join(_unpack(spec, "kc_adj", k, "adj_") for k in range(len(spec.params)))
    # A primal array's `grad` is its gradient array's data, as in Warp's adjoints.
    grads = "".join(f"    {p.name}.grad = adj_{p.name}.data;\n" for p in spec.params
                    if isinstance(p.type, T.ArrayType))
    names = [p.name for p in spec.params] + [f"adj_{p.name}" for p in spec.params]
    if isinstance(spec.result, T.ArrayType):
        adj += (f"    {cpp_type(spec.result)} adj_ret = kc_native_to_wp<"
                f"{cpp_type(spec.result.dtype)}, {spec.result.ndim}>(kc_adj_ret);\n")
        names.append("adj_ret")
    elif spec.result is not None:
        adj += f"    {cpp_type(spec.result)}& adj_ret = *({cpp_type(spec.result)}*)kc_adj_ret;\n"
        names.append("adj_ret")
    return (f"{entry} void {spec.symbol('adjoint')}(void** kc_args, void** kc_adj, "
            f"void* kc_adj_ret) {{\n    (void)kc_adj; (void)kc_adj_ret;\n{unpack}{adj}{grads}"
            f"    kc_snippets::{inner}_adjoint({', '.join(names)});\n}}\n")
