// Text generation's speed, in generated tokens per second: without a cache (each token a
// forward pass over its whole prefix, nn::generate), with the paged key/value cache one request
// at a time, and with the cache continuously batching 8 requests. On gpt-mini (6 blocks, width
// 384, context 256) and llama-tiny, on the GPU when one is visible, else on the CPU. Each
// request: a prompt of 16 tokens, then 112 new ones (within gpt-mini's context) or 40
// (llama-tiny's 64).
#include <benchmark/benchmark.h>

#include <random>

#include "common/models/gpt/generate.h"
#include "common/models/gpt/generation_engine.h"

namespace course {
namespace {

constexpr int64_t kRequests = 8, kPrompt = 16;

struct Setup {
  explicit Setup(const std::string& preset) : device(default_device()) {
    std::mt19937 rng(1);
    model = std::make_unique<nn::Gpt>(nn::gpt_preset(preset), rng, device);
    model->set_training(false);
    new_tokens = std::min<int64_t>(112, model->config().context - kPrompt);
  }
  std::vector<int32_t> prompt(int64_t r) const {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < kPrompt; ++i) p.push_back(static_cast<int32_t>((31 * r + 7 * i) % 256));
    return p;
  }
  nn::GenerationRequest request(int64_t r) const {
    return {.prompt = prompt(r),
            .max_new_tokens = new_tokens,
            .sampling = {.temperature = 0.8f},
            .seed = static_cast<uint32_t>(r)};
  }

  Device device;
  std::unique_ptr<nn::Gpt> model;
  int64_t new_tokens = 0;
};

const char* preset_of(const benchmark::State& state) {
  return state.range(0) == 0 ? "gpt-mini" : "llama-tiny";
}

// Each request alone, every token a forward over its prefix.
void BM_NoCache(benchmark::State& state) {
  Setup s(preset_of(state));
  for (auto _ : state) {
    for (int64_t r = 0; r < kRequests; ++r) {
      benchmark::DoNotOptimize(nn::generate(*s.model, s.model->config(), s.device, s.prompt(r),
                                            {.tokens = s.new_tokens, .seed = 1}));
    }
  }
  state.SetItemsProcessed(state.iterations() * kRequests * s.new_tokens);
  state.SetLabel(std::string(preset_of(state)) + " on " + s.device.str());
}

// The cache, `slots` requests at a time (1: one after another).
void run_engine(benchmark::State& state, int64_t slots) {
  Setup s(preset_of(state));
  for (auto _ : state) {
    nn::GenerationEngine engine(*s.model,
                                {.block_size = 16, .blocks = kRequests * 16, .sequences = slots});
    for (int64_t r = 0; r < kRequests; ++r) engine.add(s.request(r));
    benchmark::DoNotOptimize(engine.run());
  }
  state.SetItemsProcessed(state.iterations() * kRequests * s.new_tokens);
  state.SetLabel(std::string(preset_of(state)) + " on " + s.device.str());
}

void BM_CacheOneAtATime(benchmark::State& state) { run_engine(state, 1); }
void BM_CacheContinuousBatching(benchmark::State& state) { run_engine(state, kRequests); }

BENCHMARK(BM_NoCache)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CacheOneAtATime)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_CacheContinuousBatching)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
}  // namespace course
