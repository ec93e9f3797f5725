// One training step of a course model for the numerical parity check against PyTorch
// (bench/compare/compare.sh): builds the model from --seed, draws a batch, runs forward,
// the mean cross-entropy (no label smoothing) and backward in f32 on the CPU, and writes
// everything to one file in the checkpoint format (common/train/checkpoint.h), in model order:
//   param.NNN   the initial parameters       buffer.NNN  the initial buffers
//   images      (N, C, S, S) f32             labels      (N,) i64
//   logits      (N, classes) f32             loss        (1,) f32
//   grad.NNN    the gradient of each parameter
// The header lists the parameter and buffer names. The other side loads the weights and the
// batch, runs the same step and compares.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "common/kernels/cross_entropy.h"
#include "common/nn/models.h"
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

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "smallnet", out;
  int64_t batch = 8, image_size = 28, channels = 1, classes = 10;
  uint32_t seed = 0;
  CLI::App app("One f32 training step of a course model, written for the PyTorch parity check");
  app.add_option("--model", model_name)->check(CLI::IsMember(nn::model_names()));
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--image-size", image_size)->check(CLI::PositiveNumber);
  app.add_option("--channels", channels)->check(CLI::PositiveNumber);
  app.add_option("--seed", seed);
  app.add_option("--out", out, "file to write")->required();
  train::parse_or_exit(app, argc, argv);
  return train::lab_main([&] {
    auto model = nn::make_model(
        {.name = model_name, .in_channels = channels, .num_classes = classes, .seed = seed},
        Device::cpu());
    nn::ModuleState state = model->state();
    train::NamedTensors tensors;
    nlohmann::json names{{"model", model_name}, {"parameters", {}}, {"buffers", {}}};
    std::vector<Tensor> initial;  // copies: the step changes the buffers
    initial.reserve(state.parameters.size() + state.buffers.size());
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
    Tensor images = testing::random_tensor({batch, channels, image_size, image_size}, DType::kF32,
                                           Device::cpu(), seed + 1, -2.0f, 2.0f)
                        .tensor;
    std::vector<int64_t> label_values(batch);
    for (int64_t i = 0; i < batch; ++i) label_values[i] = (i * 7 + seed) % classes;
    Tensor labels = Tensor::from_vector(label_values, {batch});
    model->set_training(true);
    Tensor logits = model->forward(images);
    CrossEntropyOutput loss = softmax_cross_entropy(logits, labels);
    model->backward(softmax_cross_entropy_backward(loss, labels, 0.0f, DType::kF32));
    tensors.emplace_back("images", &images);
    tensors.emplace_back("labels", &labels);
    tensors.emplace_back("logits", &logits);
    tensors.emplace_back("loss", &loss.loss);
    for (size_t i = 0; i < state.parameters.size(); ++i) {
      tensors.emplace_back(numbered("grad", i), &state.parameters[i].second->grad);
    }
    train::save_checkpoint(out, tensors, names);
    std::printf("%s: %zu parameters, batch %lld, loss %.6f -> %s\n", model_name.c_str(),
                state.parameters.size(), static_cast<long long>(batch), loss.host_loss(),
                out.c_str());
  });
}
