// CutMix's cut (TP3.1) in `bazel test //day3_data:check`: the cut's area against its lambda
// (exactly), its sides against sqrt(1 - lambda), boxes cut by every border, the ends lambda = 0
// and 1, and where boxes fall: the boxes of every centre of a 5 x 7 image worked out by hand,
// then, on larger images, exactly the boxes of the image's centres, each about equally often
// (a centre drawn one past the image, a box hung from its corner, one draw for both axes or a
// centre biased to the middle all fail).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "day3_data/exercises.h"

namespace day3 {
namespace {

using course::CutMixCut;

int64_t area(const CutMixCut& c) {
  return static_cast<int64_t>(c.box[1] - c.box[0]) * (c.box[3] - c.box[2]);
}

TEST(TP3_1, LambdaIsRecomputedFromTheClippedBox) {
  std::mt19937 rng(1);
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{32, 32}, {13, 17}}) {
    for (const float lambda : {0.1f, 0.3f, 0.5f, 0.8f}) {
      for (int draw = 0; draw < 200; ++draw) {
        const CutMixCut c = cutmix_cut(lambda, h, w, rng);
        ASSERT_TRUE(c.box[0] >= 0 && c.box[0] <= c.box[1] && c.box[1] <= h && c.box[2] >= 0 &&
                    c.box[2] <= c.box[3] && c.box[3] <= w)
            << "the box [" << c.box[0] << ", " << c.box[1] << ") x [" << c.box[2] << ", "
            << c.box[3] << ") must lie inside the " << h << " x " << w << " image";
        ASSERT_NEAR(c.lambda, 1.0 - static_cast<double>(area(c)) / (h * w), 1e-6)
            << "lambda must be 1 - (box area) / (image area) of the clipped box, for a drawn "
               "lambda of "
            << lambda;
      }
    }
  }
}

TEST(TP3_1, SidesFollowTheSquareRootAndEveryBorderIsReached) {
  std::mt19937 rng(2);
  const int64_t h = 32, w = 24;
  const float lambda = 0.3f;  // sides sqrt(0.7) of the image's: 26 x 20
  const int64_t full_h = static_cast<int64_t>(h * std::sqrt(0.7)),
                full_w = static_cast<int64_t>(w * std::sqrt(0.7));
  bool top = false, bottom = false, left = false, right = false;
  bool rows_clipped = false, columns_clipped = false;
  for (int draw = 0; draw < 500; ++draw) {
    const CutMixCut c = cutmix_cut(lambda, h, w, rng);
    ASSERT_LE(c.box[1] - c.box[0], full_h) << "rows: a box's side is sqrt(1 - lambda) H";
    ASSERT_LE(c.box[3] - c.box[2], full_w) << "columns: a box's side is sqrt(1 - lambda) W";
    if (c.box[0] > 0 && c.box[1] < h) {
      ASSERT_EQ(c.box[1] - c.box[0], full_h) << "a box clear of the top and bottom has "
                                                "sqrt(1 - lambda) H rows";
    }
    if (c.box[2] > 0 && c.box[3] < w) {
      ASSERT_EQ(c.box[3] - c.box[2], full_w) << "a box clear of the sides has sqrt(1 - lambda) W "
                                                "columns";
    }
    top |= c.box[0] == 0;
    bottom |= c.box[1] == h;
    left |= c.box[2] == 0;
    right |= c.box[3] == w;
    rows_clipped |= c.box[1] - c.box[0] < full_h;
    columns_clipped |= c.box[3] - c.box[2] < full_w;
  }
  EXPECT_TRUE(top && bottom && left && right)
      << "boxes must reach every border, the last row and column included";
  EXPECT_TRUE(rows_clipped && columns_clipped)
      << "the centre is any pixel, so some boxes stick out at the top or bottom, some at the "
         "sides, and are clipped";
}

TEST(TP3_1, EndsOfLambda) {
  std::mt19937 rng(3);
  const CutMixCut none = cutmix_cut(1.0f, 8, 8, rng);
  EXPECT_EQ(area(none), 0) << "lambda 1 cuts nothing";
  EXPECT_FLOAT_EQ(none.lambda, 1.0f);
  bool whole = false;
  for (int draw = 0; draw < 200 && !whole; ++draw) whole = area(cutmix_cut(0.0f, 8, 8, rng)) == 64;
  EXPECT_TRUE(whole) << "lambda 0 centred in the middle pastes the whole partner";
}

// A cut's rows [box[0], box[1]) or columns [box[2], box[3]).
using Span = std::pair<int32_t, int32_t>;

// How often each span of rows and of columns, and each pair of them, came out of `draws` cuts.
struct Spans {
  std::map<Span, int> rows, columns;
  std::set<std::pair<Span, Span>> boxes;
};

Spans draw_spans(float lambda, int64_t height, int64_t width, int draws, uint32_t seed) {
  std::mt19937 rng(seed);
  Spans spans;
  for (int draw = 0; draw < draws; ++draw) {
    const CutMixCut c = cutmix_cut(lambda, height, width, rng);
    ++spans.rows[{c.box[0], c.box[1]}];
    ++spans.columns[{c.box[2], c.box[3]}];
    spans.boxes.insert({{c.box[0], c.box[1]}, {c.box[2], c.box[3]}});
  }
  return spans;
}

