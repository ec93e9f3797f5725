// The GPT presets and the parameter count from a configuration.
#include "common/nn/gpt_config.h"

#include "common/core/error.h"

namespace course::nn {

namespace {

constexpr int64_t kGpt2Vocabulary = 50257;

}  // namespace

const std::vector<GptConfig>& gpt_presets() {
  static const std::vector<GptConfig> presets = {
      {"gpt-tiny", 4, 4, 128, 64, 256},
      {"gpt-mini", 6, 6, 384, 256, 256},
      {"gpt2", 12, 12, 768, 1024, kGpt2Vocabulary},
      {"gpt2-medium", 24, 16, 1024, 1024, kGpt2Vocabulary},
      {"gpt2-large", 36, 20, 1280, 1024, kGpt2Vocabulary},
      {"gpt2-xl", 48, 25, 1600, 1024, kGpt2Vocabulary},
      {"gpt-1.3b", 24, 16, 2048, 1024, kGpt2Vocabulary},
  };
  return presets;
}

GptConfig gpt_preset(const std::string& name) {
  std::string known;
  for (const GptConfig& c : gpt_presets()) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  COURSE_FAIL("unknown GPT preset '", name, "' (known: ", known, ")");
}

int64_t gpt_parameter_count(const GptConfig& c) {
  const int64_t per_block = 12 * c.channels * c.channels + 13 * c.channels;
  return c.vocabulary * c.channels + c.context * c.channels + c.layers * per_block + 2 * c.channels;
}

}  // namespace course::nn
