// A measured timeline as a PNG: one row (lane) per rank, each span a box coloured by its kind
// and labelled when the label fits, under a time axis in milliseconds: the schedule diagrams of
// the pipeline papers, drawn from timestamps instead of by hand. OpenCV draws and encodes it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace course::plot {

struct TimelineSpan {
  int lane = 0;
  double start_s = 0, end_s = 0;
  int kind = 0;       // the palette's colour, named by TimelineChart::kinds
  std::string label;  // e.g. "F3"
};

struct TimelineChart {
  std::string title;
  std::vector<std::string> lanes;  // top to bottom
  std::vector<std::string> kinds;  // the legend: a name per colour
  std::vector<TimelineSpan> spans;
};

// Where a chart's pieces are drawn (the tests read pixels through it).
struct TimelineLayout {
  int width = 0, height = 0;
  int left = 0, right = 0;  // the time axis spans x in [left, right)
  int top = 0;              // y of the first lane
  int lane_height = 0;      // boxes leave 4 pixels above and below
  double end_s = 0;         // the time drawn at `right`
  int x(double t) const;
  int lane_top(int lane) const { return top + lane * lane_height; }
};

TimelineLayout timeline_layout(const TimelineChart& chart);

// The colour of a kind, as OpenCV's blue, green, red; the background is white.
std::array<uint8_t, 3> timeline_colour(int kind);

// Throws course::Error when the chart is malformed (a span's lane or kind unknown, an end
// before its start) or the file cannot be written.
void write_timeline_png(const TimelineChart& chart, const std::string& path);

}  // namespace course::plot