std::set<Span> keys_of(const std::map<Span, int>& counts) {
  std::set<Span> keys;
  for (const auto& [span, count] : counts) keys.insert(span);
  return keys;
}

std::string to_string(const std::set<Span>& spans) {
  std::string text;
  for (const auto& [first, end] : spans) {
    text += "[" + std::to_string(first) + "," + std::to_string(end) + ") ";
  }
  return text;
}

// The spans of a side-`side` cut centred on each of the `size` pixels of a row or column, the
// cut starting `before` pixels ahead of its centre, clipped to the image.
std::set<Span> spans_of_every_centre(int64_t size, int64_t side, int64_t before) {
  std::set<Span> spans;
  for (int64_t centre = 0; centre < size; ++centre) {
    const int64_t first = std::max<int64_t>(centre - before, 0);
    const int64_t end = std::min(centre - before + side, size);
    spans.insert({static_cast<int32_t>(first), static_cast<int32_t>(end)});
  }
  return spans;
}

// Empty when the counts are about equal, each within 30% of draws / size (at least 7 standard
// deviations of a binomial count at the sizes used here); else the first that is not.
std::string uneven_count(const std::map<Span, int>& counts, int draws, int64_t size) {
  const double expected = static_cast<double>(draws) / static_cast<double>(size);
  for (const auto& [span, count] : counts) {
    if (std::abs(count - expected) > 0.3 * expected) {
      return "[" + std::to_string(span.first) + ", " + std::to_string(span.second) + ") came " +
             std::to_string(count) + " times in " + std::to_string(draws) + " draws, not about " +
             std::to_string(static_cast<int>(expected)) + ": the centre is drawn uniformly";
    }
  }
  return "";
}

TEST(TP3_1, EveryCentreOfAnOddImageByHand) {
  // A 5 x 7 image at lambda 0.5: sides floor(5 sqrt(.5)) = 3 rows and floor(7 sqrt(.5)) = 4
  // columns. Rows, centred on rows 0-4: [0,2) [0,3) [1,4) [2,5) [3,5).
  const std::set<Span> rows = {{0, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 5}};
  // Four columns have two middles: the cut starts 2 (or 1) columns ahead of its centre 0-6.
  const std::set<Span> columns_two_ahead = {{0, 2}, {0, 3}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {4, 7}};
  const std::set<Span> columns_one_ahead = {{0, 3}, {0, 4}, {1, 5}, {2, 6}, {3, 7}, {4, 7}, {5, 7}};
  const int draws = 4000;
  const Spans spans = draw_spans(0.5f, 5, 7, draws, 31);
  EXPECT_EQ(keys_of(spans.rows), rows)
      << "the rows of the cuts of all five centres, no more (got " << to_string(keys_of(spans.rows))
      << "; expected " << to_string(rows) << ")";
  const std::set<Span> columns = keys_of(spans.columns);
  EXPECT_TRUE(columns == columns_two_ahead || columns == columns_one_ahead)
      << "the columns of the cuts of all seven centres, no more (got " << to_string(columns)
      << "; expected " << to_string(columns_two_ahead) << "or " << to_string(columns_one_ahead)
      << ")";
  EXPECT_EQ(uneven_count(spans.rows, draws, 5), "") << "rows";
  EXPECT_EQ(uneven_count(spans.columns, draws, 7), "") << "columns";
  EXPECT_EQ(spans.boxes.size(), 35u)
      << "the centre's row and column are drawn independently: all 5 x 7 centres occur";
}

TEST(TP3_1, BoxesFallOnEveryCentreOfTheImageAndNowhereElse) {
  for (const auto& [h, w] : {std::pair<int64_t, int64_t>{13, 17}, {32, 24}, {28, 9}}) {
    for (const float lambda : {0.2f, 0.6f, 0.97f}) {
      const int64_t side_h = static_cast<int64_t>(h * std::sqrt(1.0 - lambda));
      const int64_t side_w = static_cast<int64_t>(w * std::sqrt(1.0 - lambda));
      const int draws = 300 * static_cast<int>(std::max(h, w));
      const Spans spans = draw_spans(lambda, h, w, draws, static_cast<uint32_t>(h * w));
      for (const auto& [size, side, drawn, what] :
           {std::tuple{h, side_h, &spans.rows, "rows"}, {w, side_w, &spans.columns, "columns"}}) {
        const std::set<Span> got = keys_of(*drawn);
        const std::set<Span> ahead = spans_of_every_centre(size, side, side / 2);
        const std::set<Span> behind = spans_of_every_centre(size, side, (side - 1) / 2);
        ASSERT_TRUE(got == ahead || got == behind)
            << what << " of a " << h << " x " << w << " image at lambda " << lambda
            << ": the cuts centred on each of the " << size << " " << what
            << ", clipped, and no other (got " << to_string(got) << "; expected "
            << to_string(ahead) << ")";
        ASSERT_EQ(uneven_count(*drawn, draws, size), "")
            << what << " of a " << h << " x " << w << " image at lambda " << lambda;
      }
    }
  }
}

}  // namespace
}  // namespace day3
