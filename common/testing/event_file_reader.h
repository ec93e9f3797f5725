// A reader of TensorBoard event files for tests, written from the format's description and
// independent of the writer (common/train/event_file.h): TFRecords whose checksums it verifies
// (a mismatch fails the test), and a generic protobuf decoder.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace course::testing {

// One protobuf field: a varint's number, or the bytes of a fixed-size value, string or message.
struct ProtoField {
  uint64_t number = 0;
  std::string bytes;
};
using ProtoMessage = std::multimap<uint32_t, ProtoField>;

ProtoMessage decode_proto(const std::string& bytes);

// The field `number` of `message`, which must occur exactly once (else the test fails).
const ProtoField& only_field(const ProtoMessage& message, uint32_t number);

// A fixed-size little-endian value (float, double, uint32, uint64) from a field's bytes.
template <class T>
T from_bytes(const std::string& bytes) {
  T value{};
  std::memcpy(&value, bytes.data(), std::min(sizeof(T), bytes.size()));
  return value;
}

// Every record's Event message, in file order.
std::vector<ProtoMessage> read_event_records(const std::string& path);

struct ScalarEvent {
  std::string tag;
  int64_t step = 0;
  float value = 0;
};

// Every scalar summary of the file, in order.
std::vector<ScalarEvent> read_scalars(const std::string& path);

}  // namespace course::testing
