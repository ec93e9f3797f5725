// Drawing a timeline chart with OpenCV.
#include "common/plot/timeline_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/core/error.h"

namespace course::plot {

namespace {

constexpr int kWidth = 1200, kLeft = 150, kRightMargin = 30, kTop = 60, kLaneHeight = 40;
constexpr int kBottom = 70;  // the axis and the legend
constexpr int kBoxMargin = 4;
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
const cv::Scalar kBlack(0, 0, 0), kWhite(255, 255, 255), kGrey(160, 160, 160);

cv::Scalar scalar(const std::array<uint8_t, 3>& c) { return cv::Scalar(c[0], c[1], c[2]); }

// A round step for about 8 ticks: 1, 2 or 5 times a power of ten milliseconds.
double tick_ms(double end_ms) {
  const double raw = std::max(end_ms / 8, 1e-3);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

void put_text(cv::Mat& image, const std::string& text, cv::Point at, double scale,
              const cv::Scalar& colour) {
  cv::putText(image, text, at, kFont, scale, colour, 1, cv::LINE_AA);
}

}  // namespace

int TimelineLayout::x(double t) const {
  return left + static_cast<int>(std::lround((right - left) * (end_s > 0 ? t / end_s : 0)));
}

TimelineLayout timeline_layout(const TimelineChart& chart) {
  TimelineLayout l;
  l.width = kWidth;
  l.left = kLeft;
  l.right = kWidth - kRightMargin;
  l.top = kTop;
  l.lane_height = kLaneHeight;
  l.height = kTop + kLaneHeight * static_cast<int>(chart.lanes.size()) + kBottom;
  for (const TimelineSpan& s : chart.spans) l.end_s = std::max(l.end_s, s.end_s);
  return l;
}

std::array<uint8_t, 3> timeline_colour(int kind) {
  // Blue forwards, orange backwards, then green, purple, brown (matplotlib's first colours).
  static const std::array<std::array<uint8_t, 3>, 5> palette = {
      {{180, 119, 31}, {14, 127, 255}, {44, 160, 44}, {189, 103, 148}, {75, 86, 140}}};
  return palette[static_cast<size_t>(kind) % palette.size()];
}

namespace {

void check_spans_fit(const TimelineChart& chart) {
  const int lanes = static_cast<int>(chart.lanes.size());
  for (const TimelineSpan& s : chart.spans) {
    COURSE_CHECK(s.lane >= 0 && s.lane < lanes && s.kind >= 0 &&
                     s.kind < static_cast<int>(chart.kinds.size()) && s.start_s >= 0 &&
                     s.end_s >= s.start_s,
                 "timeline span '", s.label, "' of lane ", s.lane, " and kind ", s.kind, " at [",
                 s.start_s, ", ", s.end_s, ") s does not fit a chart of ", lanes, " lanes and ",
                 chart.kinds.size(), " kinds");
  }
}

// Lanes: a name on the left, a grey rule under each.
void draw_lanes(cv::Mat& image, const TimelineChart& chart, const TimelineLayout& l) {
  for (int lane = 0; lane < static_cast<int>(chart.lanes.size()); ++lane) {
    const int y = l.lane_top(lane);
    put_text(image, chart.lanes[lane], {10, y + l.lane_height / 2 + 5}, 0.5, kBlack);
    cv::line(image, {l.left, y + l.lane_height}, {l.right, y + l.lane_height}, kGrey, 1);
  }
}

// Spans: a filled box, its label in white when it fits.
void draw_spans(cv::Mat& image, const TimelineChart& chart, const TimelineLayout& l) {
  for (const TimelineSpan& s : chart.spans) {
    const int y = l.lane_top(s.lane);
    const cv::Point from(l.x(s.start_s), y + kBoxMargin);
    const cv::Point to(std::max(l.x(s.end_s) - 1, from.x), y + l.lane_height - kBoxMargin);
    cv::rectangle(image, from, to, scalar(timeline_colour(s.kind)), cv::FILLED);
    int baseline = 0;
    const cv::Size text = cv::getTextSize(s.label, kFont, 0.4, 1, &baseline);
    if (text.width + 4 <= to.x - from.x) {
      put_text(image, s.label, {(from.x + to.x - text.width) / 2, y + l.lane_height / 2 + 4}, 0.4,
               kWhite);
    }
  }
}

// The time axis in milliseconds under the lanes, then the legend.
void draw_axis_and_legend(cv::Mat& image, const TimelineChart& chart, const TimelineLayout& l) {
  const int axis_y = l.lane_top(static_cast<int>(chart.lanes.size())) + 4;
  cv::line(image, {l.left, axis_y}, {l.right, axis_y}, kBlack, 1);
  const double end_ms = l.end_s * 1e3, step = tick_ms(end_ms);
  for (double t = 0; t <= end_ms + 1e-9; t += step) {
    const int x = l.x(t / 1e3);
    cv::line(image, {x, axis_y}, {x, axis_y + 5}, kBlack, 1);
    char label[32];
    std::snprintf(label, sizeof label, "%g", t);
    put_text(image, label, {x - 8, axis_y + 20}, 0.4, kBlack);
  }
  put_text(image, "ms", {l.right - 10, axis_y + 38}, 0.4, kBlack);
  int legend_x = l.left;
  for (size_t k = 0; k < chart.kinds.size(); ++k) {
    cv::rectangle(image, {legend_x, axis_y + 30}, {legend_x + 14, axis_y + 44},
                  scalar(timeline_colour(static_cast<int>(k))), cv::FILLED);
    put_text(image, chart.kinds[k], {legend_x + 20, axis_y + 42}, 0.45, kBlack);
    legend_x += 140;
  }
}

}  // namespace

void write_timeline_png(const TimelineChart& chart, const std::string& path) {
  check_spans_fit(chart);
  const TimelineLayout l = timeline_layout(chart);
  cv::Mat image(l.height, l.width, CV_8UC3, kWhite);
  put_text(image, chart.title, {10, 30}, 0.6, kBlack);
  draw_lanes(image, chart, l);
  draw_spans(image, chart, l);
  draw_axis_and_legend(image, chart, l);
  bool written = false;
  try {
    written = cv::imwrite(path, image);
  } catch (const cv::Exception& e) {
    COURSE_FAIL("cannot write the timeline ", path, ": ", e.what());
  }
  COURSE_CHECK(written, "cannot write the timeline ", path,
               " (does its folder exist, and does it end in .png?)");
}

}  // namespace course::plot
