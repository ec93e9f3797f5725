// Sharded data parallelism against DDP on 2 and 4 CPU ranks, as DeepSpeed tests ZeRO: the same
// model, seed and per-rank batches trained for 5 AdamW steps by DDP and by each strategy; after
// every step the losses and the full parameters must agree. Every strategy includes FSDP's
// HYBRID_SHARD (groups of 2 ranks) and NO_SHARD; FSDP's CPU offload runs with zero2 and zero3
// (on this CPU-only machine its copies are host to host). The models' parameter counts do not
// divide by 2 or 4, so every unit is padded. With this machine's OpenMPI the reduce-scatter adds
// in allreduce's order, and every strategy matches DDP bit for bit on 2 and 4 ranks; the
// tolerance leaves room for an MPI library that orders its sums differently.
//
// Mixed precision (bf16 parameters for compute, f32 masters and reductions) has its own
// reference: DDP whose layers compute, under bf16 autocast, from the parameters rounded to bf16
// while the optimizer updates the f32 masters, which is what the sharded ranks compute from.
// There the f32 masters gathered from every shard are compared, and they match bit for bit too.
#include "common/parallel/data_parallel/sharded_data_parallel.h"

#include <gtest/gtest.h>

#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"
#include "common/nn/model_pieces.h"
#include "common/optim/optimizer.h"
#include "common/parallel/data_parallel/ddp.h"
#include "common/parallel/data_parallel/reduction_buckets.h"
#include "common/parallel/data_parallel/stage3_prefetch.h"
#include "common/parallel/tests/parity_subjects.h"
#include "common/testing/parameter_values.h"
#include "common/testing/tolerance.h"
#include "common/testing/world.h"

