// GPU instantiations of the embedding kernels (bodies in embedding_ops.h).
#include "common/kernels/embedding_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define EMBEDDING(T)                                     \
  COURSE_INSTANTIATE_FOR_EACH(EmbeddingForward<T>)       \
  COURSE_INSTANTIATE_FOR_EACH(TokenEmbeddingBackward<T>) \
  COURSE_INSTANTIATE_FOR_EACH(PositionEmbeddingBackward<T>)
COURSE_FLOAT_TYPES(EMBEDDING)
COURSE_INSTANTIATE_FOR_EACH(TokenRowInSlice)
