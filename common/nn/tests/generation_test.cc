// Incremental decoding against the full forward: a GPT-2 and a Llama (grouped heads, rotary
// positions, tied and untied output layers) decoding prompts of uneven lengths through a paged
// cache of small blocks, continuously batched, give for every generated token the logits of a
// forward over its whole prefix; a request's tokens do not depend on what it is batched with;
// the block allocator never hands one block to two owners; sampling keeps what temperature,
// top-k and top-p say (hand-computed distributions, and draws against them); bad requests are
// refused with one message.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "common/kernels/elementwise.h"
#include "common/models/gpt/generation_engine.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"
#include "common/testing/random_tensor.h"
#include "common/testing/tolerance.h"

namespace course::nn {
namespace {

using testing::error_of;

GptConfig config_of(const std::string& preset, bool tied) {
  GptConfig c = gpt_preset(preset);
  c.tied_head = tied;
  return c;
}

// The logits of the last position of `tokens` by the training forward over the whole prefix.
std::vector<float> full_forward_logits(Gpt& model, const std::vector<int32_t>& tokens) {
  const int64_t t = static_cast<int64_t>(tokens.size());
  const Device device = model.token_table().value.device();
  Context discarded;
  const Tensor logits = model.forward(Tensor::from_vector(tokens, {1, t}).to(device), discarded);
  const int64_t v = model.config().vocabulary;
  return logits.view({t, v}).slice(t - 1, t).to_vector<float>();
}

std::vector<int32_t> random_prompt(int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < length; ++i) prompt.push_back(static_cast<int32_t>(rng() % 256));
  return prompt;
}

class CachedDecoding : public testing::DeviceTest {};

TEST_P(CachedDecoding, EveryTokensLogitsAreTheFullForwardsOverItsPrefix) {
  for (const auto& [preset, tied] : std::vector<std::pair<std::string, bool>>{
           {"gpt-tiny", true}, {"llama-tiny", true}, {"llama-tiny", false}}) {
    std::mt19937 rng(11);
    Gpt model(config_of(preset, tied), rng, device());
    // 2 slots for 4 requests of uneven prompts: later ones join as earlier ones finish; blocks
    // of 4 positions, so prompts and generations cross block boundaries.
    GenerationEngine engine(model, {.block_size = 4, .blocks = 40, .sequences = 2});
    const std::vector<int64_t> prompts{1, 5, 13, 4}, budgets{9, 6, 12, 3};
    for (size_t r = 0; r < prompts.size(); ++r) {
      engine.add({.prompt = random_prompt(prompts[r], 100 + r),
                  .max_new_tokens = budgets[r],
                  .sampling = {.temperature = 1.0f},
                  .seed = static_cast<uint32_t>(r),
                  .keep_logits = true});
    }
    const std::vector<GenerationResult> results = engine.run();
    EXPECT_EQ(engine.stats().largest_batch, 2);
    for (size_t r = 0; r < prompts.size(); ++r) {
      ASSERT_EQ(static_cast<int64_t>(results[r].tokens.size()), budgets[r]) << preset;
      std::vector<int32_t> prefix = random_prompt(prompts[r], 100 + r);
      for (int64_t i = 0; i < budgets[r]; ++i) {
        EXPECT_TRUE(testing::all_close(results[r].logits[i], full_forward_logits(model, prefix),
                                       {.atol = 1e-4, .rtol = 1e-4}))
            << preset << (tied ? "" : " untied") << ", request " << r << ", token " << i;
        prefix.push_back(results[r].tokens[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, CachedDecoding, ::testing::ValuesIn(testing::test_devices()),
                         testing::device_test_name);

// Each request draws from its own generator: batched with others, it generates what it
// generates alone, and the batch takes fewer steps than the requests one after another.
TEST(ContinuousBatching, GivesEachRequestWhatItGeneratesAlone) {
  std::mt19937 rng(3);
  Gpt model(gpt_preset("llama-tiny"), rng, Device::cpu());
  std::vector<GenerationRequest> requests;
  for (int r = 0; r < 6; ++r) {
    requests.push_back({.prompt = random_prompt(2 + 3 * r, 50 + r),
                        .max_new_tokens = 4 + (r * 5) % 9,
                        .sampling = {.temperature = 0.9f, .top_k = 40, .top_p = 0.95f},
                        .seed = static_cast<uint32_t>(7 * r)});
  }
  GenerationEngine batched(model, {.block_size = 8, .blocks = 24, .sequences = 3});
  for (const GenerationRequest& r : requests) batched.add(r);
  const std::vector<GenerationResult> together = batched.run();
  int64_t alone_steps = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    GenerationEngine alone(model, {.block_size = 8, .blocks = 24, .sequences = 1});
    alone.add(requests[r]);
    EXPECT_EQ(alone.run()[0].tokens, together[r].tokens) << "request " << r;
    alone_steps += alone.stats().steps;
  }
  EXPECT_EQ(batched.stats().largest_batch, 3);
  EXPECT_LT(batched.stats().steps, alone_steps / 2);
}

TEST(ContinuousBatching, AStopTokenEndsTheRequestWithoutIt) {
  std::mt19937 rng(3);
  Gpt model(gpt_preset("gpt-tiny"), rng, Device::cpu());
  const GenerationRequest greedy{
      .prompt = random_prompt(6, 1), .max_new_tokens = 8, .sampling = {.temperature = 0}};
  GenerationEngine first(model, {.block_size = 4, .blocks = 8, .sequences = 1});
  first.add(greedy);
  const std::vector<int32_t> tokens = first.run()[0].tokens;
  GenerationRequest stopping = greedy;
  stopping.stop_token = tokens[3];
  const size_t first_stop =
      std::find(tokens.begin(), tokens.end(), tokens[3]) - tokens.begin();  // <= 3
  GenerationEngine second(model, {.block_size = 4, .blocks = 8, .sequences = 1});
  second.add(stopping);
  const GenerationResult result = second.run()[0];
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.tokens, std::vector<int32_t>(tokens.begin(), tokens.begin() + first_stop));
}

TEST(BlockAllocator, NeverHandsOneBlockToTwoOwners) {
  BlockAllocator allocator(13);
  std::set<int32_t> owned;
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    if (!owned.empty() && (rng() % 3 == 0 || allocator.free_blocks() == 0)) {
      auto it = owned.begin();
      std::advance(it, rng() % owned.size());
      allocator.free(*it);
      owned.erase(it);
    } else {
      const int32_t block = allocator.allocate();
      EXPECT_TRUE(block >= 0 && block < 13);
      EXPECT_TRUE(owned.insert(block).second) << "block " << block << " handed out twice";
    }
    EXPECT_EQ(allocator.free_blocks() + static_cast<int64_t>(owned.size()), 13);
  }
  while (allocator.free_blocks() > 0) owned.insert(allocator.allocate());
  EXPECT_NE(error_of([&] { allocator.allocate(); }).find("no free block left"), std::string::npos);
  allocator.free(4);
  EXPECT_NE(error_of([&] { allocator.free(4); }).find("block 4 of the key/value cache is not"),
            std::string::npos);
  EXPECT_NE(error_of([&] { allocator.free(13); }).find("not handed out"), std::string::npos);
}

TEST(PagedKvCache, LiveSequencesHoldDisjointBlocksAndGiveThemBack) {
  PagedKvCache cache(gpt_preset("gpt-tiny"), {.block_size = 4, .blocks = 10, .sequences = 3},
                     Device::cpu());
  cache.reserve(0, 9);   // 3 blocks
  cache.reserve(2, 16);  // 4 blocks
  EXPECT_EQ(cache.free_blocks(), 3);
  std::set<int32_t> all(cache.blocks_of(0).begin(), cache.blocks_of(0).end());
  all.insert(cache.blocks_of(2).begin(), cache.blocks_of(2).end());
  EXPECT_EQ(all.size(), 7u);
  EXPECT_FALSE(cache.fits(13));
  EXPECT_NE(error_of([&] { cache.reserve(1, 13); }).find("has 3 free blocks"), std::string::npos);
  EXPECT_NE(error_of([&] { cache.reserve(0, 1); }).find("slot 0 of the key/value cache is in use"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cache.reserve(1, 65); }).find("longer than the model's context"),
            std::string::npos);
  cache.release(0);
  EXPECT_EQ(cache.free_blocks(), 6);
  EXPECT_TRUE(cache.blocks_of(0).empty());
}

// p = (0.5, 0.3, 0.15, 0.05) as logits log p (and a constant).
const std::vector<float> kLogits{std::log(0.15f) + 2, std::log(0.5f) + 2, std::log(0.05f) + 2,
                                 std::log(0.3f) + 2};

void expect_distribution(const SamplingOptions& o, const std::vector<double>& expected) {
  const std::vector<double> p = sampling_distribution(kLogits, o);
  ASSERT_EQ(p.size(), expected.size());
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_NEAR(p[i], expected[i], 1e-6) << "token " << i << ", T " << o.temperature << ", top-k "
                                         << o.top_k << ", top-p " << o.top_p;
  }
}

TEST(Sampling, KeepsWhatTemperatureTopKAndTopPSay) {
  expect_distribution({.temperature = 0}, {0, 1, 0, 0});
  expect_distribution({.temperature = 1}, {0.15, 0.5, 0.05, 0.3});
  expect_distribution({.temperature = 1, .top_k = 1}, {0, 1, 0, 0});
  expect_distribution({.temperature = 1, .top_k = 3}, {0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95});
  expect_distribution({.temperature = 1, .top_p = 0.7f}, {0, 0.625, 0, 0.375});
  expect_distribution({.temperature = 1, .top_p = 0.81f}, {0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95});
  expect_distribution({.temperature = 1, .top_p = 0.4f}, {0, 1, 0, 0});
  // T = 2: p^(1/2), renormalised.
  const double s = std::sqrt(0.15) + std::sqrt(0.5) + std::sqrt(0.05) + std::sqrt(0.3);
  expect_distribution({.temperature = 2}, {std::sqrt(0.15) / s, std::sqrt(0.5) / s,
                                           std::sqrt(0.05) / s, std::sqrt(0.3) / s});
  // Greedy takes the first of equal logits.
  EXPECT_EQ(sampling_distribution({1, 3, 3, 2}, {.temperature = 0}),
            (std::vector<double>{0, 1, 0, 0}));
}

// 40,000 draws at T = 1 with top-k 3: each kept token's count within 4.5 standard deviations of
// its probability, the dropped token never drawn.
TEST(Sampling, DrawsFollowTheDistribution) {
  std::mt19937 rng(17);
  std::map<int32_t, int> counts;
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) ++counts[sample_token(kLogits, {.top_k = 3}, rng)];
  const std::vector<double> p{0.15 / 0.95, 0.5 / 0.95, 0, 0.3 / 0.95};
  for (int32_t token = 0; token < 4; ++token) {
    const double sd = std::sqrt(draws * p[token] * (1 - p[token]));
    EXPECT_NEAR(counts[token], draws * p[token], 4.5 * sd + 1e-9) << "token " << token;
  }
}

