// Each rank's share of an epoch (rank_span): hand-computed spans with DistributedSampler's
// padding and drop_last, the ranks' spans covering the epoch once, and the locality it keeps:
// on 2 ranks each reads half of the tar shards or packed pages, not all of them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "common/data/epoch_order.h"
#include "common/data/packed_images.h"
#include "common/data/tar_shards.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using Order = std::vector<int64_t>;

TEST(RankSpan, ContiguousSpansPaddedFromTheStart) {
  const Order order = {10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(rank_span(order, 0, 3, false), (Order{10, 11, 12}));
  EXPECT_EQ(rank_span(order, 1, 3, false), (Order{13, 14, 15}));
  EXPECT_EQ(rank_span(order, 2, 3, false), (Order{16, 10, 11}));
  EXPECT_EQ(rank_span_size(7, 3, false), 3);
  // Fewer samples than ranks: the order repeats, as DistributedSampler's padding does.
  EXPECT_EQ(rank_span({7, 8}, 3, 5, false), (Order{8}));
  EXPECT_EQ(rank_span({7, 8}, 4, 5, false), (Order{7}));
}

TEST(RankSpan, DropLastCutsTheRemainder) {
  const Order order = {10, 11, 12, 13, 14, 15, 16};
  EXPECT_EQ(rank_span(order, 0, 3, true), (Order{10, 11}));
  EXPECT_EQ(rank_span(order, 1, 3, true), (Order{12, 13}));
  EXPECT_EQ(rank_span(order, 2, 3, true), (Order{14, 15}));
  EXPECT_EQ(rank_span_size(7, 3, true), 2);
}

TEST(RankSpan, SpansCoverTheEpochOnce) {
  Order order(1000);
  std::iota(order.begin(), order.end(), 0);
  Order joined;
  for (int rank = 0; rank < 8; ++rank) {
    const Order span = rank_span(order, rank, 8, false);
    EXPECT_EQ(span.size(), 125u);
    joined.insert(joined.end(), span.begin(), span.end());
  }
  EXPECT_EQ(joined, order);
}

// The shards (or pages) a rank's span reads, from each sample's shard.
std::set<int64_t> containers_read(const Order& span, const Order& container_of) {
  std::set<int64_t> read;
  for (const int64_t sample : span) read.insert(container_of[static_cast<size_t>(sample)]);
  return read;
}

TEST(RankSpan, EachRankReadsItsOwnShardsAndPages) {
  Order shard_of;  // 4 shards of 25 samples
  for (int64_t i = 0; i < 100; ++i) shard_of.push_back(i / 25);
  // A shuffle buffer of one streams each shard whole: every rank reads 2 of the 4 shards.
  const Order streamed = webdataset_order({25, 25, 25, 25}, 1, 7, 0);
  const std::set<int64_t> rank0 = containers_read(rank_span(streamed, 0, 2, false), shard_of);
  const std::set<int64_t> rank1 = containers_read(rank_span(streamed, 1, 2, false), shard_of);
  EXPECT_EQ(rank0.size(), 2u);
  EXPECT_EQ(rank1.size(), 2u);
  for (const int64_t shard : rank0) EXPECT_EQ(rank1.count(shard), 0u) << "shard " << shard;

  Order page_of;  // 8 pages of 10 samples, read 2 at a time
  for (int64_t i = 0; i < 80; ++i) page_of.push_back(i / 10);
  const Order paged = quasi_random_order(page_of, 2, 7, 0);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(containers_read(rank_span(paged, rank, 2, false), page_of).size(), 4u)
        << "rank " << rank;
  }
}

TEST(RankSpan, BadRanksAreClearErrors) {
  EXPECT_THAT(error_of([] {
                rank_span({1, 2}, 2, 2, false);
              }),
              HasSubstr("rank 2 is not one of 2"));
  EXPECT_THAT(error_of([] {
                rank_span({1, 2}, 0, 0, false);
              }),
              HasSubstr("rank 0 is not one of 0"));
  EXPECT_THAT(error_of([] { rank_span({}, 0, 1, false); }), HasSubstr("an empty epoch"));
  EXPECT_THAT(error_of([] { rank_span_size(5, 0, false); }), HasSubstr("at least one rank"));
}

}  // namespace
}  // namespace course
