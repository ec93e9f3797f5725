// TensorBoard event files (see event_file.h). Field numbers follow tensorboard's event.proto,
// summary.proto, tensor.proto and types.proto:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; TensorProto tensor = 8;
//             SummaryMetadata metadata = 9; }
//   SummaryMetadata { PluginData plugin_data = 1; }   PluginData { string plugin_name = 1; }
//   TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2; repeated bytes
//                 string_val = 8; }   (DT_STRING = 7; an empty shape is a scalar)
#include "common/train/event_file.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/core/crc32c.h"
#include "common/core/error.h"

namespace course::train {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_key(std::string& out, uint32_t field, WireType type) {
  put_varint(out, field << 3 | type);
}

template <class T>
void put_little_endian(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86 and ARM Linux are little-endian
  out.append(bytes, sizeof(T));
}

std::string bytes_field(uint32_t field, const std::string& bytes) {
  std::string out;
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  return out + bytes;
}

std::string varint_field(uint32_t field, uint64_t value) {
  std::string out;
  put_key(out, field, kVarint);
  put_varint(out, value);
  return out;
}

std::string float_field(uint32_t field, float value) {
  std::string out;
  put_key(out, field, kFixed32);
  put_little_endian(out, value);
  return out;
}

std::string double_field(uint32_t field, double value) {
  std::string out;
  put_key(out, field, kFixed64);
  put_little_endian(out, value);
  return out;
}

// Summary { value: [Value] }
std::string summary_field(const std::string& value_fields) {
  return bytes_field(5, bytes_field(1, value_fields));
}

double seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& logdir) {
  std::error_code error;
  std::filesystem::create_directories(logdir, error);
  COURSE_CHECK(!error && std::filesystem::is_directory(logdir), "--logdir ", logdir,
               ": cannot create the folder (", error.message(), ")");
  path_ = logdir + "/events.out.tfevents." +
          std::to_string(static_cast<int64_t>(seconds_since_epoch())) + "." + host_name() + "." +
          std::to_string(getpid());
  out_.open(path_, std::ios::binary);
  COURSE_CHECK(out_.is_open(), "--logdir ", logdir, ": cannot write ", path_);
  write_event(0, bytes_field(3, "brain.Event:2"));
  flush();
}

void EventFileWriter::add_scalar(const std::string& tag, float value, int64_t step) {
  write_event(step, summary_field(bytes_field(1, tag) + float_field(2, value)));
}

void EventFileWriter::add_text(const std::string& tag, const std::string& markdown, int64_t step) {
  const std::string tensor = varint_field(1, 7) + bytes_field(2, "") + bytes_field(8, markdown);
  const std::string metadata = bytes_field(1, bytes_field(1, "text"));
  write_event(
      step, summary_field(bytes_field(1, tag) + bytes_field(8, tensor) + bytes_field(9, metadata)));
}

void EventFileWriter::flush() {
  out_.flush();
  COURSE_CHECK(out_.good(), "cannot write ", path_);
}

void EventFileWriter::write_event(int64_t step, const std::string& fields) {
  const std::string event = double_field(1, seconds_since_epoch()) +
                            varint_field(2, static_cast<uint64_t>(step)) + fields;
  std::string header;
  put_little_endian(header, static_cast<uint64_t>(event.size()));
  std::string record = header;
  put_little_endian(record, masked_crc32c(header));
  record += event;
  put_little_endian(record, masked_crc32c(event));
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
}

}  // namespace course::train
