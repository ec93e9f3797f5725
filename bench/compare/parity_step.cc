// One training step of a course model for the numerical parity check against PyTorch
// (bench/compare/compare.sh): builds the model from --seed, draws a batch, runs forward,
// the mean cross-entropy (no label smoothing) and backward in f32 on the CPU, and writes
// everything to one file in the checkpoint format (common/train/checkpoint.h), in model order:
//   param.NNN   the initial parameters       buffer.NNN  the initial buffers
//   images      (N, C, S, S) f32             labels      (N,) i64
//   logits      (N, classes) f32             loss        (1,) f32
//   grad.NNN    the gradient of each parameter
// For a decoder (--model gpt-parity: GPT-2 of 2 layers, 2 heads, 32 channels, context 16, 64
// tokens; llama-parity: a Llama of the same size with 4 query heads over 2 key/value heads, a
// SwiGLU of 48 and its own output layer), the batch is tokens (N, T) i32 with labels (N T,) i64
// and logits (N T, V), and the file also holds updated.NNN, the parameters after one AdamW step
// (lr 1e-2, weight decay 0.1). The header lists the parameter and buffer names, and the
// configuration of a decoder ("gpt"), a Vision Transformer ("vit") or a CoAtNet ("coatnet"). The
// other side loads the weights and the batch, runs the same step and compares.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/models/model_registry.h"
#include "common/models/models.h"
#include "common/optim/optimizer.h"
#include "common/testing/random_tensor.h"
#include "common/train/checkpoint.h"
#include "common/train/lab_flags.h"
#include "common/train/lab_main.h"

namespace {

using namespace course;

std::string numbered(const char* kind, size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "%s.%03zu", kind, i);
  return name;
}

const std::vector<nn::GptConfig> kParityDecoders = {
    {"gpt-parity", 2, 2, 32, 16, 64},
    {"llama-parity", 2, 4, 32, 16, 64, nn::DecoderFamily::kLlama, 2, 48, false, 10000.0f},
};

