// TensorBoard event files: CRC-32C against RFC 3720's check values, then a file read back by
// the tests' reader (common/testing/event_file_reader.h: records, their checksums, a generic
// protobuf decoder), independent of the writer's encoder. The comparison environment also
// opens such files with the tensorboard package's own reader (bench/compare).
#include "common/train/event_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/core/crc32c.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/event_file_reader.h"

namespace course::train {
namespace {

using course::testing::decode_proto;
using course::testing::error_of;
using course::testing::from_bytes;
using course::testing::only_field;
using course::testing::ProtoMessage;
using course::testing::read_event_records;
using course::testing::temp_path;
using ::testing::HasSubstr;

TEST(Crc32c, Rfc3720CheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(masked_crc32c(""), 0xa282ead8u) << "the CRC of nothing is 0; masked, the offset";
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
  const std::vector<ProtoMessage> events = read_event_records(path);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(only_field(events[0], 3).bytes, "brain.Event:2");
  EXPECT_GT(from_bytes<double>(only_field(events[0], 1).bytes), 1.7e9) << "wall time in seconds";

  const auto scalar = [&](const ProtoMessage& event) {
    const ProtoMessage value =
        decode_proto(only_field(decode_proto(only_field(event, 5).bytes), 1).bytes);
    return std::make_pair(only_field(value, 1).bytes,
                          from_bytes<float>(only_field(value, 2).bytes));
  };
  EXPECT_EQ(only_field(events[1], 2).number, 10u);
  EXPECT_EQ(scalar(events[1]), std::make_pair(std::string("train/loss"), 2.5f));
  EXPECT_EQ(only_field(events[2], 2).number, 469u);
  EXPECT_EQ(scalar(events[2]), std::make_pair(std::string("test/accuracy"), 0.875f));

  const ProtoMessage text =
      decode_proto(only_field(decode_proto(only_field(events[3], 5).bytes), 1).bytes);
  EXPECT_EQ(only_field(text, 1).bytes, "recipe");
  const ProtoMessage tensor = decode_proto(only_field(text, 8).bytes);
  EXPECT_EQ(only_field(tensor, 1).number, 7u) << "DT_STRING";
  EXPECT_EQ(only_field(tensor, 2).bytes, "") << "a scalar's shape has no dimensions";
  EXPECT_EQ(only_field(tensor, 8).bytes, "--lr 0.1 --batch-size 128");
  const ProtoMessage plugin =
      decode_proto(only_field(decode_proto(only_field(text, 9).bytes), 1).bytes);
  EXPECT_EQ(only_field(plugin, 1).bytes, "text");
}

TEST(EventFile, AFolderThatCannotBeCreatedIsOneClearError) {
  const std::string file = temp_path("plain_file");
  std::ofstream(file) << "x";
  EXPECT_THAT(error_of([&] { EventFileWriter writer(file + "/logs"); }),
              HasSubstr(": cannot create the folder"));
}

}  // namespace
}  // namespace course::train
