// A GPT and a Llama cut over tensor-parallel ranks (with and without sequence parallelism), 2D
// (data parallel x tensor parallel), 3D parallelism (pipeline stages of the tensor-parallel
// GPT as well) and 4D (the sequences cut over context-parallel ranks too, attention as a ring),
// against one process training
// the whole model on the whole batch, on 2, 4 and 8 ranks, every grid of the world: the loss of
// every SGD step and, after each, every rank's parameters equal the same rows, columns or copies
// of the whole model's (by the rule each layer is cut with); at the end the stages and slices
// gathered back into a whole model on every rank equal the single process's model.
#include "common/parallel/tensor_parallel/tensor_parallel_gpt.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/context_split.h"
#include "common/optim/optimizer.h"
#include "common/parallel/comm/process_grid.h"
#include "common/parallel/data_parallel/gradient_average.h"
#include "common/parallel/pipeline/pipeline_parallel.h"
#include "common/parallel/tensor_parallel/rank_groups.h"
#include "common/parallel/tensor_parallel/tensor_parallel_attention.h"
#include "common/parallel/tensor_parallel/tp_mappings.h"
#include "common/parallel/tests/random_windows.h"
#include "common/testing/tolerance.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 3;
constexpr int64_t kSequencesPerReplica = 2;
constexpr int kMicroBatches = 2;  // of a pipeline's step
// 8 blocks (up to 8 stages), 8 heads and a vocabulary of 48 (up to 8 tensor-parallel ranks).
const nn::GptConfig kGpt{"gpt-3d", 8, 8, 16, 8, 48};
// The same on a context of 16: 2 chunks for each of up to 8 context-parallel ranks.
const nn::GptConfig kGpt4d{"gpt-4d", 8, 8, 16, 16, 48};
// A Llama of the same depth and vocabulary: 16 query heads over 8 key/value heads (2 query heads
// a group, up to 8 ranks), a SwiGLU of 24, its own output layer.
const nn::GptConfig kLlama{"llama-3d", 8,  16,    32,    8, 48, nn::DecoderFamily::kLlama,
                           8,          24, false, 100.0f};
// The same on a context of 16, for context parallelism.
const nn::GptConfig kLlama4d{"llama-4d", 8,  16,    32,    16, 48, nn::DecoderFamily::kLlama,
                             8,          24, false, 100.0f};
const testing::Tolerance kParity = testing::tolerance_for(DType::kF32);
// SGD with momentum, not AdamW: the key bias's true gradient is zero (a softmax ignores what
// adds to a whole row of scores), so its computed gradient is rounding noise that AdamW would
// divide by its own size, turning another summation order into a different update.
const optim::SgdOptions kSgd{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f};

struct Batch {
  Tensor tokens, targets;
};

// Sequences [first, first + count) of step `step`'s batch; under context parallelism, this
// rank's rows of them (common/nn/context_split.h).
Batch batch(const nn::GptConfig& config, int step, int64_t first, int64_t count,
            const nn::ContextSplit& split = {}) {
  const NextTokenBatch b =
      random_windows(50 + step, config.context, config.vocabulary, first, count);
  if (!split.active()) return {b.inputs, b.targets};
  return {split.rows_of(b.inputs), split.flat_rows_of(b.targets, count)};
}

// One step of `model` on `b`: the mean loss's gradients added into its parameters.
float forward_backward(nn::Module& model, const Batch& b) {
  const Tensor logits = model.forward(b.tokens);
  const Tensor rows = logits.view({b.targets.numel(), logits.size(-1)});
  const CrossEntropyOutput out = softmax_cross_entropy(rows, b.targets);
  model.backward(
      softmax_cross_entropy_backward(out, b.targets, 0.0f, DType::kF32, 1.0f).view(logits.shape()));
  return out.host_loss();
}

