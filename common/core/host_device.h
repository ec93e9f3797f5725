// COURSE_HD marks code compiled for both the CPU and the GPU: the single-source kernels put
// their per-element arithmetic in COURSE_HD functors so the CPU tests run the GPU's arithmetic.
#pragma once

#if defined(__CUDACC__)
#define COURSE_HD __host__ __device__
#else
#define COURSE_HD
#endif
