// The decoder presets, their parameter counts and the shape checks.
#include "common/models/gpt/gpt_config.h"

#include "common/core/error.h"
#include "common/models/presets.h"

namespace course::nn {

namespace {

constexpr int64_t kGpt2Vocabulary = 50257;
constexpr int64_t kLlama3Vocabulary = 128256;
constexpr int64_t kLlamaContext = 8192;
constexpr float kLlama3RopeTheta = 500000.0f;

GptConfig llama(const std::string& name, int64_t layers, int64_t heads, int64_t kv_heads,
                int64_t channels, int64_t hidden, int64_t context, int64_t vocabulary, bool tied) {
  return {name,     layers, heads, channels,        context, vocabulary, DecoderFamily::kLlama,
          kv_heads, hidden, tied,  kLlama3RopeTheta};
}

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
      llama("llama-tiny", 4, 4, 2, 128, 352, 64, 256, true),
      llama("llama-3.2-1b", 16, 32, 8, 2048, 8192, kLlamaContext, kLlama3Vocabulary, true),
      llama("llama-3.2-3b", 28, 24, 8, 3072, 8192, kLlamaContext, kLlama3Vocabulary, true),
      llama("llama-3.1-8b", 32, 32, 8, 4096, 14336, kLlamaContext, kLlama3Vocabulary, false),
  };
  return presets;
}

GptConfig gpt_preset(const std::string& name) {
  return find_preset(gpt_presets(), name, "GPT preset");
}

GptParameterParts gpt_parameter_parts(const GptConfig& c) {
  const int64_t table = c.vocabulary * c.channels;
  const int64_t output_layer = c.tied_head ? 0 : table;
  if (c.llama()) {
    const int64_t attention = 2 * c.channels * c.heads * c.head_dim() +
                              2 * c.channels * c.key_value_heads() * c.head_dim();
    const int64_t matrices = attention + 3 * c.channels * c.feed_forward_width();
    return {table, 0, matrices + 2 * c.channels, matrices, c.channels, output_layer};
  }
  const int64_t matrices = 12 * c.channels * c.channels;
  return {table,    c.context * c.channels, matrices + 13 * c.channels,
          matrices, 2 * c.channels,         output_layer};
}

int64_t gpt_parameter_count(const GptConfig& c) {
  const GptParameterParts p = gpt_parameter_parts(c);
  return p.token_table + p.position_table + c.layers * p.block + p.final_norm + p.output_layer;
}

void check_config(const GptConfig& c) {
  COURSE_CHECK(c.layers > 0 && c.heads > 0 && c.context > 0 && c.vocabulary > 0 && c.channels > 0 &&
                   c.kv_heads >= 0 && c.hidden >= 0,
               "model ", c.name, ": a size is not positive");
  COURSE_CHECK(c.channels % c.heads == 0, "model ", c.name, ": ", c.channels,
               " channels do not split into ", c.heads, " heads");
  COURSE_CHECK(c.heads % c.key_value_heads() == 0, "model ", c.name, ": ", c.key_value_heads(),
               " key/value heads do not divide its ", c.heads, " query heads");
  COURSE_CHECK(c.rope_theta == 0.0f || c.head_dim() % 2 == 0, "model ", c.name,
               ": rotary positions turn pairs, but the head size ", c.head_dim(), " is odd");
  COURSE_CHECK(!c.llama() || c.rope_theta > 0.0f, "model ", c.name,
               ": a Llama needs a rotary base (it has no position table)");
  COURSE_CHECK(c.llama() || (c.key_value_heads() == c.heads && c.hidden == 0 && c.tied_head &&
                             c.rope_theta == 0.0f),
               "model ", c.name,
               ": GPT-2 blocks have no grouped heads, other feed-forward "
               "width, untied head or rotary positions");
}

namespace {

std::vector<std::string> decoder_names(DecoderFamily family) {
  std::vector<std::string> names;
  for (const GptConfig& config : gpt_presets()) {
    if (config.family == family) names.push_back(config.name);
  }
  return names;
}

}  // namespace

const ModelFamilySpec& gpt2_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "GPT-2", .images = false, .transformer_blocks = true, .in_pieces = false},
      .names = [] { return decoder_names(DecoderFamily::kGpt2); }};
  return spec;
}

const ModelFamilySpec& llama_family() {
  static const ModelFamilySpec spec{
      .traits = {.name = "Llama", .images = false, .transformer_blocks = true, .in_pieces = false},
      .names = [] { return decoder_names(DecoderFamily::kLlama); }};
  return spec;
}

namespace {

// GPT-2's and Llama's families in the registry (model_registry.h), at their places in --model's
// listing.
[[maybe_unused]] const bool kDecoderFamiliesRegistered =
    register_model_family(gpt2_family(), 2) && register_model_family(llama_family(), 3);

}  // namespace

BlockShape block_shape(const GptConfig& c) {
  return {c.family,
          c.channels,
          {c.heads, c.key_value_heads(), c.head_dim(), c.rope_theta},
          c.feed_forward_width(),
          c.layers,
          /*causal=*/true};
}

}  // namespace course::nn