// Rank r's part of whole parameter `name` of `config`, by how TensorParallelGpt cuts it.
std::vector<float> expected_part(const nn::GptConfig& config, const std::string& name,
                                 const Tensor& whole, int r, int p) {
  const auto rows = [&](const Tensor& t) {
    const int64_t n = t.size(0) / p;
    return t.slice(r * n, (r + 1) * n).to_vector<float>();
  };
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const nn::BlockShape block = nn::block_shape(config);
  const nn::BlockNames& names = nn::block_names(config.family);
  if (ends_with("attn." + names.qkv + ".weight") || ends_with("attn." + names.qkv + ".bias")) {
    return rows(rows_grouped_by_rank(whole, qkv_parts(block.heads), p));
  }
  if (ends_with(names.expansion + ".weight") || ends_with(names.expansion + ".bias")) {
    return rows(rows_grouped_by_rank(whole, nn::expansion_parts(block), p));
  }
  if (name == "wte.weight" || name == "lm_head.weight") return rows(whole);
  if (ends_with("attn." + names.projection + ".weight") ||
      ends_with("mlp." + names.feed_forward_projection + ".weight")) {
    return slice_last_dim(whole, r, p).to_vector<float>();
  }
  return whole.to_vector<float>();  // normalisations, positions, the row-parallel biases
}

struct Replica {
  std::vector<float> losses;  // mean over the whole batch, per step
  std::vector<std::map<std::string, std::vector<float>>> parameters;  // after each step
};

// The whole model on one process, on every replica's sequences at once.
Replica train_alone(const nn::GptConfig& config, int replicas) {
  std::mt19937 rng(21);
  nn::Gpt gpt(config, rng, Device::cpu());
  optim::Sgd sgd(gpt.state().parameters, kSgd);
  Replica out;
  for (int step = 0; step < kSteps; ++step) {
    gpt.zero_grad();
    out.losses.push_back(
        forward_backward(gpt, batch(config, step, 0, replicas * kSequencesPerReplica)));
    sgd.step();
    std::map<std::string, std::vector<float>> values;
    for (const auto& [name, p] : gpt.state().parameters) values[name] = p->value.to_vector<float>();
    out.parameters.push_back(values);
  }
  return out;
}

void expect_parameters(const nn::GptConfig& config,
                       const std::vector<std::pair<std::string, nn::Parameter*>>& mine,
                       const std::map<std::string, std::vector<float>>& whole_values,
                       const std::map<std::string, Shape>& whole_shapes, int tp_rank, int tp,
                       const std::string& when) {
  for (const auto& [name, p] : mine) {
    const Tensor reference =
        Tensor::from_vector<float>(whole_values.at(name), whole_shapes.at(name));
    EXPECT_TRUE(testing::all_close(p->value.to_vector<float>(),
                                   expected_part(config, name, reference, tp_rank, tp), kParity))
        << name << " " << when << " on rank " << Communicator::world()->rank();
  }
}

// Trains the tensor-parallel GPT on `shape`'s grid: through a pipeline of its stages (1F1B over
// kMicroBatches) when shape.pp > 1, each context-parallel rank on its rows of its replica's
// sequences, the sequence-sharded parameters' gradients summed over the tp axis, the gradients
// averaged over the replicas and the context-parallel ranks.
void expect_training(const GridShape& shape, Activations between = Activations::kReplicated,
                     const nn::GptConfig& config = kGpt) {
  const ProcessGrid grid(Communicator::world(), shape);
  const int dp = grid.coordinates().dp;
  const Replica alone = train_alone(config, shape.dp);
  std::mt19937 rng(21);
  nn::Gpt whole(config, rng, Device::cpu());
  std::map<std::string, Shape> whole_shapes;
  for (const auto& [name, p] : whole.state().parameters) whole_shapes[name] = p->value.shape();
  TensorParallelGpt model(whole, grid.tp(), between);
  const nn::ContextSplit split{grid.coordinates().cp, shape.cp};
  if (split.active()) model.use_context_parallel(grid.cp());
  std::unique_ptr<PipelineParallel> pipeline;
  if (shape.pp > 1) {
    pipeline = std::make_unique<PipelineParallel>(model, grid.pp(),
                                                  PipelineOptions{.micro_batches = kMicroBatches});
  }
  const auto named = pipeline ? pipeline->parameters() : model.state().parameters;
  optim::Sgd sgd(named, kSgd);
  std::vector<nn::Parameter*> parameters;
  for (const auto& [name, p] : named) parameters.push_back(p);
  for (int step = 0; step < kSteps; ++step) {
    const Batch b = batch(config, step, dp * kSequencesPerReplica, kSequencesPerReplica, split);
    float loss = 0;
    if (pipeline) {
      pipeline->zero_grad();
      loss = pipeline->forward_backward(b.tokens, b.targets).to_vector<float>()[0];
    } else {
      model.zero_grad();
      loss = forward_backward(model, b);
    }
    sum_gradients(model.sequence_sharded_parameters(), *grid.tp());
    average_gradients(parameters, *grid.replicas());
    sgd.step();
    // The replicas' and context ranks' mean loss is the whole batch's (equal shares).
    Tensor losses = Tensor::from_vector<float>({loss / (shape.dp * shape.cp)}, {1});
    grid.replicas()->allreduce(losses)->wait();
    EXPECT_TRUE(testing::all_close(losses.to_vector<float>(), {alone.losses[step]}, kParity))
        << config.name << " on " << shape.str() << ", step " << step;
    expect_parameters(config, named, alone.parameters[step], whole_shapes, grid.coordinates().tp,
                      shape.tp,
                      config.name + " on " + shape.str() + ", after step " + std::to_string(step));
  }
  // Every stage's values to every rank's cut model, then the slices into the whole model.
  if (pipeline) pipeline->gather_model();
  model.gather_into(whole);
  expect_parameters(config, whole.state().parameters, alone.parameters.back(), whole_shapes, 0, 1,
                    config.name + " on " + shape.str() + ", gathered into the whole model");
}

