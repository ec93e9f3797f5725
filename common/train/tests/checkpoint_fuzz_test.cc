// Fuzz test of the checkpoint reader: thousands of seeded mutations of a valid checkpoint (its
// magic, header length, JSON header, tensor names, dtypes, shapes, byte counts and data) each
// give a clean course::Error or load tensors of the model's own shapes; never a crash, a hang
// or (under --config=asan) a sanitizer report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/testing/errors_and_files.h"
#include "common/testing/mutate.h"
#include "common/train/checkpoint.h"

namespace course::train {
namespace {

TEST(CheckpointFuzz, MutatedCheckpointsAreRefusedOrLoadWhole) {
  Tensor weight = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor steps = Tensor::from_vector<int64_t>({7}, {1});
  const std::string path = testing::temp_path("fuzz.ckpt");
  save_checkpoint(path, {{"model.weight", &weight}, {"optimizer.steps", &steps}},
                  {{"model", "smallnet"}, {"epoch", 1}});
  const std::string valid = testing::read_file(path);
  testing::Mutator mutator(11);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    testing::write_file(path, mutator.mutate(valid));
    Tensor w = Tensor::empty({2, 3}), s = Tensor::empty({1}, DType::kI64);
    try {
      read_checkpoint_header(path);
      load_checkpoint(path, {{"model.weight", &w}, {"optimizer.steps", &s}});
      ASSERT_EQ(w.shape(), (Shape{2, 3}));
      ++accepted;
    } catch (const Error&) {
    }
  }
  std::printf("%d of 3000 mutated checkpoints loaded (mutations in the data bytes)\n", accepted);
}

}  // namespace
}  // namespace course::train