namespace course::parallel {
namespace {

constexpr int kSteps = 5;
// hybrid-shard's groups: on 4 ranks two replicas of a model cut in two (on 2 ranks, one).
constexpr int kHybridGroup = 2;
constexpr testing::Tolerance kParity{1e-6, 1e-5};

using testing::world;

using namespace parity;  // the models and their batches

struct Trace {
  std::vector<float> losses;
  std::vector<std::vector<float>> parameters;  // every parameter's values after each step
};

// One step's loss on this rank, its gradient sent back through `model`.
float loss_and_backward(nn::Module& model, const Batch& batch, int64_t classes) {
  const Tensor logits = model.forward(batch.input);
  const Tensor rows = logits.view({batch.labels.numel(), classes});
  const CrossEntropyOutput loss = softmax_cross_entropy(rows, batch.labels);
  model.backward(
      softmax_cross_entropy_backward(loss, batch.labels, 0.0f, DType::kF32).view(logits.shape()));
  return loss.host_loss();
}

const optim::AdamWOptions kAdamW{.lr = 1e-2f, .weight_decay = 0.1f};

// Every parameter's values, unit by unit (sharding_units' order), as the masters gathered below.
std::vector<float> values_by_unit(nn::Module& model, nn::Sequential& blocks) {
  std::vector<float> out;
  for (const auto& [name, params] : sharding_units(model, blocks)) {
    for (const nn::Parameter* p : params) {
      const std::vector<float> v = p->value.to_vector<float>();
      out.insert(out.end(), v.begin(), v.end());
    }
  }
  return out;
}

// How many values each unit of sharding_units() holds (before sharding).
std::vector<int64_t> unit_sizes(const Subject& s) {
  std::vector<int64_t> sizes;
  for (const auto& [name, params] : sharding_units(*s.model, *s.blocks)) {
    int64_t numel = 0;
    for (const nn::Parameter* p : params) numel += p->value.numel();
    sizes.push_back(numel);
  }
  return sizes;
}

// The f32 master values of every unit, gathered from the ranks' shards (the first shard
// group's, padding dropped), in values_by_unit's order.
std::vector<float> gathered_masters(ShardedDataParallel& sdp, const std::vector<int64_t>& sizes) {
  const auto shards = sdp.shard_parameters();
  std::vector<float> out;
  for (size_t u = 0; u < sizes.size(); ++u) {
    const Tensor& shard = shards[u].second->value;
    Tensor all = Tensor::empty({shard.numel() * world()->size()});
    world()->all_gather(shard, all)->wait();
    const std::vector<float> v = all.to_vector<float>();
    out.insert(out.end(), v.begin(), v.begin() + sizes[u]);
  }
  return out;
}

// Runs `step` with every parameter rounded to `dtype` (kept in f32), then puts the f32 master
// values back: the reference for layers computing from 16-bit copies of f32 masters.
float on_rounded_parameters(nn::Module& model, DType dtype, const std::function<float()>& step) {
  std::vector<Tensor> masters;
  for (nn::Parameter* p : model.parameters()) {
    masters.push_back(p->value.clone());
    copy_(p->value, cast(cast(p->value, dtype), DType::kF32));
  }
  const float loss = step();
  for (size_t i = 0; i < masters.size(); ++i) copy_(model.parameters()[i]->value, masters[i]);
  return loss;
}

// DDP; with a 16-bit `param_dtype`, under autocast from parameters rounded to it.
Trace train_ddp(Subject s, const std::function<Batch(int64_t)>& batch,
                DType param_dtype = DType::kF32) {
  DistributedDataParallel ddp(*s.model, world(),
                              plan_gradient_buckets(gradient_bytes(*s.model), 1 << 20, 1 << 16));
  optim::AdamW adamw(s.model->state().parameters, kAdamW);
  const bool mixed = param_dtype != DType::kF32;
  nn::Autocast autocast(param_dtype, mixed);
  Trace trace;
  for (int64_t step = 0; step < kSteps; ++step) {
    s.model->zero_grad();
    const auto pass = [&] {
      const float loss = loss_and_backward(*s.model, batch(step), s.classes);
      ddp.finish_backward();
      return loss;
    };
    trace.losses.push_back(mixed ? on_rounded_parameters(*s.model, param_dtype, pass) : pass());
    adamw.step();
    trace.parameters.push_back(mixed ? values_by_unit(*s.model, *s.blocks)
                                     : testing::parameter_values(*s.model));
  }
  return trace;
}

// The parameters recorded after each step are the full values, or with 16-bit parameters the
// f32 masters.
Trace train_sharded(Subject s, const std::function<Batch(int64_t)>& batch,
                    const ShardingOptions& options) {
  const std::vector<int64_t> sizes = unit_sizes(s);
  ShardedDataParallel sdp(*s.model, *s.blocks, world(), options);
  optim::AdamW adamw(sdp.shard_parameters(), kAdamW);
  const bool mixed = options.param_dtype != DType::kF32;
  nn::Autocast autocast(options.param_dtype, mixed);
  Trace trace;
  for (int64_t step = 0; step < kSteps; ++step) {
    sdp.zero_grad();
    trace.losses.push_back(loss_and_backward(sdp, batch(step), s.classes));
    adamw.step();
    sdp.after_step();
    if (mixed) {
      trace.parameters.push_back(gathered_masters(sdp, sizes));
      continue;
    }
    sdp.gather_all();
    trace.parameters.push_back(testing::parameter_values(*s.model));
    if (policy_of(options.sharding).reshard_after_backward) sdp.release_all();
  }
  return trace;
}

void expect_same_training(const Trace& sharded, const Trace& ddp, const std::string& what) {
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_TRUE(testing::all_close({sharded.losses[step]}, {ddp.losses[step]}, kParity))
        << what << ", loss of step " << step << " on rank " << world()->rank();
    EXPECT_TRUE(testing::all_close(sharded.parameters[step], ddp.parameters[step], kParity))
        << what << ", parameters after step " << step << " on rank " << world()->rank();
  }
}

// Every strategy with every prefetch choice for the GPT.
TEST(ShardedParity, GptTrainsAsDdpWithEveryStrategyAndPrefetch) {
  const Trace ddp = train_ddp(gpt_subject(), gpt_batch);
  for (const std::string& name : sharding_names()) {
    for (BackwardPrefetch prefetch :
         {BackwardPrefetch::kNone, BackwardPrefetch::kPre, BackwardPrefetch::kPost}) {
      const ShardingOptions options{.sharding = parse_sharding(name),
                                    .backward_prefetch = prefetch,
                                    .forward_prefetch = prefetch == BackwardPrefetch::kPre,
                                    .shard_group_size = kHybridGroup};
      expect_same_training(
          train_sharded(gpt_subject(), gpt_batch, options), ddp,
          name + " backward prefetch " + std::to_string(static_cast<int>(prefetch)));
    }
  }
}

TEST(ShardedParity, LlamaTrainsAsDdpWithEveryStrategy) {
  const Trace ddp = train_ddp(llama_subject(), gpt_batch);
  for (const std::string& name : sharding_names()) {
    expect_same_training(
        train_sharded(llama_subject(), gpt_batch,
                      {.sharding = parse_sharding(name), .shard_group_size = kHybridGroup}),
        ddp, "llama, " + name);
  }
}

TEST(ShardedParity, CpuOffloadTrainsAsDdp) {
  const Trace ddp = train_ddp(gpt_subject(), gpt_batch);
  for (const std::string name : {"zero2", "zero3"}) {
    expect_same_training(train_sharded(gpt_subject(), gpt_batch,
                                       {.sharding = parse_sharding(name), .cpu_offload = true}),
                         ddp, name + " with CPU offload");
  }
}

// bf16 parameters for compute: every strategy against DDP computing from bf16-rounded weights.
TEST(ShardedParity, BF16ParametersTrainAsDdpOnRoundedWeights) {
  const Trace reference = train_ddp(gpt_subject(), gpt_batch, DType::kBF16);
  for (const std::string& name : sharding_names()) {
    expect_same_training(train_sharded(gpt_subject(), gpt_batch,
                                       {.sharding = parse_sharding(name),
                                        .shard_group_size = kHybridGroup,
                                        .param_dtype = DType::kBF16}),
                         reference, name + " with bf16 parameters");
  }
  expect_same_training(
      train_sharded(
          gpt_subject(), gpt_batch,
          {.sharding = Sharding::kZero3, .cpu_offload = true, .param_dtype = DType::kBF16}),
      reference, "zero3 with bf16 parameters and CPU offload");
}

// What the layers see is 16-bit: the gathered values, and so the bytes the gathers move.
TEST(ShardedParity, BF16ParametersAreGatheredInBF16) {
  Subject s = gpt_subject();
  ShardedDataParallel sdp(*s.model, *s.blocks, world(),
                          {.sharding = Sharding::kZero3, .param_dtype = DType::kBF16});
  sdp.communicator().reset_traffic();
  sdp.gather_all();
  for (nn::Parameter* p : s.model->parameters()) EXPECT_EQ(p->value.dtype(), DType::kBF16);
  const int n = world()->size();
  double padded_bytes = 0;
  for (const auto& [name, shard] : sdp.shard_parameters())
    padded_bytes += 2.0 * shard->value.numel() * n;
  EXPECT_DOUBLE_EQ(sdp.communicator().traffic().all_gather_bytes, padded_bytes * (n - 1) / n);
}

// The layers keep their compute copies of a parameter from forward to backward unless told the
// parameter is released between the passes: that mark must be on exactly the parameters a
// strategy frees after forward (zero3 and hybrid-shard's blocks, not their root), else ZeRO-3
// would keep 16-bit copies of every block's weights.
TEST(ShardedParity, ParametersFreedAfterForwardAreMarkedReleasedBetweenThePasses) {
  for (const std::string& name : sharding_names()) {
    Subject s = gpt_subject();
    ShardedDataParallel sdp(*s.model, *s.blocks, world(),
                            {.sharding = parse_sharding(name), .shard_group_size = kHybridGroup});
    sdp.forward(gpt_batch(0).input);
    int released = 0;
    for (nn::Parameter* p : s.model->parameters()) {
      EXPECT_EQ(p->released_between_passes, !p->value.defined()) << name;
      released += p->released_between_passes;
    }
    EXPECT_EQ(released > 0, name == "zero3" || name == "hybrid-shard") << name;
  }
}

// DeepSpeed's zero_optimization keys change when the reductions and gathers run and which
// collective they use, never the sums: each setting trains as DDP does. The GPT's units hold
// 96 to 1,280 elements, so a bucket of 1,500 closes every other unit or two, unevenly.
TEST(ShardedParity, DeepSpeedsBucketsAndOverlapTrainAsDdp) {
  const Trace ddp = train_ddp(gpt_subject(), gpt_batch);
  const std::vector<std::pair<std::string, ZeroCommunication>> settings = {
      {"one bucket of 5e8, no overlap",
       {.reduce_bucket_elements = 500'000'000,
        .allgather_bucket_elements = 500'000'000,
        .overlap = false}},
      {"buckets of 1,500, all-reduce",
       {.reduce_bucket_elements = 1500,
        .allgather_bucket_elements = 1500,
        .reduce_scatter = false}},
      {"each unit alone, gathered one at a time, all-reduce without overlap",
       {.reduce_bucket_elements = 1,
        .allgather_bucket_elements = 1,
        .overlap = false,
        .reduce_scatter = false}}};
  for (const std::string name : {"zero1", "zero2", "zero3"}) {
    for (const auto& [what, communication] : settings) {
      expect_same_training(
          train_sharded(gpt_subject(), gpt_batch,
                        {.sharding = parse_sharding(name), .communication = communication}),
          ddp, name + ", " + what);
    }
  }
}

// DeepSpeed's stage-3 keys change which values are gathered when, never the sums: each setting
// trains as DDP does on the strategies that free parameters. The GPT's tensors hold 27 to 2,916
// elements (its blocks 9,099): a threshold of 64 keeps the LayerNorms and the 27-wide biases of
// every block and of the root gathered, cutting each in two units; 1e5 keeps every tensor; a
// bucket of one element prefetches one block ahead; a live cap of 3,000 stops every prefetch
// (the root and a block are already more).
TEST(ShardedParity, DeepSpeedsStage3FetchingTrainsAsDdp) {
  const Trace ddp = train_ddp(gpt_subject(), gpt_batch);
  const std::vector<std::pair<std::string, ZeroCommunication>> settings = {
      {"DeepSpeed's defaults",
       {.prefetch_bucket_elements = 50'000'000, .persistence_threshold = 100'000}},
      {"a bucket of one element, tensors of up to 64 persistent",
       {.prefetch_bucket_elements = 1, .persistence_threshold = 64}},
      {"a bucket of 20,000 elements with at most 3,000 live",
       {.prefetch_bucket_elements = 20'000, .max_live_elements = 3000}},
      {"no prefetch, tensors of up to 64 persistent, reduce buckets of 1,500",
       {.reduce_bucket_elements = 1500,
        .prefetch_bucket_elements = 0,
        .persistence_threshold = 64}}};
  for (const std::string name : {"zero3", "shard-grad-op", "hybrid-shard"}) {
    for (const auto& [what, communication] : settings) {
      expect_same_training(train_sharded(gpt_subject(), gpt_batch,
                                         {.sharding = parse_sharding(name),
                                          .shard_group_size = kHybridGroup,
                                          .communication = communication}),
                           ddp, name + ", " + what);
    }
  }
}

// Between steps exactly the tensors at or below the threshold hold values, current ones (the
// updated shards gathered after the step: equal to what a full gather gives), and they are
// never marked as released between the passes.
TEST(ShardedParity, TensorsAtOrBelowThePersistenceThresholdStayGathered) {
  Subject s = gpt_subject();
  constexpr int64_t kThreshold = 64;
  std::vector<int64_t> numels;
  for (nn::Parameter* p : s.model->parameters()) numels.push_back(p->value.numel());
  ShardedDataParallel sdp(
      *s.model, *s.blocks, world(),
      {.sharding = Sharding::kZero3, .communication = {.persistence_threshold = kThreshold}});
  optim::AdamW adamw(sdp.shard_parameters(), kAdamW);
  sdp.zero_grad();
  loss_and_backward(sdp, gpt_batch(0), s.classes);
  adamw.step();
  sdp.after_step();
  const std::vector<nn::Parameter*> params = s.model->parameters();
  std::vector<std::vector<float>> kept;
  int persistent = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const bool persists = numels[i] <= kThreshold;
    EXPECT_EQ(params[i]->value.defined(), persists) << "parameter " << i << ", " << numels[i];
    EXPECT_FALSE(params[i]->released_between_passes && persists) << "parameter " << i;
    if (persists) kept.push_back(params[i]->value.to_vector<float>());
    persistent += persists;
  }
  EXPECT_GT(persistent, 0);
  EXPECT_LT(persistent, static_cast<int>(params.size()));
  sdp.gather_all();
  size_t k = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (numels[i] <= kThreshold) EXPECT_EQ(params[i]->value.to_vector<float>(), kept[k++]);
  }
}

// DeepSpeed's walk on hand-worked sizes: blocks of 100, 50, 300, 20 and 80 elements.
TEST(ShardedParity, Stage3PrefetchWalksAsDeepSpeedsFetchSubModule) {
  const std::vector<int64_t> elements = {100, 50, 300, 20, 80};
  const std::vector<bool> none(5, false);
  const auto walk = [&](const std::vector<bool>& held, int64_t live, size_t index, bool forward,
                        int64_t bucket, int64_t max_live = 1'000'000'000) {
    return stage3_prefetch_walk(elements, held, live, index, forward,
                                {.bucket_elements = bucket, .max_live_elements = max_live});
  };
  using Blocks = std::vector<size_t>;
  // 50 < 120 goes on; 350 stops it: the block that passes the bucket still goes.
  EXPECT_EQ(walk(none, 0, 0, true, 120), (Blocks{1, 2}));
  // A block already there is skipped, not counted: 50, 70, 150.
  EXPECT_EQ(walk({false, false, true, false, false}, 0, 0, true, 120), (Blocks{1, 3, 4}));
  EXPECT_EQ(walk(none, 0, 0, true, 1), (Blocks{1}));
  EXPECT_EQ(walk(none, 0, 0, true, 0), Blocks{});
  EXPECT_EQ(walk(none, 0, 4, false, 120), (Blocks{3, 2}));  // backward: 20, then 320
  EXPECT_EQ(walk(none, 0, 4, true, 120), Blocks{});         // nothing after the last
  // The live cap: 900 of 1,000 live leaves 100 (50, then 350); 1,000 leaves none.
  EXPECT_EQ(walk(none, 900, 0, true, 500, 1000), (Blocks{1, 2}));
  EXPECT_EQ(walk(none, 1000, 0, true, 500, 1000), Blocks{});
  EXPECT_EQ(walk(none, 1200, 0, true, 500, 1000), Blocks{});
}

// The bucket's rule itself, on three units of uneven sizes: nothing is sent before the waiting
// units hold reduce_bucket_elements; then all of them go together; overlap leaves them in
// flight (their full gradients bound) until the next bucket launches or backward ends, and
// without it they are complete at once. reduce_scatter false sends all-reduces.
TEST(ShardedParity, AReductionBucketLaunchesOnceItHoldsItsElements) {
  for (const bool overlap : {true, false}) {
    for (const bool scatter : {true, false}) {
      auto comm = world()->split(0, world()->rank());
      std::vector<nn::Parameter> params;
      for (int64_t n : {37, 64, 11}) params.emplace_back(zeros({n}), zeros({n}));
      std::vector<std::unique_ptr<ShardedUnit>> units;
      for (nn::Parameter& p : params) {
        units.push_back(std::make_unique<ShardedUnit>(std::vector<nn::Parameter*>{&p}, comm));
        units.back()->allocate_gradients();
      }
      const int64_t first_two = units[0]->padded_numel() + units[1]->padded_numel();
      ReductionBuckets buckets(
          {.reduce_bucket_elements = first_two, .overlap = overlap, .reduce_scatter = scatter},
          /*keep_full_gradients=*/false);
      const auto sent = [&] { return comm->traffic().collectives; };
      const int64_t before = sent();
      buckets.add(*units[0]);
      EXPECT_EQ(sent(), before) << "a bucket below its size launched";
      buckets.add(*units[1]);
      EXPECT_EQ(sent(), before + 2) << "the full bucket's two reductions";
      EXPECT_EQ(units[0]->has_gradients(), overlap) << "overlap " << overlap;
      const double scattered = comm->traffic().reduce_scatter_bytes;
      EXPECT_EQ(scattered > 0, scatter) << "reduce_scatter " << scatter;
      buckets.add(*units[2]);
      EXPECT_EQ(sent(), before + 2) << "the last unit waits for the end of backward";
      buckets.finish();
      EXPECT_EQ(sent(), before + 3);
      for (const auto& unit : units) EXPECT_FALSE(unit->has_gradients());
    }
  }
}

// NO_SHARD all-reduces whole gradients over a replica group of every rank, not over the world
// communicator: a step's bytes are still counted, as the ring all-reduce's 2 (n - 1) / n of
// them, as DDP's are.
TEST(ShardedParity, NoShardCountsTheBytesOfItsReplicaGroup) {
  Subject s = gpt_subject();
  const std::vector<int64_t> sizes = unit_sizes(s);
  ShardedDataParallel sdp(*s.model, *s.blocks, world(), {.sharding = Sharding::kNoShard});
  const double before = sdp.bytes_sent();
  sdp.zero_grad();
  loss_and_backward(sdp, gpt_batch(0), s.classes);
  const int n = world()->size();
  double gradient_bytes = 0;
  for (int64_t size : sizes) gradient_bytes += 4.0 * static_cast<double>(size);
  EXPECT_DOUBLE_EQ(sdp.bytes_sent() - before, 2.0 * (n - 1) / n * gradient_bytes);
}

// Convolutions, batch norm (its running statistics stay per rank, as with DDP) and stages of
// very different sizes.
TEST(ShardedParity, ResNetTrainsAsDdpWithEveryStrategy) {
  const Trace ddp = train_ddp(resnet_subject(), resnet_batch);
  for (const std::string& name : sharding_names()) {
    expect_same_training(
        train_sharded(resnet_subject(), resnet_batch,
                      {.sharding = parse_sharding(name), .shard_group_size = kHybridGroup}),
        ddp, name);
  }
  const Trace rounded = train_ddp(resnet_subject(), resnet_batch, DType::kBF16);
  expect_same_training(train_sharded(resnet_subject(), resnet_batch,
                                     {.sharding = Sharding::kZero3, .param_dtype = DType::kBF16}),
                       rounded, "zero3 with bf16 parameters");
}

TEST(ShardedParity, VisionTransformerTrainsAsDdpWithEveryStrategy) {
  const Trace ddp = train_ddp(vit_subject(), vit_batch);
  for (const std::string& name : sharding_names()) {
    expect_same_training(
        train_sharded(vit_subject(), vit_batch,
                      {.sharding = parse_sharding(name), .shard_group_size = kHybridGroup}),
        ddp, "vit, " + name);
  }
}

TEST(ShardedParity, CoatnetTrainsAsDdpWithEveryStrategy) {
  const Trace ddp = train_ddp(coatnet_subject(), coatnet_batch);
  for (const std::string& name : sharding_names()) {
    expect_same_training(
        train_sharded(coatnet_subject(), coatnet_batch,
                      {.sharding = parse_sharding(name), .shard_group_size = kHybridGroup}),
        ddp, "coatnet, " + name);
  }
}

// Its blocks checkpointed (each recomputed inside its unit's gathered parameters), sharded, as
// DDP trains the kept ones (the statistics moved once: common/nn/tests/micro_batches_test.cc).
TEST(ShardedParity, CheckpointedCoatnetTrainsAsDdp) {
  const Trace ddp = train_ddp(coatnet_subject(), coatnet_batch);
  for (const Sharding sharding : {Sharding::kZero3, Sharding::kShardGradOp}) {
    Subject checkpointed = coatnet_subject();
    nn::checkpoint_blocks(*checkpointed.model);
    expect_same_training(
        train_sharded(std::move(checkpointed), coatnet_batch, {.sharding = sharding}), ddp,
        "checkpointed coatnet, " + sharding_name(sharding));
  }
}

}  // namespace
}  // namespace course::parallel
