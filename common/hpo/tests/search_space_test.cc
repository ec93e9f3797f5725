// The search space's text form: parsing, round trips, refusals, and the fraction mapping.
#include "common/hpo/search_space.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/core/error.h"

namespace course::hpo {
namespace {

TEST(SearchSpace, ParsesEveryKindAndRoundTrips) {
  const SearchSpace space =
      parse_search_space("lr=float:1e-4:1:log;batch=int:32:256;opt=cat:sgd,adamw");
  ASSERT_EQ(space.params.size(), 3u);
  EXPECT_EQ(space.params[0].name, "lr");
  EXPECT_TRUE(space.params[0].log);
  EXPECT_DOUBLE_EQ(space.params[0].internal_low(), std::log(1e-4));
  EXPECT_EQ(space.params[1].kind, ParamKind::kInt);
  EXPECT_DOUBLE_EQ(space.params[1].internal_low(), 31.5);
  EXPECT_DOUBLE_EQ(space.params[1].internal_high(), 256.5);
  EXPECT_EQ(space.params[2].choices, (std::vector<std::string>{"sgd", "adamw"}));
  const SearchSpace again = parse_search_space(to_string(space));
  EXPECT_EQ(to_string(again), to_string(space));
  // Stored bounds read back exactly, in their shortest form.
  const SearchSpace precise = parse_search_space("x=float:0.1234567890123:0.30000000000000004");
  EXPECT_EQ(to_string(precise), "x=float:0.1234567890123:0.30000000000000004");
  EXPECT_EQ(parse_search_space(to_string(precise)).params[0].low, 0.1234567890123);
  EXPECT_EQ(format_value(space.params[2], 1), "adamw");
  EXPECT_EQ(format_value(space.params[1], 64), "64");
}

TEST(SearchSpace, RefusesMalformedSpecsWithTheirPart) {
  for (const char* bad :
       {"", "lr", "lr=float:1", "lr=float:1:0", "lr=float:0:1:log", "lr=float:a:1", "b=int:1.5:4",
        "o=cat:", "o=cat:a,a", "x=bool:0:1", "x=float:0:1;x=float:0:2", "x=float:0:1:lin"}) {
    EXPECT_THROW(parse_search_space(bad), Error) << bad;
  }
}

TEST(SearchSpace, FractionsMapToTheRangeEnds) {
  const SearchSpace space = parse_search_space("lr=float:1e-4:1:log;b=int:1:4;o=cat:a,b,c");
  EXPECT_NEAR(value_at_fraction(space.params[0], 0.0), 1e-4, 1e-12);
  EXPECT_NEAR(value_at_fraction(space.params[0], 0.5), 1e-2, 1e-12);
  EXPECT_NEAR(value_at_fraction(space.params[0], 1.0), 1.0, 1e-12);
  // Each integer owns a quarter of [0, 1].
  EXPECT_EQ(value_at_fraction(space.params[1], 0.0), 1);
  EXPECT_EQ(value_at_fraction(space.params[1], 0.3), 2);
  EXPECT_EQ(value_at_fraction(space.params[1], 0.99), 4);
  EXPECT_EQ(value_at_fraction(space.params[2], 0.34), 1);
  EXPECT_EQ(value_at_fraction(space.params[2], 1.0), 2);
}

}  // namespace
}  // namespace course::hpo
