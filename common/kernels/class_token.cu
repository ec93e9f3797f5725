// GPU instantiations of the class-token kernels (bodies in class_token_ops.h; the sums over the
// batch are embedding.cu's PositionEmbeddingBackward).
#include "common/kernels/class_token_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define CLASS_TOKEN(T)                              \
  COURSE_INSTANTIATE_FOR_EACH(ClassTokenForward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(CopyTokens<T>)
COURSE_FLOAT_TYPES(CLASS_TOKEN)
