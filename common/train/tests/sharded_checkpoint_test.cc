// Sharded checkpoints on 2 and 4 ranks: a GPT trained 3 steps with ZeRO-3 (and with
// HYBRID_SHARD, groups of 2) saves one file per rank; joined in one process into a fresh
// (differently initialised) model, its parameters equal the gathered ones bit for bit (also with
// DeepSpeed's persistent tensors, units of their own). A missing
// rank's file, a file of another rank count and a truncated file are refused with their message.
#include "common/train/sharded_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "common/kernels/cross_entropy.h"
#include "common/models/gpt/gpt.h"
#include "common/optim/optimizer.h"
#include "common/testing/parameter_values.h"

namespace course::train {
namespace {

// 2 blocks; 20,509 parameters: no unit divides evenly by 2 or 4.
const nn::GptConfig kGpt{"gpt-test", 2, 3, 27, 16, 61};

void train_steps(parallel::ShardedDataParallel& sharded, int steps) {
  optim::AdamW adamw(sharded.shard_parameters(), {.lr = 1e-2f});
  const int rank = sharded.communicator().rank();
  for (int step = 0; step < steps; ++step) {
    std::vector<int32_t> tokens(2 * kGpt.context);
    std::vector<int64_t> labels(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<int32_t>((i * 5 + rank + step) % kGpt.vocabulary);
      labels[i] = static_cast<int64_t>((i * 3 + step) % kGpt.vocabulary);
    }
    const Tensor labels_t =
        Tensor::from_vector<int64_t>(labels, {static_cast<int64_t>(labels.size())});
    sharded.zero_grad();
    const Tensor logits = sharded.forward(Tensor::from_vector<int32_t>(tokens, {2, kGpt.context}));
    const Tensor rows = logits.view({labels_t.numel(), kGpt.vocabulary});
    const CrossEntropyOutput loss = softmax_cross_entropy(rows, labels_t);
    sharded.backward(
        softmax_cross_entropy_backward(loss, labels_t, 0.0f, DType::kF32).view(logits.shape()));
    adamw.step();
    sharded.after_step();
  }
}

std::string checkpoint_dir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp ? tmp : "/tmp") + "/sharded_checkpoint_" +
         std::to_string(parallel::Communicator::world()->size());
}

TEST(ShardedCheckpoint, HybridShardsJoinFromTheFirstReplica) {
  const auto comm = parallel::Communicator::world();
  const std::string path = checkpoint_dir() + "-hybrid.ckpt";
  std::mt19937 rng(11);
  nn::Gpt model(kGpt, rng, Device::cpu());
  parallel::ShardedDataParallel sharded(
      model, model.blocks(), comm,
      {.sharding = parallel::Sharding::kHybridShard, .shard_group_size = 2});
  train_steps(sharded, 2);
  save_sharded_checkpoint(path, sharded, {}, {});
  sharded.gather_all();
  const std::vector<float> trained = testing::parameter_values(model);
  if (comm->rank() == 0) {
    std::mt19937 other_rng(99);
    nn::Gpt whole(kGpt, other_rng, Device::cpu());
    load_full_model(path, comm->size(), whole, whole.blocks());
    EXPECT_EQ(testing::parameter_values(whole), trained);
  }
  comm->barrier();
}

// DeepSpeed's persistent tensors are units of their own ("3.persistent"): the file says the
// threshold, and the join cuts the model as it was cut.
TEST(ShardedCheckpoint, PersistentUnitsJoinAtTheThresholdTheFileSays) {
  const auto comm = parallel::Communicator::world();
  const std::string path = checkpoint_dir() + "-persistent.ckpt";
  std::mt19937 rng(12);
  nn::Gpt model(kGpt, rng, Device::cpu());
  parallel::ShardedDataParallel sharded(
      model, model.blocks(), comm,
      {.sharding = parallel::Sharding::kZero3, .communication = {.persistence_threshold = 81}});
  train_steps(sharded, 2);
  save_sharded_checkpoint(path, sharded, {}, {});
  sharded.gather_all();
  const std::vector<float> trained = testing::parameter_values(model);
  if (comm->rank() == 0) {
    std::mt19937 other_rng(98);
    nn::Gpt whole(kGpt, other_rng, Device::cpu());
    const nlohmann::json header = load_full_model(path, comm->size(), whole, whole.blocks());
    EXPECT_EQ(testing::parameter_values(whole), trained);
    EXPECT_FALSE(header.contains("persistence_threshold"));
  }
  comm->barrier();
}

TEST(ShardedCheckpoint, ShardsSavedOnEveryRankJoinIntoTheWholeModel) {
  const auto comm = parallel::Communicator::world();
  const std::string dir = checkpoint_dir();
  if (comm->rank() == 0) std::filesystem::create_directories(dir);
  comm->barrier();
  const std::string path = dir + "/gpt.ckpt";

  std::mt19937 rng(11);
  nn::Gpt model(kGpt, rng, Device::cpu());
  parallel::ShardedDataParallel sharded(model, model.blocks(), comm,
                                        {.sharding = parallel::Sharding::kZero3});
  train_steps(sharded, 3);
  Tensor marker = Tensor::from_vector<float>({static_cast<float>(comm->rank())}, {1});
  save_sharded_checkpoint(path, sharded, {{"rank_marker", &marker}}, {{"step", 3}});
  sharded.gather_all();
  const std::vector<float> trained = testing::parameter_values(model);
  sharded.release_all();

  if (comm->rank() == 0) {
    std::mt19937 other_rng(99);
    nn::Gpt whole(kGpt, other_rng, Device::cpu());
    ASSERT_NE(testing::parameter_values(whole), trained) << "the fresh model must start elsewhere";
    const nlohmann::json header = load_full_model(path, comm->size(), whole, whole.blocks());
    EXPECT_EQ(header.value("step", -1), 3);
    EXPECT_EQ(testing::parameter_values(whole), trained);

    EXPECT_THROW(
        {
          try {
            load_full_model(path, comm->size() + 1, whole, whole.blocks());
          } catch (const Error& e) {
            const std::string saved_on = "was saved on " + std::to_string(comm->size()) +
                                         " ranks, and this run has " +
                                         std::to_string(comm->size() + 1);
            EXPECT_NE(std::string(e.what()).find(saved_on), std::string::npos) << e.what();
            throw;
          }
        },
        Error);
    // Rank 1's file where rank 0's should be: refused by its header.
    const std::string first = rank_file(path, 0, comm->size());
    std::filesystem::copy_file(rank_file(path, 1, comm->size()), first,
                               std::filesystem::copy_options::overwrite_existing);
    EXPECT_THROW(load_full_model(path, comm->size(), whole, whole.blocks()), Error);
    std::filesystem::resize_file(first, std::filesystem::file_size(first) / 2);
    EXPECT_THROW(load_full_model(path, comm->size(), whole, whole.blocks()), Error);
  }
  comm->barrier();
}

}  // namespace
}  // namespace course::train
