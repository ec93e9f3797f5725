// COURSE_HD marks code compiled for both the CPU and the GPU: the single-source kernels put
// their per-element arithmetic in COURSE_HD functors so the CPU tests run the GPU's arithmetic.
#pragma once

#if defined(__CUDACC__)
#define COURSE_HD __host__ __device__
#else
#define COURSE_HD
#endif

// Unrolls the next loop completely (its trip count a small constant): nvcc's spelling when it
// compiles, GCC's otherwise.
#if defined(__CUDACC__)
#define COURSE_UNROLL _Pragma("unroll")
#else
#define COURSE_UNROLL _Pragma("GCC unroll 32")
#endif
