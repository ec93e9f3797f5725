// Streams and events: ordered queues of GPU work and time stamps in them.
//
// On the CPU and the simulated accelerator, work is synchronous, so a stream there is an empty
// queue and an event a wall clock reading; the chronometers of the labs then time every device
// with the same code. Synchronising an accelerator's stream or event is a host wait
// (host_waits.h).
#pragma once

#include <chrono>

#include "common/tensor/device.h"

namespace course {

class Stream {
 public:
  explicit Stream(Device device);  // a new non-blocking stream on a GPU, or the CPU queue
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  void* handle() const { return handle_; }  // the cudaStream_t (nullptr on the CPU)
  void synchronize() const;

 private:
  Device device_;
  void* handle_ = nullptr;
};

class Event {
 public:
  explicit Event(Device device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  Device device() const { return device_; }
  // On `stream`, or the thread's current one: a StreamScope's (capture.h), else the default.
  void record(const Stream* stream = nullptr);
  void synchronize() const;  // waits until the recorded work is done
  bool query() const;  // whether the recorded work is done (never waits; true if never recorded)
  // Work queued on `stream` (or the thread's current one) from now on starts after the recorded
  // work: the order between a copy stream and the compute stream (nothing to do on the CPU).
  void block(const Stream* stream = nullptr) const;
  // Time from this event to `later`, waiting for either that the device has not reached yet (a
  // host wait: read times when a summary is printed).
  float elapsed_ms(const Event& later) const;

 private:
  Device device_;
  void* handle_ = nullptr;  // the cudaEvent_t (nullptr on the CPU)
  std::chrono::steady_clock::time_point stamp_;
  bool recorded_ = false;
};

}  // namespace course