TEST(Generation, BadRequestsAreOneClearError) {
  std::mt19937 rng(3);
  Gpt model(gpt_preset("gpt-tiny"), rng, Device::cpu());
  GenerationEngine engine(model, {.block_size = 4, .blocks = 8, .sequences = 1});
  const auto refusal = [&](GenerationRequest r) { return error_of([&] { engine.add(r); }); };
  EXPECT_NE(refusal({.prompt = {}}).find("a prompt of at least one token"), std::string::npos);
  EXPECT_NE(refusal({.prompt = random_prompt(60, 1), .max_new_tokens = 5})
                .find("a prompt of 60 tokens and 5 new ones exceed the context of 64 tokens"),
            std::string::npos);
  EXPECT_NE(refusal({.prompt = {1, 300}, .max_new_tokens = 3})
                .find("prompt token 300 is outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(refusal({.prompt = {1}, .max_new_tokens = 40}).find("more blocks than the key/value"),
            std::string::npos);
  for (const float top_p : {0.0f, 1.5f}) {
    EXPECT_NE(refusal({.prompt = {1}, .max_new_tokens = 3, .sampling = {.top_p = top_p}})
                  .find("top-p must be in (0, 1]"),
              std::string::npos);
  }
  EXPECT_NE(refusal({.prompt = {1}, .max_new_tokens = 3, .sampling = {.temperature = -1}})
                .find("temperature must not be negative"),
            std::string::npos);
}

}  // namespace
}  // namespace course::nn
