// TensorBoard event files, so `tensorboard --logdir` shows a run's curves. A file is a sequence
// of TFRecords (a little-endian uint64 length, its masked CRC-32C, the bytes, their masked
// CRC-32C), each holding one Event protocol buffer: first the version event, then summaries
// of scalars (the curves) and of text (a run's recipe, in the Text tab). The few protobuf
// fields needed are written by hand, so no protobuf library is linked.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace course::train {

class EventFileWriter {
 public:
  // Creates `logdir` if needed and the file events.out.tfevents.<seconds>.<host>.<pid> in it,
  // then writes the version event. Throws course::Error when the folder cannot be written.
  explicit EventFileWriter(const std::string& logdir);

  void add_scalar(const std::string& tag, float value, int64_t step);
  // Markdown shown by TensorBoard's text plugin.
  void add_text(const std::string& tag, const std::string& markdown, int64_t step);
  // Makes what was written so far visible to a reader.
  void flush();

  const std::string& path() const { return path_; }

 private:
  void write_event(int64_t step, const std::string& fields);

  std::string path_;
  std::ofstream out_;
};

}  // namespace course::train
