// The parity tests' models and batches (parity_subjects.h).
#include "common/parallel/tests/parity_subjects.h"

#include <random>
#include <vector>

#include "common/models/gpt/gpt.h"
#include "common/models/models.h"
#include "common/testing/random_tensor.h"
#include "common/testing/world.h"

namespace course::parallel::parity {

namespace {

using testing::world;

const nn::GptConfig kGpt{"gpt-test", 2, 3, 27, 16, 61};
const nn::GptConfig kLlama{"llama-test", 2,     4,     24, 16, 61, nn::DecoderFamily::kLlama, 2,
                           40,           false, 100.0f};

Subject decoder_subject(const nn::GptConfig& config, uint32_t seed) {
  std::mt19937 rng(seed);
  auto decoder = std::make_unique<nn::Gpt>(config, rng, Device::cpu());
  nn::Sequential* blocks = &decoder->blocks();
  return {std::move(decoder), blocks, config.vocabulary};
}

// An image model built by make_model, its blocks the Sequential `blocks_of` finds in it.
Subject image_subject(const nn::ModelConfig& config, nn::Sequential* (*blocks_of)(nn::Module&)) {
  nn::ModulePtr net = nn::make_model(config, Device::cpu());
  nn::Sequential* blocks = blocks_of(*net);
  return {std::move(net), blocks, 10};
}

nn::Sequential* whole(nn::Module& net) { return dynamic_cast<nn::Sequential*>(&net); }

// 2 random images of `side` px and 3 channels with labels of 10 classes, seeded by
// `stream` * `step` + the rank.
Batch image_batch(int64_t step, int64_t stream, int64_t side) {
  const auto seed = static_cast<uint32_t>(stream * step + world()->rank());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> label(0, 9);
  return {testing::random_tensor({2, 3, side, side}, DType::kF32, Device::cpu(), seed).tensor,
          Tensor::from_vector<int64_t>({label(rng), label(rng)}, {2})};
}

}  // namespace

Subject gpt_subject() { return decoder_subject(kGpt, 7); }
Subject llama_subject() { return decoder_subject(kLlama, 8); }

Batch gpt_batch(int64_t step) {
  std::mt19937 rng(1000 * step + world()->rank());
  std::uniform_int_distribution<int32_t> token(0, kGpt.vocabulary - 1);
  std::vector<int32_t> inputs(2 * kGpt.context);
  std::vector<int64_t> labels(inputs.size());
  for (auto& t : inputs) t = token(rng);
  for (auto& t : labels) t = token(rng);
  return {Tensor::from_vector<int32_t>(inputs, {2, kGpt.context}),
          Tensor::from_vector<int64_t>(labels, {static_cast<int64_t>(labels.size())})};
}

Subject resnet_subject() {
  return image_subject({.name = "resnet18-cifar", .in_channels = 3, .resnet_width = 16}, whole);
}
Batch resnet_batch(int64_t step) { return image_batch(step, 1000, 8); }

Subject vit_subject() {
  return image_subject(
      {.name = "vit-micro", .in_channels = 3, .num_classes = 10, .seed = 4, .image_size = 8},
      whole);
}
Batch vit_batch(int64_t step) { return image_batch(step, 2000, 8); }

Subject coatnet_subject() {
  return image_subject(
      {.name = "coatnet-micro", .in_channels = 3, .num_classes = 10, .seed = 5, .image_size = 16},
      [](nn::Module& net) { return dynamic_cast<nn::Sequential*>(net.children()[1].module); });
}
Batch coatnet_batch(int64_t step) { return image_batch(step, 3000, 16); }

}  // namespace course::parallel::parity
