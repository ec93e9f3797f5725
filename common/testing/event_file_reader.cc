// The tests' TensorBoard event reader (see event_file_reader.h).
#include "common/testing/event_file_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/core/crc32c.h"

namespace course::testing {
namespace {

uint64_t read_varint(const std::string& in, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(in.at(at++));
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
}

}  // namespace

ProtoMessage decode_proto(const std::string& in) {
  ProtoMessage message;
  for (size_t at = 0; at < in.size();) {
    const uint64_t key = read_varint(in, at);
    ProtoField field;
    size_t length = 0;
    switch (key & 7) {
      case 0:
        field.number = read_varint(in, at);
        break;
      case 1:
        length = 8;
        break;
      case 2:
        length = read_varint(in, at);
        break;
      case 5:
        length = 4;
        break;
      default:
        ADD_FAILURE() << "unknown protobuf wire type " << (key & 7);
        return message;
    }
    field.bytes = in.substr(at, length);
    at += length;
    message.emplace(static_cast<uint32_t>(key >> 3), field);
  }
  return message;
}

const ProtoField& only_field(const ProtoMessage& message, uint32_t number) {
  static const ProtoField missing;
  EXPECT_EQ(message.count(number), 1u) << "protobuf field " << number;
  const auto found = message.find(number);
  return found == message.end() ? missing : found->second;
}

std::vector<ProtoMessage> read_event_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << path;
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string file = whole.str();
  std::vector<ProtoMessage> events;
  for (size_t at = 0; at + 12 <= file.size();) {
    const std::string header = file.substr(at, 8);
    const auto length = from_bytes<uint64_t>(header);
    EXPECT_EQ(from_bytes<uint32_t>(file.substr(at + 8, 4)), masked_crc32c(header))
        << "record at byte " << at << ": length checksum";
    const std::string event = file.substr(at + 12, length);
    EXPECT_EQ(from_bytes<uint32_t>(file.substr(at + 12 + length, 4)), masked_crc32c(event))
        << "record at byte " << at << ": data checksum";
    events.push_back(decode_proto(event));
    at += 12 + length + 4;
  }
  return events;
}

std::vector<ScalarEvent> read_scalars(const std::string& path) {
  std::vector<ScalarEvent> scalars;
  for (const ProtoMessage& event : read_event_records(path)) {
    const auto summary = event.find(5);
    if (summary == event.end()) continue;
    const ProtoMessage value =
        decode_proto(only_field(decode_proto(summary->second.bytes), 1).bytes);
    if (!value.count(2)) continue;  // not a scalar
    scalars.push_back({only_field(value, 1).bytes,
                       static_cast<int64_t>(event.count(2) ? only_field(event, 2).number : 0),
                       from_bytes<float>(only_field(value, 2).bytes)});
  }
  return scalars;
}

}  // namespace course::testing
