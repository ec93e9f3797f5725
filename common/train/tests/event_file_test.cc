// TensorBoard event files: CRC-32C against RFC 3720's check values, then a file read back by a
// reader written here from the format's description (records, their checksums, and a generic
// protobuf decoder), independent of the writer's encoder. The comparison environment also
// opens such files with the tensorboard package's own reader (bench/compare).
#include "common/train/event_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "common/core/crc32c.h"
#include "common/testing/errors_and_files.h"

namespace course::train {
namespace {

using course::testing::error_of;
using course::testing::temp_path;
using ::testing::HasSubstr;

TEST(Crc32c, Rfc3720CheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(masked_crc32c(""), 0xa282ead8u) << "the CRC of nothing is 0; masked, the offset";
}

// One protobuf field as the decoder saw it: a number, or the bytes of a string or message.
struct Field {
  uint64_t number = 0;
  std::string bytes;
};
using Message = std::multimap<uint32_t, Field>;

uint64_t read_varint(const std::string& in, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<uint8_t>(in.at(at++));
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return value;
  }
}

Message decode(const std::string& in) {
  Message message;
  for (size_t at = 0; at < in.size();) {
    const uint64_t key = read_varint(in, at);
    Field field;
    switch (key & 7) {
      case 0:
        field.number = read_varint(in, at);
        break;
      case 1:
        field.bytes = in.substr(at, 8);
        at += 8;
        break;
      case 2: {
        const uint64_t length = read_varint(in, at);
        field.bytes = in.substr(at, length);
        at += length;
        break;
      }
      case 5:
        field.bytes = in.substr(at, 4);
        at += 4;
        break;
      default:
        ADD_FAILURE() << "wire type " << (key & 7);
        return message;
    }
    message.emplace(static_cast<uint32_t>(key >> 3), field);
  }
  return message;
}

template <class T>
T from_bytes(const std::string& bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

// Every record's event, its checksums verified.
std::vector<Message> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string file = whole.str();
  std::vector<Message> events;
  for (size_t at = 0; at < file.size();) {
    const std::string header = file.substr(at, 8);
    const auto length = from_bytes<uint64_t>(header);
    EXPECT_EQ(from_bytes<uint32_t>(file.substr(at + 8, 4)), masked_crc32c(header));
    const std::string event = file.substr(at + 12, length);
    EXPECT_EQ(from_bytes<uint32_t>(file.substr(at + 12 + length, 4)), masked_crc32c(event));
    events.push_back(decode(event));
    at += 12 + length + 4;
  }
  return events;
}

const Field& only(const Message& message, uint32_t number) {
  EXPECT_EQ(message.count(number), 1u) << "field " << number;
  return message.find(number)->second;
}

TEST(EventFile, ReadsBackVersionScalarsAndText) {
  const std::string logdir = temp_path("events/run1");
  std::string path;
  {
    EventFileWriter writer(logdir);
    path = writer.path();
    writer.add_scalar("train/loss", 2.5f, 10);
    writer.add_scalar("test/accuracy", 0.875f, 469);
    writer.add_text("recipe", "--lr 0.1 --batch-size 128", 0);
  }
  EXPECT_THAT(std::filesystem::path(path).filename().string(),
              ::testing::StartsWith("events.out.tfevents."));
  const std::vector<Message> events = read_events(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(only(events[0], 3).bytes, "brain.Event:2");
  EXPECT_GT(from_bytes<double>(only(events[0], 1).bytes), 1.7e9) << "wall time in seconds";

  const auto scalar = [&](const Message& event) {
    const Message value = decode(only(decode(only(event, 5).bytes), 1).bytes);
    return std::make_pair(only(value, 1).bytes, from_bytes<float>(only(value, 2).bytes));
  };
  EXPECT_EQ(only(events[1], 2).number, 10u);
  EXPECT_EQ(scalar(events[1]), std::make_pair(std::string("train/loss"), 2.5f));
  EXPECT_EQ(only(events[2], 2).number, 469u);
  EXPECT_EQ(scalar(events[2]), std::make_pair(std::string("test/accuracy"), 0.875f));

  const Message text = decode(only(decode(only(events[3], 5).bytes), 1).bytes);
  EXPECT_EQ(only(text, 1).bytes, "recipe");
  const Message tensor = decode(only(text, 8).bytes);
  EXPECT_EQ(only(tensor, 1).number, 7u) << "DT_STRING";
  EXPECT_EQ(only(tensor, 2).bytes, "") << "a scalar's shape has no dimensions";
  EXPECT_EQ(only(tensor, 8).bytes, "--lr 0.1 --batch-size 128");
  const Message plugin = decode(only(decode(only(text, 9).bytes), 1).bytes);
  EXPECT_EQ(only(plugin, 1).bytes, "text");
}

TEST(EventFile, AFolderThatCannotBeCreatedIsOneClearError) {
  const std::string file = temp_path("plain_file");
  std::ofstream(file) << "x";
  EXPECT_THAT(error_of([&] { EventFileWriter writer(file + "/logs"); }),
              HasSubstr(": cannot create the folder"));
}

}  // namespace
}  // namespace course::train
