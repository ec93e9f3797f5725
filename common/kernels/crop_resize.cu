// GPU instantiations of the crop-resize-normalise kernel (body in crop_resize_ops.h).
#include "common/kernels/crop_resize_ops.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

using namespace course::ops;

#define CROP_RESIZE(T) COURSE_INSTANTIATE_FOR_EACH(CropResizeElements<T>)
COURSE_FLOAT_TYPES(CROP_RESIZE)