const nn::GptConfig* parity_decoder(const std::string& name) {
  for (const nn::GptConfig& c : kParityDecoders) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The configuration the other side builds its model from.
nlohmann::json decoder_json(const nn::GptConfig& c) {
  return {{"family", c.llama() ? "llama" : "gpt2"},
          {"layers", c.layers},
          {"heads", c.heads},
          {"kv_heads", c.key_value_heads()},
          {"channels", c.channels},
          {"hidden", c.feed_forward_width()},
          {"context", c.context},
          {"vocabulary", c.vocabulary},
          {"tied", c.tied_head},
          {"rope_theta", c.rope_theta}};
}

struct StepBatch {
  Tensor inputs, labels;
};

StepBatch image_batch(int64_t batch, int64_t channels, int64_t image_size, int64_t classes,
                      uint32_t seed) {
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = (i * 7 + seed) % classes;
  return {testing::random_tensor({batch, channels, image_size, image_size}, DType::kF32,
                                 Device::cpu(), seed + 1, -2.0f, 2.0f)
              .tensor,
          Tensor::from_vector(labels, {batch})};
}

StepBatch token_batch(const nn::GptConfig& c, int64_t batch, uint32_t seed) {
  const int64_t seq = c.context, vocabulary = c.vocabulary;
  std::vector<int32_t> tokens(batch * seq);
  std::vector<int64_t> labels(batch * seq);
  for (int64_t i = 0; i < batch * seq; ++i) {
    tokens[i] = static_cast<int32_t>((i * 13 + seed) % vocabulary);
    labels[i] = (i * 29 + 5 + seed) % vocabulary;
  }
  return {Tensor::from_vector(tokens, {batch, seq}), Tensor::from_vector(labels, {batch * seq})};
}

// The parameters and buffers before the step, copied into `initial` (the step changes the
// buffers) and named in the file and in `names`.
void record_initial_state(const nn::ModuleState& state, std::vector<Tensor>& initial,
                          train::NamedTensors& tensors, nlohmann::json& names) {
  names["parameters"] = nlohmann::json::array();
  names["buffers"] = nlohmann::json::array();
  initial.reserve(state.parameters.size() + state.buffers.size());  // `tensors` points into it
  for (size_t i = 0; i < state.parameters.size(); ++i) {
    initial.push_back(state.parameters[i].second->value.clone());
    tensors.emplace_back(numbered("param", i), &initial.back());
    names["parameters"].push_back(state.parameters[i].first);
  }
  for (size_t i = 0; i < state.buffers.size(); ++i) {
    initial.push_back(state.buffers[i].second->clone());
    tensors.emplace_back(numbered("buffer", i), &initial.back());
    names["buffers"].push_back(state.buffers[i].first);
  }
}

// The shape the other side builds a ViT or a CoAtNet from (its family's own description).
void add_image_shape(const nn::ModelConfig& image_model, nlohmann::json& names) {
  const nn::ModelFamilySpec& family = nn::model_family(image_model.name);
  if (family.shape_json) names.update(nlohmann::json::parse(family.shape_json(image_model)));
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "smallnet", out;
  int64_t batch = 8, image_size = 28, channels = 1, classes = 10;
  uint32_t seed = 0;
  CLI::App app("One f32 training step of a course model, written for the PyTorch parity check");
  std::vector<std::string> models = nn::image_model_names();
  for (const nn::GptConfig& c : kParityDecoders) models.push_back(c.name);
  app.add_option("--model", model_name)->check(CLI::IsMember(models));
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--image-size", image_size)->check(CLI::PositiveNumber);
  app.add_option("--channels", channels)->check(CLI::PositiveNumber);
  app.add_option("--seed", seed);
  app.add_option("--out", out, "file to write")->required();
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    const nn::GptConfig* decoder = parity_decoder(model_name);
    const bool gpt = decoder != nullptr;
    std::mt19937 rng(seed);
    const nn::ModelConfig image_model{.name = model_name,
                                      .in_channels = channels,
                                      .num_classes = classes,
                                      .seed = seed,
                                      .image_size = image_size};
    nn::ModulePtr model = gpt ? std::make_unique<nn::Gpt>(*decoder, rng, Device::cpu())
                              : nn::make_model(image_model, Device::cpu());
    nn::ModuleState state = model->state();
    train::NamedTensors tensors;
    nlohmann::json names{{"model", model_name}};
    std::vector<Tensor> initial;
    record_initial_state(state, initial, tensors, names);
    StepBatch b = gpt ? token_batch(*decoder, batch, seed)
                      : image_batch(batch, channels, image_size, classes, seed);
    model->set_training(true);
    const Tensor output = model->forward(b.inputs);
    Tensor logits = output.view({b.labels.numel(), output.size(-1)});
    CrossEntropyOutput loss = softmax_cross_entropy(logits, b.labels);
    model->backward(
        softmax_cross_entropy_backward(loss, b.labels, 0.0f, DType::kF32).view(output.shape()));
    tensors.emplace_back(gpt ? "tokens" : "images", &b.inputs);
    tensors.emplace_back("labels", &b.labels);
    tensors.emplace_back("logits", &logits);
    tensors.emplace_back("loss", &loss.loss);
    for (size_t i = 0; i < state.parameters.size(); ++i) {
      tensors.emplace_back(numbered("grad", i), &state.parameters[i].second->grad);
    }
    if (gpt) {  // the configuration for the other side, and one AdamW step from the gradients
      names["gpt"] = decoder_json(*decoder);
      optim::AdamW adamw(state.parameters, {.lr = 1e-2f, .weight_decay = 0.1f});
      adamw.step();
      for (size_t i = 0; i < state.parameters.size(); ++i) {
        tensors.emplace_back(numbered("updated", i), &state.parameters[i].second->value);
      }
    }
    add_image_shape(image_model, names);
    train::save_checkpoint(out, tensors, names);
    std::printf("%s: %zu parameters, batch %lld, loss %.6f -> %s\n", model_name.c_str(),
                state.parameters.size(), static_cast<long long>(batch), loss.host_loss(),
                out.c_str());
  });
}
