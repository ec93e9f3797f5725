// The timeline PNG read back with OpenCV: each span's box has its kind's colour where the layout
// says it is drawn, the time between spans stays background, and malformed charts or unwritable
// paths are clear errors.
#include "common/plot/timeline_chart.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "common/core/error.h"
#include "common/testing/errors_and_files.h"

namespace course::plot {
namespace {

TimelineChart two_stages() {
  // Stage 0 forwards at [0, 1) ms, stage 1 at [1, 2) and backs it at [2, 4), stage 0 backs it
  // at [4, 6): the naive schedule of one micro-batch.
  return {.title = "naive, 2 stages, 1 micro-batch",
          .lanes = {"stage 0", "stage 1"},
          .kinds = {"forward", "backward"},
          .spans = {{0, 0.000, 0.001, 0, "F0"},
                    {1, 0.001, 0.002, 0, "F0"},
                    {1, 0.002, 0.004, 1, "B0"},
                    {0, 0.004, 0.006, 1, "B0"}}};
}

std::array<uint8_t, 3> pixel(const cv::Mat& image, int x, int y) {
  const cv::Vec3b p = image.at<cv::Vec3b>(y, x);
  return {p[0], p[1], p[2]};
}

TEST(TimelineChart, BoxesAreDrawnWhereTheirTimesAre) {
  const TimelineChart chart = two_stages();
  const std::string path = testing::temp_path("timeline.png");
  write_timeline_png(chart, path);
  const cv::Mat image = cv::imread(path, cv::IMREAD_COLOR);
  const TimelineLayout layout = timeline_layout(chart);
  ASSERT_EQ(image.cols, layout.width);
  ASSERT_EQ(image.rows, layout.height);
  EXPECT_DOUBLE_EQ(layout.end_s, 0.006);
  const std::array<uint8_t, 3> white = {255, 255, 255};
  for (const TimelineSpan& s : chart.spans) {
    // A quarter into the box, a quarter down the lane: clear of the centred label.
    const int x = (3 * layout.x(s.start_s) + layout.x(s.end_s)) / 4;
    const int y = layout.lane_top(s.lane) + layout.lane_height / 4;
    EXPECT_EQ(pixel(image, x, y), timeline_colour(s.kind)) << s.label << " of lane " << s.lane;
  }
  // Stage 0 idles while stage 1 works ([1, 4) ms), and stage 1 before and after.
  for (double t : {0.0015, 0.0025, 0.0035}) {
    EXPECT_EQ(pixel(image, layout.x(t), layout.lane_top(0) + layout.lane_height / 4), white);
  }
  EXPECT_EQ(pixel(image, layout.x(0.0005), layout.lane_top(1) + layout.lane_height / 4), white);
  EXPECT_EQ(pixel(image, layout.x(0.005), layout.lane_top(1) + layout.lane_height / 4), white);
  EXPECT_NE(timeline_colour(0), timeline_colour(1));
}

TEST(TimelineChart, MalformedChartsAndPathsAreClearErrors) {
  TimelineChart chart = two_stages();
  chart.spans.push_back({2, 0, 0.001, 0, "F1"});  // a third lane
  EXPECT_NE(testing::error_of([&] {
              write_timeline_png(chart, testing::temp_path("a.png"));
            }).find("does not fit a chart of 2 lanes and 2 kinds"),
            std::string::npos);
  chart = two_stages();
  chart.spans[0].end_s = -1;
  EXPECT_THROW(write_timeline_png(chart, testing::temp_path("b.png")), Error);
  EXPECT_NE(testing::error_of([] {
              write_timeline_png(two_stages(), testing::temp_path("missing/timeline.png"));
            }).find("cannot write the timeline"),
            std::string::npos);
  EXPECT_THROW(write_timeline_png(two_stages(), testing::temp_path("timeline.nope")), Error);
}

}  // namespace
}  // namespace course::plot
