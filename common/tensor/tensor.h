// Tensor: a typed, shaped view of device memory.
//
// A tensor is a shape, dense strides for its memory format, a dtype, a device and a shared
// storage block from the device's caching allocator. Copies of a Tensor share the storage (as
// in PyTorch); clone() and to() make new storage. Kernels live in common/kernels; this layer
// only knows memory, so conversions that compute (casts, layouts) are kernel functions there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/core/error.h"
#include "common/tensor/allocator.h"
#include "common/tensor/capture.h"
#include "common/tensor/device.h"
#include "common/tensor/dtype.h"
#include "common/tensor/host_waits.h"
#include "common/tensor/shape.h"
#include "common/tensor/stream.h"

namespace course {

// One allocation; frees itself into its allocator's cache.
class Storage {
 public:
  Storage(size_t bytes, CachingAllocator& allocator);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  const CachingAllocator& allocator() const { return *allocator_; }

 private:
  void* data_;
  CachingAllocator* allocator_;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() is false)

  // Uninitialised memory of `shape` on `device`.
  static Tensor empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
                      MemoryFormat format = MemoryFormat::kContiguous);
  // Host memory that GPUs can copy from asynchronously (see pinned_host_allocator()).
  static Tensor empty_pinned(const Shape& shape, DType dtype = DType::kF32);
  // A contiguous tensor holding `values` (their count must match the shape).
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  MemoryFormat memory_format() const { return format_; }
  bool is_pinned() const;

  void* data() const;
  template <class T>
  T* data_as() const {
    COURSE_CHECK(DTypeOf<T>::value == dtype_, "tensor holds ", dtype_name(dtype_), ", not ",
                 dtype_name(DTypeOf<T>::value));
    return static_cast<T*>(data());
  }
  // data_as<T>(), or null for an undefined tensor (an optional input such as a bias).
  template <class T>
  T* data_or_null() const {
    return defined() ? data_as<T>() : nullptr;
  }

  // The same storage seen with another shape of equal element count (contiguous tensors only).
  Tensor view(const Shape& shape) const;
  // The same storage read as `shape` in `format` (every tensor is dense in its own format): e.g.
  // a GEMM's (N H W, C) output as the channels-last (N, C, H, W) it is.
  Tensor view(const Shape& shape, MemoryFormat format) const;
  // Rows [begin, end) of the first dimension, sharing storage: dense in the tensor's format (the
  // batch is the outermost dimension of channels-last too).
  Tensor slice(int64_t begin, int64_t end) const;
  // A copy on `device` (same dtype and memory format).
  Tensor to(Device device) const;
  // The same copy queued on `stream` (of the accelerator end of the copy): asynchronous to the
  // host when it copies between pinned host memory and an accelerator; the caller orders its
  // use of the result after the stream (an Event). Between CPU tensors it is an ordinary copy.
  Tensor to(Device device, const Stream& stream) const;
  Tensor clone() const { return to(device_); }
  // A host copy of the elements in logical (row-major) order; contiguous tensors only.
  template <class T>
  std::vector<T> to_vector() const;

  std::string str() const;  // "Tensor(f32, (2, 3), cpu, contiguous)"

 private:
  static Tensor allocate(const Shape& shape, DType dtype, Device device, MemoryFormat format,
                         CachingAllocator& allocator);

  std::shared_ptr<Storage> storage_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
  Device device_;
  MemoryFormat format_ = MemoryFormat::kContiguous;
};

// Copies `bytes` between host and device memory in either direction (synchronously: a copy
// between the host and an accelerator is a host wait, a copy within or between accelerators
// is not).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
// The same, queued on `stream` (see Tensor::to(Device, const Stream&)): a host wait only when
// its host end is pageable (not from Tensor::empty_pinned).
void copy_bytes_async(void* dst, Device dst_device, const void* src, Device src_device,
                      size_t bytes, const Stream& stream, bool host_end_pinned);

// A copy of `t`'s bytes (from any device) in pinned host memory, same shape and dtype: what a
// copy to a device can read without the host waiting, or what MPI can read of device memory.
Tensor pinned_copy(const Tensor& t);

// Copies `bytes` from pinned host memory (Tensor::empty_pinned) to a device, queued on the
// thread's compute stream without a host wait: the caller leaves the source unchanged until the
// copy is done (an Event recorded after it; pinned_staging.h does this).
void upload_pinned_async(void* dst, Device dst_device, const void* pinned_src, size_t bytes);

// Checks that tensors agree, for kernels: same shape, dtype, device and memory format.
void check_same(const Tensor& a, const Tensor& b, const char* op);

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  check_not_capturing("a tensor made from host values");
  Tensor t = empty(shape, DTypeOf<T>::value, device);
  COURSE_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "from_vector: ", values.size(),
               " values for shape ", shape_str(shape));
  copy_bytes(t.data(), device, values.data(), Device::cpu(), t.nbytes());
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  COURSE_CHECK(format_ == MemoryFormat::kContiguous, "to_vector of a ", memory_format_name(format_),
               " tensor: convert it to contiguous first");
  check_not_capturing("reading a tensor's values on the host");
  std::vector<T> values(numel_);  // copy_bytes counts the host's wait for an accelerator
  copy_bytes(values.data(), Device::cpu(), data_as<T>(), device_, nbytes());
  return values;
}

}  // namespace course
