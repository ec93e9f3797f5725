// Tensor memory, views and copies.
#include "common/tensor/tensor.h"

#include <cstring>

#if COURSE_WITH_CUDA
#include "common/tensor/cuda_check.h"
#endif

namespace course {

Storage::Storage(size_t bytes, CachingAllocator& allocator)
    : data_(allocator.allocate(bytes)), allocator_(&allocator) {}

Storage::~Storage() { allocator_->deallocate(data_); }

Tensor Tensor::allocate(const Shape& shape, DType dtype, Device device, MemoryFormat format,
                        CachingAllocator& allocator) {
  Tensor t;
  t.shape_ = shape;
  t.strides_ = dense_strides(shape, format);
  t.numel_ = numel_of(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.format_ = format;
  COURSE_CHECK(t.numel_ <= static_cast<int64_t>((size_t{1} << 62) / dtype_size(dtype)),
               "tensor of shape ", shape_str(shape), " is too large");
  t.storage_ = std::make_shared<Storage>(t.nbytes(), allocator);
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, MemoryFormat format) {
  require_device(device);
  return allocate(shape, dtype, device, format, device_allocator(device));
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  return allocate(shape, dtype, Device::cpu(), MemoryFormat::kContiguous, pinned_host_allocator());
}

bool Tensor::is_pinned() const {
  return defined() && &storage_->allocator() == &pinned_host_allocator();
}

void* Tensor::data() const {
  COURSE_CHECK(defined(), "use of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_bytes_;
}

int64_t Tensor::size(int64_t axis) const {
  const int64_t d = dim();
  COURSE_CHECK(axis >= -d && axis < d, "axis ", axis, " out of range for shape ",
               shape_str(shape_));
  return shape_[axis < 0 ? axis + d : axis];
}

Tensor Tensor::view(const Shape& shape) const {
  COURSE_CHECK(format_ == MemoryFormat::kContiguous, "view of a ", memory_format_name(format_),
               " tensor");
  COURSE_CHECK(numel_of(shape) == numel_, "cannot view shape ", shape_str(shape_), " as ",
               shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = dense_strides(shape, MemoryFormat::kContiguous);
  return t;
}

Tensor Tensor::view(const Shape& shape, MemoryFormat format) const {
  COURSE_CHECK(numel_of(shape) == numel_, "cannot view shape ", shape_str(shape_), " as ",
               shape_str(shape));
  Tensor t = *this;
  t.shape_ = shape;
  t.strides_ = dense_strides(shape, format);  // refuses channels-last of other than 4-D
  t.format_ = format;
  return t;
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  COURSE_CHECK(dim() >= 1, "slice of a 0-d tensor");
  COURSE_CHECK(0 <= begin && begin <= end && end <= shape_[0], "slice [", begin, ", ", end,
               ") out of range for shape ", shape_str(shape_));
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.numel_ = numel_of(t.shape_);
  t.offset_bytes_ += static_cast<size_t>(begin * strides_[0]) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::to(Device device) const {
  COURSE_CHECK(defined(), "copy of an undefined tensor");
  Tensor t = empty(shape_, dtype_, device, format_);
  copy_bytes(t.data(), device, data(), device_, nbytes());
  return t;
}

Tensor Tensor::to(Device device, const Stream& stream) const {
  COURSE_CHECK(defined(), "copy of an undefined tensor");
  Tensor t = empty(shape_, dtype_, device, format_);
  copy_bytes_async(t.data(), device, data(), device_, nbytes(), stream,
                   device_.is_cpu() ? is_pinned() : t.is_pinned());
  return t;
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return detail::concat("Tensor(", dtype_name(dtype_), ", ", shape_str(shape_), ", ", device_.str(),
                        ", ", memory_format_name(format_), ")");
}

namespace {

// Counts the host's wait in a copy between the host and an accelerator: a read when the host
// receives, a copy when it sends. `blocking`: the copy returns only when done.
void note_copy_wait(Device dst_device, Device src_device, bool blocking) {
  if (!blocking || dst_device.is_accelerator() == src_device.is_accelerator()) return;
  if (dst_device.is_cpu()) {
    note_host_read(src_device);
  } else {
    note_host_copy(dst_device);
  }
}

}  // namespace

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (capturing()) {
    COURSE_CHECK(dst_device == src_device, "copy between ", src_device.str(), " and ",
                 dst_device.str(), " inside a graph capture: copy before or after the graph");
    check_capture_device(dst_device);
  }
  note_copy_wait(dst_device, src_device, /*blocking=*/true);
  if (dst_device.runs_host_kernels() && src_device.runs_host_kernels()) {
    run_host_work([=] { std::memcpy(dst, src, bytes); });
    return;
  }
  COURSE_CHECK(!dst_device.is_sim() && !src_device.is_sim(), "copy between ", src_device.str(),
               " and ", dst_device.str(), ": a simulated accelerator has no GPU peer");
#if COURSE_WITH_CUDA
  if (capturing()) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                               static_cast<cudaStream_t>(current_cuda_stream())));
    return;
  }
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
#else
  COURSE_FAIL("copy between ", src_device.str(), " and ", dst_device.str(),
              " in a build without CUDA");
#endif
}

void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device,
                      size_t bytes, const Stream& stream, bool host_end_pinned) {
  check_not_capturing("an asynchronous copy on a stream of its own");
  if (bytes == 0) return;
  if (stream.device().is_cpu()) {
    copy_bytes(dst, dst_device, src, src_device, bytes);
    return;
  }
  COURSE_CHECK(stream.device() == (dst_device.is_accelerator() ? dst_device : src_device),
               "a copy from ", src_device.str(), " to ", dst_device.str(),
               " queued on a stream of ", stream.device().str());
  note_copy_wait(dst_device, src_device, /*blocking=*/!host_end_pinned);
  if (stream.device().is_sim()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if COURSE_WITH_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                             static_cast<cudaStream_t>(stream.handle())));
#endif
}

Tensor pinned_copy(const Tensor& t) {
  Tensor copy = Tensor::empty_pinned(t.shape(), t.dtype());
  copy_bytes(copy.data(), Device::cpu(), t.data(), t.device(), t.nbytes());
  return copy;
}

void upload_pinned_async(void* dst, Device dst_device, const void* pinned_src, size_t bytes) {
  check_not_capturing("a copy from the host");
  if (bytes == 0) return;
  if (dst_device.runs_host_kernels()) {
    std::memcpy(dst, pinned_src, bytes);
    return;
  }
#if COURSE_WITH_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice,
                             static_cast<cudaStream_t>(current_cuda_stream())));
#else
  COURSE_FAIL("copy to ", dst_device.str(), " in a build without CUDA");
#endif
}

void check_same(const Tensor& a, const Tensor& b, const char* op) {
  COURSE_CHECK(a.defined() && b.defined(), op, ": undefined tensor");
  COURSE_CHECK(a.shape() == b.shape(), op, ": shapes differ, ", shape_str(a.shape()), " vs ",
               shape_str(b.shape()));
  COURSE_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ, ", dtype_name(a.dtype()), " vs ",
               dtype_name(b.dtype()));
  COURSE_CHECK(a.device() == b.device(), op, ": devices differ, ", a.device().str(), " vs ",
               b.device().str());
  COURSE_CHECK(a.memory_format() == b.memory_format(), op, ": memory formats differ, ",
               memory_format_name(a.memory_format()), " vs ",
               memory_format_name(b.memory_format()));
}

}  // namespace course
