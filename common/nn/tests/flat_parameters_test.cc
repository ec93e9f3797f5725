// Flat parameters: flattening changes no value and no result (forward and backward of the small
// network are bit-identical to an unflattened twin), gradients land in the flat buffer, the
// padded buffer splits into equal shards whose pieces are computed by hand, and SGD run shard
// by shard on the flat buffer equals SGD run parameter by parameter.
#include "common/nn/flat_parameters.h"

#include <gtest/gtest.h>

#include "common/kernels/cross_entropy.h"
#include "common/models/models.h"
#include "common/optim/optimizer.h"
#include "common/testing/random_tensor.h"

namespace course::nn {
namespace {

ModulePtr small_network() {
  return make_model({.name = "smallnet", .in_channels = 1, .num_classes = 10, .seed = 1},
                    Device::cpu());
}

// One forward and backward on a fixed batch; returns the logits.
std::vector<float> step(Module& model) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, DType::kF32, Device::cpu(), 2).tensor;
  const Tensor labels = Tensor::from_vector<int64_t>({1, 7, 3, 3}, {4});
  const Tensor logits = model.forward(x);
  const CrossEntropyOutput loss = softmax_cross_entropy(logits, labels);
  model.zero_grad();
  model.backward(softmax_cross_entropy_backward(loss, labels, 0.0f, DType::kF32));
  return logits.to_vector<float>();
}

std::vector<float> concatenated(const std::vector<Parameter*>& params, bool grads) {
  std::vector<float> out;
  for (const Parameter* p : params) {
    const std::vector<float> v = (grads ? p->grad : p->value).to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST(FlatParameters, ChangeNoValueAndNoResult) {
  ModulePtr plain = small_network(), flat_model = small_network();
  const std::vector<Parameter*> params = flat_model->parameters();
  const std::vector<float> before = concatenated(params, false);
  FlatParameters flat(params, 3);
  EXPECT_EQ(flat.numel(), static_cast<int64_t>(before.size()));
  EXPECT_EQ(flat.padded_numel() % 3, 0);
  EXPECT_LT(flat.padded_numel() - flat.numel(), 3);
  EXPECT_EQ(concatenated(params, false), before);
  std::vector<float> buffer = flat.values().to_vector<float>();
  buffer.resize(before.size());
  EXPECT_EQ(buffer, before) << "the flat buffer holds the values in parameters() order";

  EXPECT_EQ(step(*flat_model), step(*plain));
  const std::vector<float> expected_grads = concatenated(plain->parameters(), true);
  std::vector<float> flat_grads = flat.grads().to_vector<float>();
  EXPECT_EQ(std::vector<float>(flat_grads.begin() + flat.numel(), flat_grads.end()),
            std::vector<float>(flat.padded_numel() - flat.numel(), 0.0f))
      << "the padding stays zero";
  flat_grads.resize(flat.numel());
  EXPECT_EQ(flat_grads, expected_grads) << "backward writes into the flat gradient buffer";
}

TEST(FlatParameters, ShardsAndTheirPiecesByHand) {
  Parameter a(Tensor::empty({5})), b(Tensor::empty({3})), c(Tensor::empty({2, 2}));
  FlatParameters flat({&a, &b, &c}, 4);  // 12 elements: shards of 3
  EXPECT_EQ(flat.padded_numel(), 12);
  EXPECT_EQ(flat.shard(1).begin, 3);
  EXPECT_EQ(flat.shard(1).end, 6);
  const std::vector<FlatPiece> pieces = flat.pieces(flat.shard(1));
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ((std::vector<int64_t>{static_cast<int64_t>(pieces[0].param), pieces[0].begin,
                                  pieces[0].end, pieces[0].flat_begin}),
            (std::vector<int64_t>{0, 3, 5, 3}));
  EXPECT_EQ((std::vector<int64_t>{static_cast<int64_t>(pieces[1].param), pieces[1].begin,
                                  pieces[1].end, pieces[1].flat_begin}),
            (std::vector<int64_t>{1, 0, 1, 5}));
  EXPECT_EQ(flat.pieces(flat.shard(3)).size(), 1u);  // the last 3 of the 4 elements of c
  EXPECT_EQ(flat.pieces(flat.shard(3))[0].end - flat.pieces(flat.shard(3))[0].begin, 3);
  EXPECT_THROW(flat.shard(4), Error);
}

// Elementwise optimizers (SGD, AdamW) updating the flat buffer shard by shard, each shard with
// its own optimizer as a ZeRO rank would, leave the parameters an optimizer over the whole
// model leaves.
template <class Optimizer, class Options>
void expect_shard_by_shard_equals_whole(const Options& options) {
  ModulePtr plain = small_network(), flat_model = small_network();
  FlatParameters flat(flat_model->parameters(), 3);
  Optimizer whole(plain->state().parameters, options);
  std::vector<Parameter> shards;
  for (int r = 0; r < 3; ++r) shards.push_back(flat.view(flat.shard(r)));
  std::vector<std::unique_ptr<Optimizer>> per_shard;
  for (Parameter& s : shards) {
    per_shard.push_back(std::make_unique<Optimizer>(
        std::vector<std::pair<std::string, Parameter*>>{{"shard", &s}}, options));
  }
  for (int i = 0; i < 3; ++i) {
    step(*plain);
    step(*flat_model);
    whole.step();
    for (auto& o : per_shard) o->step();
  }
  EXPECT_EQ(concatenated(flat_model->parameters(), false),
            concatenated(plain->parameters(), false));
}

TEST(FlatParameters, SgdShardByShardEqualsSgdParameterByParameter) {
  expect_shard_by_shard_equals_whole<optim::Sgd>(
      optim::SgdOptions{.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-3f});
}

TEST(FlatParameters, AdamWShardByShardEqualsAdamWParameterByParameter) {
  expect_shard_by_shard_equals_whole<optim::AdamW>(
      optim::AdamWOptions{.lr = 1e-2f, .weight_decay = 0.1f});
}

}  // namespace
}  // namespace course::nn
