"""The C prelude every generated CUDA-C module starts with.

It defines kernelc's fixed-width types, the launch / thread / error structs shared with
the runtime, strided array access, and the helpers whose semantics C leaves undefined or
that CUDA lacks: wrapping integer division, saturating float -> int conversion, float16
and bfloat16 storage, and atomics for every element type. Everything here compiles both
with NVRTC and with a host C++17 compiler (the test harness defines `KC_HOST_EMULATION` to
the name of a header that supplies the CUDA keywords, intrinsics and atomics on the host).
"""

from __future__ import annotations

PRELUDE = r"""// ---- kernelc prelude -------------------------------------------------------------
#ifdef KC_HOST_EMULATION
#include KC_HOST_EMULATION
#endif

typedef signed char kc_int8;
typedef short kc_int16;
typedef int kc_int32;
typedef long long kc_int64;
typedef unsigned char kc_uint8;
typedef unsigned short kc_uint16;
typedef unsigned int kc_uint32;
typedef unsigned long long kc_uint64;

#define KC_FN static __device__ __forceinline__

// The error record of debug mode, written by the first thread whose check fails.
struct kc_error {
    kc_int32 code;  // 0 none, 1 array index out of bounds, 2 assert failed, 3 local index
    kc_int32 check_id;
    kc_int32 ndim;
    kc_int32 pad;
    kc_int64 index[4];
    kc_int64 shape[4];
};

// Passed by value as the first kernel parameter.
struct kc_launch {
    kc_int64 dims[4];
    kc_int64 size;
    kc_error* error;
};

// Per-thread state handed to the kernel body and every func.
struct kc_thread {
    kc_launch launch;
    kc_int64 tid;
    bool aborted;
};

// A strided view: byte strides, so any NumPy layout (transposed, sliced) works.
template <typename T, int N>
struct kc_array {
    T* data;
    kc_int64 shape[N];
    kc_int64 strides[N];
};

template <typename To, typename From>
KC_FN To kc_bitcast(From x) {
    To out;
    memcpy(&out, &x, sizeof(To));
    return out;
}

// ---- thread index ----------------------------------------------------------------------

// Index along `axis` of the launch, row-major (last axis fastest), from its whole shape
// (unused dims are 1): a tid() that unpacks fewer indices than the launch has reads the
// leading ones, and a scalar tid() is the leading index.
KC_FN kc_int32 kc_tid_axis(const kc_thread& t, int axis) {
    kc_int64 inner = 1;
    for (int k = axis + 1; k < 4; ++k) inner *= t.launch.dims[k];
    return (kc_int32)((t.tid / inner) % t.launch.dims[axis]);
}
KC_FN kc_int32 kc_tid_leading(const kc_thread& t) {
    const kc_int64 inner = t.launch.dims[1] * t.launch.dims[2] * t.launch.dims[3];
    return (kc_int32)(inner == 1 ? t.tid : t.tid / inner);
}

// ---- arrays ----------------------------------------------------------------------------

template <typename T>
KC_FN T* kc_addr(const kc_array<T, 1>& a, kc_int64 i) {
    return (T*)((char*)a.data + i * a.strides[0]);
}
template <typename T>
KC_FN T* kc_addr(const kc_array<T, 2>& a, kc_int64 i, kc_int64 j) {
    return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1]);
}
template <typename T>
KC_FN T* kc_addr(const kc_array<T, 3>& a, kc_int64 i, kc_int64 j, kc_int64 k) {
    return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2]);
}
template <typename T>
KC_FN T* kc_addr(const kc_array<T, 4>& a, kc_int64 i, kc_int64 j, kc_int64 k, kc_int64 l) {
    return (T*)((char*)a.data + i * a.strides[0] + j * a.strides[1] + k * a.strides[2]
                + l * a.strides[3]);
}

// ---- debug checks ----------------------------------------------------------------------

KC_FN void kc_report(kc_thread& t, kc_int32 code, kc_int32 check_id, kc_int32 ndim,
                     const kc_int64* index, const kc_int64* shape) {
    t.aborted = true;
    kc_error* e = t.launch.error;
    if (e == 0 || atomicCAS(&e->code, 0, code) != 0) return;
    e->check_id = check_id;
    e->ndim = ndim;
    for (int k = 0; k < ndim; ++k) {
        e->index[k] = index[k];
        e->shape[k] = shape[k];
    }
}

template <typename T, int N, typename... I>
KC_FN bool kc_check_index(kc_thread& t, kc_int32 check_id, const kc_array<T, N>& a, I... i) {
    const kc_int64 index[N] = {(kc_int64)i...};
    bool ok = true;
    for (int k = 0; k < N; ++k) ok = ok && index[k] >= 0 && index[k] < a.shape[k];
    if (!ok) kc_report(t, 1, check_id, N, index, a.shape);
    return ok;
}

KC_FN bool kc_check_local(kc_thread& t, kc_int32 check_id, kc_int64 i, kc_int64 n) {
    if (i >= 0 && i < n) return true;
    kc_report(t, 3, check_id, 1, &i, &n);
    return false;
}

KC_FN bool kc_check_assert(kc_thread& t, kc_int32 check_id, bool cond) {
    if (!cond) kc_report(t, 2, check_id, 0, 0, 0);
    return cond;
}

// ---- integer arithmetic without undefined behaviour ------------------------------------

// Division by zero gives 0 and INT_MIN / -1 wraps, so no input traps.
template <typename T>
KC_FN T kc_sdiv(T a, T b) {
    if (b == 0) return 0;
    if (b == -1) return (T)(0 - (kc_uint64)a);
    return (T)(a / b);
}
template <typename T>
KC_FN T kc_udiv(T a, T b) {
    return b == 0 ? (T)0 : (T)(a / b);
}
template <typename T>
KC_FN T kc_smod(T a, T b) {
    return (b == 0 || b == -1) ? (T)0 : (T)(a % b);
}
template <typename T>
KC_FN T kc_umod(T a, T b) {
    return b == 0 ? (T)0 : (T)(a % b);
}
template <typename T>
KC_FN T kc_sfloordiv(T a, T b) {
    const T q = kc_sdiv(a, b);
    const bool inexact = kc_smod(a, b) != 0;
    return (inexact && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;
}

// ---- conversions -----------------------------------------------------------------------

template <typename T> struct kc_int_range;
#define KC_INT_RANGE(T, LO, HI, MIN, MAX)                                \
    template <> struct kc_int_range<T> {                                 \
        static constexpr double lo = LO;   /* every x <= lo gives MIN */ \
        static constexpr double hi = HI;   /* every x >= hi gives MAX */ \
        static constexpr T min = MIN;                                    \
        static constexpr T max = MAX;                                    \
    };
KC_INT_RANGE(kc_int8, -128.0, 128.0, -128, 127)
KC_INT_RANGE(kc_int16, -32768.0, 32768.0, -32768, 32767)
KC_INT_RANGE(kc_int32, -2147483648.0, 2147483648.0, (-2147483647 - 1), 2147483647)
KC_INT_RANGE(kc_int64, -9223372036854775808.0, 9223372036854775808.0,
             (-9223372036854775807LL - 1), 9223372036854775807LL)
KC_INT_RANGE(kc_uint8, 0.0, 256.0, 0, 255)
KC_INT_RANGE(kc_uint16, 0.0, 65536.0, 0, 65535)
KC_INT_RANGE(kc_uint32, 0.0, 4294967296.0, 0, 4294967295u)
KC_INT_RANGE(kc_uint64, 0.0, 18446744073709551616.0, 0, 18446744073709551615ull)

// float -> int truncates toward zero and saturates, NaN gives 0 (PTX cvt.rzi.sat).
// The bounds are powers of two, exact in the source float type, so no double math.
template <typename To, typename From>
KC_FN To kc_f2i(From x) {
    if (!(x == x)) return 0;
    if (x <= (From)kc_int_range<To>::lo) return kc_int_range<To>::min;
    if (x >= (From)kc_int_range<To>::hi) return kc_int_range<To>::max;
    return (To)x;
}

// float16 values live in float registers (always holding an exact half value) and in
// memory as their 16 bits; the conversions are written out so host and device agree.
KC_FN float kc_half_to_float(kc_uint16 h) {
    const kc_uint32 sign = (kc_uint32)(h & 0x8000u) << 16;
    const kc_uint32 exponent = (h >> 10) & 0x1fu;
    const kc_uint32 mantissa = h & 0x3ffu;
    if (exponent == 0x1fu) return kc_bitcast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) {
        return kc_bitcast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    }
    const float sub = (float)mantissa * 5.9604644775390625e-8f;  // mantissa * 2^-24, exact
    return sign ? -sub : sub;
}

KC_FN kc_uint16 kc_float_to_half(float f) {  // round to nearest, ties to even
    const kc_uint32 x = kc_bitcast<kc_uint32>(f);
    const kc_uint32 sign = (x >> 16) & 0x8000u;
    const kc_uint32 a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (kc_uint16)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (kc_uint16)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (a >= 0x38800000u) {  // a normal half: rebias the exponent, round the mantissa
        kc_uint32 r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (kc_uint16)(sign | (r >> 13));
    }
    // Subnormal or zero: scaling by 2^24 is exact, rintf rounds ties to even.
    return (kc_uint16)(sign | (kc_uint32)rintf(kc_bitcast<float>(a) * 16777216.0f));
}

KC_FN float kc_round_half(float x) {
    return kc_half_to_float(kc_float_to_half(x));
}

// bfloat16 is the upper half of a float32; conversions follow kernelc.types_bf16: round to
// nearest even, and a NaN keeps being one (its quiet bit set). No cuda_bf16.h: the same
// text runs on every architecture and on the host.
KC_FN float kc_bf16_to_float(kc_uint16 h) {
    return kc_bitcast<float>((kc_uint32)h << 16);
}

KC_FN kc_uint16 kc_float_to_bf16(float f) {
    const kc_uint32 x = kc_bitcast<kc_uint32>(f);
    if (!(f == f)) return (kc_uint16)((x >> 16) | 0x40u);
    return (kc_uint16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

KC_FN float kc_round_bf16(float x) {
    return kc_bf16_to_float(kc_float_to_bf16(x));
}

// ---- atomics ---------------------------------------------------------------------------

// Read-modify-write through a compare-and-swap loop: `f` maps the old value to the new
// one. 1- and 2-byte elements swap the aligned 32-bit word that contains them.
template <typename S, typename F>
KC_FN S kc_atomic_rmw(S* p, F f) {
    if constexpr (sizeof(S) == 8) {
        unsigned long long* word = (unsigned long long*)p;
        unsigned long long seen = *(volatile unsigned long long*)word;
        for (;;) {
            const S old = kc_bitcast<S>(seen);
            const unsigned long long next = kc_bitcast<unsigned long long>(f(old));
            if (next == seen) return old;
            const unsigned long long prior = atomicCAS(word, seen, next);
            if (prior == seen) return old;
            seen = prior;
        }
    } else if constexpr (sizeof(S) == 4) {
        unsigned int* word = (unsigned int*)p;
        unsigned int seen = *(volatile unsigned int*)word;
        for (;;) {
            const S old = kc_bitcast<S>(seen);
            const unsigned int next = kc_bitcast<unsigned int>(f(old));
            if (next == seen) return old;
            const unsigned int prior = atomicCAS(word, seen, next);
            if (prior == seen) return old;
            seen = prior;
        }
    } else {
        const unsigned long long address = (unsigned long long)p;
        unsigned int* word = (unsigned int*)(address & ~3ull);
        const unsigned int shift = (unsigned int)(address & 3ull) * 8u;
        const unsigned int mask = (sizeof(S) == 1 ? 0xffu : 0xffffu) << shift;
        unsigned int seen = *(volatile unsigned int*)word;
        for (;;) {
            const S old = (S)((seen & mask) >> shift);
            const unsigned int bits = ((unsigned int)(S)f(old) << shift) & mask;
            const unsigned int next = (seen & ~mask) | bits;
            if (next == seen) return old;
            const unsigned int prior = atomicCAS(word, seen, next);
            if (prior == seen) return old;
            seen = prior;
        }
    }
}

// Native atomics where CUDA has them; the CAS loop for every other element type.
KC_FN kc_int32 kc_atomic_add(kc_int32* p, kc_int32 v) { return atomicAdd(p, v); }
KC_FN kc_uint32 kc_atomic_add(kc_uint32* p, kc_uint32 v) { return atomicAdd(p, v); }
KC_FN kc_uint64 kc_atomic_add(kc_uint64* p, kc_uint64 v) { return atomicAdd(p, v); }
KC_FN kc_int64 kc_atomic_add(kc_int64* p, kc_int64 v) {
    return (kc_int64)atomicAdd((kc_uint64*)p, (kc_uint64)v);
}
KC_FN float kc_atomic_add(float* p, float v) { return atomicAdd(p, v); }
KC_FN double kc_atomic_add(double* p, double v) { return atomicAdd(p, v); }
template <typename S>
KC_FN S kc_atomic_add(S* p, S v) {  // 8- and 16-bit integers wrap
    return kc_atomic_rmw(p, [=](S old) { return (S)((kc_uint32)old + (kc_uint32)v); });
}

KC_FN float kc_atomic_sub(float* p, float v) { return atomicAdd(p, -v); }
KC_FN double kc_atomic_sub(double* p, double v) { return atomicAdd(p, -v); }
template <typename S>
KC_FN S kc_atomic_sub(S* p, S v) {
    return kc_atomic_add(p, (S)(0ull - (kc_uint64)v));
}

KC_FN kc_int32 kc_atomic_min(kc_int32* p, kc_int32 v) { return atomicMin(p, v); }
KC_FN kc_uint32 kc_atomic_min(kc_uint32* p, kc_uint32 v) { return atomicMin(p, v); }
KC_FN kc_int64 kc_atomic_min(kc_int64* p, kc_int64 v) { return atomicMin(p, v); }
KC_FN kc_uint64 kc_atomic_min(kc_uint64* p, kc_uint64 v) { return atomicMin(p, v); }
template <typename S>
KC_FN S kc_atomic_min(S* p, S v) {  // floats as fminf: a NaN value is ignored, a NaN old replaced
    return kc_atomic_rmw(p, [=](S old) { return (v < old || old != old) ? v : old; });
}

KC_FN kc_int32 kc_atomic_max(kc_int32* p, kc_int32 v) { return atomicMax(p, v); }
KC_FN kc_uint32 kc_atomic_max(kc_uint32* p, kc_uint32 v) { return atomicMax(p, v); }
KC_FN kc_int64 kc_atomic_max(kc_int64* p, kc_int64 v) { return atomicMax(p, v); }
KC_FN kc_uint64 kc_atomic_max(kc_uint64* p, kc_uint64 v) { return atomicMax(p, v); }
template <typename S>
KC_FN S kc_atomic_max(S* p, S v) {
    return kc_atomic_rmw(p, [=](S old) { return (v > old || old != old) ? v : old; });
}

// Bitwise and / or / xor on 32- and 64-bit integers (the types Warp allows).
#define KC_BITWISE_ATOMIC(NAME, CUDA_NAME)                                           \
    KC_FN kc_int32 NAME(kc_int32* p, kc_int32 v) { return CUDA_NAME(p, v); }         \
    KC_FN kc_uint32 NAME(kc_uint32* p, kc_uint32 v) { return CUDA_NAME(p, v); }      \
    KC_FN kc_uint64 NAME(kc_uint64* p, kc_uint64 v) { return CUDA_NAME(p, v); }      \
    KC_FN kc_int64 NAME(kc_int64* p, kc_int64 v) {                                   \
        return (kc_int64)CUDA_NAME((kc_uint64*)p, (kc_uint64)v);                     \
    }
KC_BITWISE_ATOMIC(kc_atomic_and, atomicAnd)
KC_BITWISE_ATOMIC(kc_atomic_or, atomicOr)
KC_BITWISE_ATOMIC(kc_atomic_xor, atomicXor)
#undef KC_BITWISE_ATOMIC

KC_FN kc_int32 kc_atomic_exch(kc_int32* p, kc_int32 v) { return atomicExch(p, v); }
KC_FN kc_uint32 kc_atomic_exch(kc_uint32* p, kc_uint32 v) { return atomicExch(p, v); }
KC_FN kc_uint64 kc_atomic_exch(kc_uint64* p, kc_uint64 v) { return atomicExch(p, v); }
KC_FN kc_int64 kc_atomic_exch(kc_int64* p, kc_int64 v) {
    return (kc_int64)atomicExch((kc_uint64*)p, (kc_uint64)v);
}
KC_FN float kc_atomic_exch(float* p, float v) { return atomicExch(p, v); }
KC_FN double kc_atomic_exch(double* p, double v) {
    return kc_bitcast<double>(atomicExch((kc_uint64*)p, kc_bitcast<kc_uint64>(v)));
}

KC_FN kc_int32 kc_atomic_cas(kc_int32* p, kc_int32 c, kc_int32 v) { return atomicCAS(p, c, v); }
KC_FN kc_uint32 kc_atomic_cas(kc_uint32* p, kc_uint32 c, kc_uint32 v) {
    return atomicCAS(p, c, v);
}
KC_FN kc_uint64 kc_atomic_cas(kc_uint64* p, kc_uint64 c, kc_uint64 v) {
    return atomicCAS(p, c, v);
}
KC_FN kc_int64 kc_atomic_cas(kc_int64* p, kc_int64 c, kc_int64 v) {
    return (kc_int64)atomicCAS((kc_uint64*)p, (kc_uint64)c, (kc_uint64)v);
}
template <typename S>
KC_FN S kc_atomic_cas(S* p, S c, S v) {  // floats compare by value, as == (and the CPU) do
    return kc_atomic_rmw(p, [=](S old) { return old == c ? v : old; });
}

// float16 and bfloat16 elements: the bits are in memory, the arithmetic is done in float.
#define KC_HALF_ATOMIC(NAME, TO_FLOAT, FROM_FLOAT, EXPR)                             \
    KC_FN float NAME(kc_uint16* p, float v) {                                        \
        return TO_FLOAT(kc_atomic_rmw(p, [=](kc_uint16 bits) {                       \
            const float old = TO_FLOAT(bits);                                        \
            return FROM_FLOAT(EXPR);                                                 \
        }));                                                                         \
    }
// The four float16 / bfloat16 operations, each made by MAKE(name, to_float, from_float, new).
#define KC_HALF_OPS(MAKE, PREFIX, SUFFIX, TO_FLOAT, FROM_FLOAT)                           \
    MAKE(PREFIX##add_##SUFFIX, TO_FLOAT, FROM_FLOAT, old + v)                             \
    MAKE(PREFIX##sub_##SUFFIX, TO_FLOAT, FROM_FLOAT, old - v)                             \
    MAKE(PREFIX##min_##SUFFIX, TO_FLOAT, FROM_FLOAT, (v < old || old != old) ? v : old)   \
    MAKE(PREFIX##max_##SUFFIX, TO_FLOAT, FROM_FLOAT, (v > old || old != old) ? v : old)
KC_HALF_OPS(KC_HALF_ATOMIC, kc_atomic_, f16, kc_half_to_float, kc_float_to_half)
KC_HALF_OPS(KC_HALF_ATOMIC, kc_atomic_, bf16, kc_bf16_to_float, kc_float_to_bf16)
#undef KC_HALF_ATOMIC

// Atomics on a thread's own local arrays (`kc.zeros(shape=...)` in a kernel): a GPU has no
// atomics on local memory, and no other thread can see it, so a plain read-modify-write is
// exact. `kc_is_local` tells a local address from a global or shared one at run time.
KC_FN bool kc_is_local(const void* p) {
#if defined(__CUDA_ARCH__)
    return __isLocal(p) != 0;
#else
    return false;  // the host harness: its atomics work on any memory
#endif
}
template <typename S> KC_FN S kc_plain_add(S a, S b) { return (S)((kc_uint64)a + (kc_uint64)b); }
KC_FN float kc_plain_add(float a, float b) { return a + b; }
KC_FN double kc_plain_add(double a, double b) { return a + b; }
template <typename S> KC_FN S kc_plain_sub(S a, S b) { return (S)((kc_uint64)a - (kc_uint64)b); }
KC_FN float kc_plain_sub(float a, float b) { return a - b; }
KC_FN double kc_plain_sub(double a, double b) { return a - b; }
#define KC_LOCAL_ATOMIC(NAME, EXPR)                                                  \
    template <typename S> KC_FN S NAME(S* p, S v) {                                  \
        const S old = *p;                                                            \
        *p = EXPR;                                                                   \
        return old;                                                                  \
    }
KC_LOCAL_ATOMIC(kc_local_add, kc_plain_add(old, v))
KC_LOCAL_ATOMIC(kc_local_sub, kc_plain_sub(old, v))
KC_LOCAL_ATOMIC(kc_local_min, (v < old || old != old) ? v : old)
KC_LOCAL_ATOMIC(kc_local_max, (v > old || old != old) ? v : old)
KC_LOCAL_ATOMIC(kc_local_and, (S)(old & v))
KC_LOCAL_ATOMIC(kc_local_or, (S)(old | v))
KC_LOCAL_ATOMIC(kc_local_xor, (S)(old ^ v))
KC_LOCAL_ATOMIC(kc_local_exch, v)
#undef KC_LOCAL_ATOMIC
template <typename S> KC_FN S kc_local_cas(S* p, S c, S v) {
    const S old = *p;
    if (old == c) *p = v;
    return old;
}
#define KC_HALF_LOCAL(NAME, TO_FLOAT, FROM_FLOAT, EXPR)                              \
    KC_FN float NAME(kc_uint16* p, float v) {                                        \
        const float old = TO_FLOAT(*p);                                              \
        *p = FROM_FLOAT(EXPR);                                                       \
        return old;                                                                  \
    }
KC_HALF_OPS(KC_HALF_LOCAL, kc_local_, f16, kc_half_to_float, kc_float_to_half)
KC_HALF_OPS(KC_HALF_LOCAL, kc_local_, bf16, kc_bf16_to_float, kc_float_to_bf16)
#undef KC_HALF_LOCAL
#undef KC_HALF_OPS

// ---- loops -----------------------------------------------------------------------------

// Iterations of range(start, stop, step), counted in unsigned arithmetic so that no
// bound (INT_MAX included) overflows; U is the unsigned type of T's width (>= 32 bits).
template <typename U, typename T>
KC_FN U kc_trip_count(T start, T stop, T step) {
    if (step > 0 && start < stop) return ((U)stop - (U)start - 1u) / (U)step + 1u;
    if (step < 0 && start > stop) return ((U)start - (U)stop - 1u) / ((U)0 - (U)step) + 1u;
    return 0;
}
// ---- end of prelude --------------------------------------------------------------------
"""
