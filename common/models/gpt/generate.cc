// Sampling loop.
#include "common/models/gpt/generate.h"

#include <algorithm>
#include <random>

#include "common/kernels/elementwise.h"

namespace course::nn {

std::vector<int32_t> generate(Module& model, const GptConfig& config, Device device,
                              std::vector<int32_t> prompt, const GenerateOptions& options) {
  COURSE_CHECK(!prompt.empty(), "generation needs a prompt of at least one token");
  check_sampling(options.sampling);
  const bool was_training = model.training();
  model.set_training(false);
  const int64_t vocabulary = config.vocabulary, context = config.context;
  std::mt19937 rng(options.seed);
  std::vector<int32_t> tokens = std::move(prompt);
  for (int64_t n = 0; n < options.tokens; ++n) {
    const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(tokens.size()) - context);
    const std::vector<int32_t> window(tokens.begin() + start, tokens.end());
    const int64_t t = static_cast<int64_t>(window.size());
    Context discarded;
    const Tensor logits =
        cast(model.forward(Tensor::from_vector(window, {1, t}, device), discarded), DType::kF32);
    const std::vector<float> last = logits.view({t, vocabulary}).slice(t - 1, t).to_vector<float>();
    tokens.push_back(sample_token(last, options.sampling, rng));
  }
  model.set_training(was_training);
  return tokens;
}

}  // namespace course::nn
