// Host emulation of the CUDA device environment the generated CUDA-C relies on.
//
// The harness compiles the emitted source unchanged with g++ -DKC_HOST_EMULATION=
// '"kc_host.h"'; the prelude includes this header first. It provides the CUDA keywords,
// the grid variables (thread-local, so blocks may run on several host threads at once),
// atomics implemented with GCC's __atomic builtins, the bit-cast intrinsics and printf.
#pragma once

#include <math.h>
#include <stdio.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))

struct dim3 {
    unsigned int x = 1, y = 1, z = 1;
};

inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

// ---- bit casts ---------------------------------------------------------------------------

inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }

// ---- atomics -----------------------------------------------------------------------------

template <typename T>
inline T kc_host_cas(T* p, T expected, T desired) {
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
                                __ATOMIC_SEQ_CST);
    return expected;  // the value seen: `expected` on success, the current one otherwise
}

inline int atomicCAS(int* p, int c, int v) { return kc_host_cas(p, c, v); }
inline unsigned int atomicCAS(unsigned int* p, unsigned int c, unsigned int v) {
    return kc_host_cas(p, c, v);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c,
                                    unsigned long long v) {
    return kc_host_cas(p, c, v);
}

template <typename T>
inline T kc_host_fetch_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline int atomicAdd(int* p, int v) { return kc_host_fetch_add(p, v); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return kc_host_fetch_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return kc_host_fetch_add(p, v);
}

// Floating-point adds and integer min/max through compare-and-swap, as a GPU without
// native instructions would do them.
template <typename T, typename Bits, typename F>
inline T kc_host_rmw(T* p, F f) {
    Bits* word = (Bits*)p;
    Bits seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    for (;;) {
        T old;
        memcpy(&old, &seen, sizeof(T));
        const T next_value = f(old);
        Bits next;
        memcpy(&next, &next_value, sizeof(T));
        const Bits prior = kc_host_cas(word, seen, next);
        if (prior == seen) return old;
        seen = prior;
    }
}

inline float atomicAdd(float* p, float v) {
    return kc_host_rmw<float, unsigned int>(p, [=](float o) { return o + v; });
}
inline double atomicAdd(double* p, double v) {
    return kc_host_rmw<double, unsigned long long>(p, [=](double o) { return o + v; });
}

#define KC_HOST_MINMAX(T, BITS)                                                              \
    inline T atomicMin(T* p, T v) {                                                          \
        return kc_host_rmw<T, BITS>(p, [=](T o) { return v < o ? v : o; });                  \
    }                                                                                        \
    inline T atomicMax(T* p, T v) {                                                          \
        return kc_host_rmw<T, BITS>(p, [=](T o) { return v > o ? v : o; });                  \
    }
KC_HOST_MINMAX(int, unsigned int)
KC_HOST_MINMAX(unsigned int, unsigned int)
KC_HOST_MINMAX(long long, unsigned long long)
KC_HOST_MINMAX(unsigned long long, unsigned long long)
#undef KC_HOST_MINMAX

// Exchange and bitwise and / or / xor, as CUDA has them (the 64-bit ones on unsigned
// long long only).
#define KC_HOST_RMW(T)                                                                       \
    inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }   \
    inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }     \
    inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }       \
    inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
KC_HOST_RMW(int)
KC_HOST_RMW(unsigned int)
KC_HOST_RMW(unsigned long long)
#undef KC_HOST_RMW

inline float atomicExch(float* p, float v) {
    return kc_host_rmw<float, unsigned int>(p, [=](float) { return v; });
}

// ---- intrinsics --------------------------------------------------------------------------

inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