TEST(TensorParallelGpt, EveryDataByTensorGridOfTheWorldTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int tp = 1; tp <= n; tp *= 2) expect_training({.dp = n / tp, .tp = tp, .pp = 1});
}

TEST(TensorParallelGpt, SequenceParallelismTrainsAsOneProcessOnEveryDataByTensorGrid) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int tp = 2; tp <= n; tp *= 2) {
    expect_training({.dp = n / tp, .tp = tp, .pp = 1}, Activations::kSequenceSharded);
  }
}

TEST(TensorParallelGpt, EveryThreeDimensionalGridOfTheWorldTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int pp = 2; pp <= n; pp *= 2) {
    for (int tp = 1; tp * pp <= n; tp *= 2) {
      expect_training({.dp = n / (tp * pp), .tp = tp, .pp = pp});
    }
  }
}

// 4D: every grid of the world with a context-parallel axis (cp 2 up to the world), with and
// without sequence parallelism on the tensor-parallel ranks.
TEST(TensorParallelGpt, EveryFourDimensionalGridOfTheWorldTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int cp = 2; cp <= n; cp *= 2) {
    for (int pp = 1; cp * pp <= n; pp *= 2) {
      for (int tp = 1; cp * pp * tp <= n; tp *= 2) {
        const GridShape shape{.dp = n / (cp * pp * tp), .tp = tp, .pp = pp, .cp = cp};
        expect_training(shape, Activations::kReplicated, kGpt4d);
        if (tp > 1 && pp == 1) expect_training(shape, Activations::kSequenceSharded, kGpt4d);
      }
    }
  }
}

// A Llama under context parallelism: each rank turns its two chunks' queries and keys by their
// own positions in the window (the rotation table's rows at the rank's positions), on every grid
// with a context axis, with and without tensor parallelism.
TEST(TensorParallelGpt, LlamaUnderContextParallelismTrainsAsOneProcess) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int cp = 2; cp <= n; cp *= 2) {
    for (int tp = 1; cp * tp <= n; tp *= 2) {
      expect_training({.dp = n / (cp * tp), .tp = tp, .pp = 1, .cp = cp}, Activations::kReplicated,
                      kLlama4d);
    }
  }
}

// The Llama on every grid: grouped heads split with their groups, the SwiGLU's gate and up cut
// alike, RMSNorm replicated (summed over tp with sequence parallelism), its own output layer cut
// over the vocabulary.
TEST(TensorParallelGpt, LlamaTrainsAsOneProcessOnEveryGrid) {
  Communicator::world()->set_timeout(30);
  const int n = Communicator::world()->size();
  for (int tp = 1; tp <= n; tp *= 2) {
    expect_training({.dp = n / tp, .tp = tp, .pp = 1}, Activations::kReplicated, kLlama);
    if (tp > 1) {
      expect_training({.dp = n / tp, .tp = tp, .pp = 1}, Activations::kSequenceSharded, kLlama);
    }
  }
  for (int pp = 2; pp <= n; pp *= 2) {
    expect_training({.dp = 1, .tp = n / pp, .pp = pp}, Activations::kReplicated, kLlama);
  }
}

}  // namespace
}  // namespace course::parallel
