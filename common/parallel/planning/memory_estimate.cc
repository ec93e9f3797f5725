// The memory estimate, component by component. a = batch x tokens x channels: the size of one
// activation of the residual stream; s = bytes of the compute dtype. What each layer saves is
// what its forward puts in its context (common/nn): LayerNorm and RMSNorm their f32 input and
// per-token statistics, Linear its input in the compute dtype (and under autocast from f32
// parameters its cast of the weight, unless sharding frees the weight between the passes),
// attention q, k, v and its output by head plus a per-query log-sum-exp, GELU and SwiGLU their
// input.
#include "common/parallel/planning/memory_estimate.h"

#include <algorithm>
#include <cstdio>

#include "common/core/error.h"
#include "common/core/format.h"
#include "common/parallel/data_parallel/bucket_plan.h"
#include "common/parallel/data_parallel/sharding.h"
#include "common/tensor/allocator.h"

namespace course::parallel {

namespace {

constexpr int64_t kF32 = 4;

int64_t blocks(int64_t count, int64_t bytes) { return allocator_bytes(count, bytes); }

int64_t padded(int64_t numel, int ranks) { return (numel + ranks - 1) / ranks * ranks; }

// The element counts of a GPT's parameters in parameters() order: the embeddings before the
// blocks, each block's, the rest after. GPT-2: wte, wpe, each block's ln_1, c_attn, attention
// c_proj, ln_2, c_fc, MLP c_proj (weight then bias), the final LayerNorm (the output layer's
// weight is the token embedding). Llama: wte, each block's attention_norm, wqkv, wo, ffn_norm,
// w13, w2, the final RMSNorm, and lm_head when untied.
// The element counts of a block's weight matrices, in order: the query-key-value and output
// projections of attention, the MLP's expansion (Llama: its gate and up together) and projection.
std::vector<int64_t> block_matrices(const nn::GptConfig& m) {
  const int64_t c = m.channels;
  if (m.llama()) {
    const int64_t f = m.feed_forward_width();
    const int64_t qkv = (m.heads + 2 * m.key_value_heads()) * m.head_dim();
    return {qkv * c, c * c, 2 * f * c, f * c};
  }
  return {3 * c * c, c * c, 4 * c * c, 4 * c * c};
}

ParameterLayout gpt_parameters(const nn::GptConfig& m) {
  const int64_t c = m.channels;
  const std::vector<int64_t> w = block_matrices(m);
  std::vector<int64_t> block;
  ParameterLayout p;
  if (m.llama()) {
    p.before = {m.vocabulary * c};
    block = {c, w[0], w[1], c, w[2], w[3]};
    p.after = {c};
    if (!m.tied_head) p.after.push_back(m.vocabulary * c);
  } else {
    p.before = {m.vocabulary * c, m.context * c};
    block = {c, c, w[0], 3 * c, w[1], c, c, c, w[2], 4 * c, w[3], c};
    p.after = {c, c};
  }
  p.units.assign(m.layers, block);
  return p;
}

struct Sizes {
  int64_t tokens;      // batch x context (this rank's part of it under context parallelism)
  int64_t a;           // tokens x channels
  int64_t s;           // bytes of the compute dtype
  int64_t logits;      // tokens x vocabulary
  int64_t statistics;  // bytes of a normalisation's per-token statistics
  int64_t expanded;    // elements of the MLP's expansion (GELU's or SwiGLU's input)
  int64_t hidden;      // elements of the MLP projection's input
};

Sizes sizes_of(const MemoryPlan& p) {
  const int64_t context = p.context > 0 ? p.context : p.model.context;
  COURSE_CHECK(p.context_parallel == 1 ||
                   (p.context_parallel > 1 && context % (2 * p.context_parallel) == 0),
               "a context of ", context, " does not cut into 2 x ", p.context_parallel,
               " chunks for context parallelism");
  const int64_t tokens = p.batch * context / p.context_parallel;
  const bool llama = p.model.llama();
  return {.tokens = tokens,
          .a = tokens * p.model.channels,
          .s = static_cast<int64_t>(dtype_size(p.compute)),
          .logits = tokens * p.model.vocabulary,
          .statistics = (llama ? 1 : 2) * kF32 * tokens,  // rstd (and LayerNorm's mean)
          .expanded = tokens * p.model.feed_forward_expansion(),
          .hidden = tokens * p.model.feed_forward_width()};
}

// The output of a normalisation (f32) as the next Linear saves it: itself under f32, else its
// cast.
int64_t linear_input(const Sizes& z) { return blocks(1, z.s * z.a); }

// What one block's forward saves, beyond its input: per normalisation its per-token statistics
// and the Linear's copy of its output; q, k, v and the attention's output by head, its
// per-query log-sum-exp, the attention's output (the output projection's input); the residual
// stream after attention (the second normalisation's input); the activation's input (GELU's,
// or SwiGLU's gate | up) and output (the MLP projection's input); the block's output.
int64_t block_activations(const Sizes& z, int64_t heads) {
  return 2 * (blocks(1, z.statistics) + linear_input(z)) + blocks(1, 3 * z.s * z.a) +
         2 * blocks(1, z.s * z.a) + blocks(1, kF32 * z.tokens * heads) + 2 * blocks(1, kF32 * z.a) +
         blocks(1, z.s * z.expanded) + blocks(1, z.s * z.hidden);
}

// The casts of weight matrices that products make in forward and keep for backward
// (Module::kept_for_backward): only under a 16-bit compute dtype from f32 parameters, and a
// block's only where sharding keeps its parameters between the passes.
struct KeptCasts {
  int64_t block = 0;  // all of one block's matrices
  int64_t head = 0;   // the output layer's
};

KeptCasts kept_casts(const MemoryPlan& p, const Sizes& z) {
  KeptCasts kept;
  if (z.s == kF32 || p.state.param_dtype != DType::kF32) return kept;
  kept.head = blocks(1, z.s * p.model.vocabulary * p.model.channels);
  if (p.state.sharding && policy_of(*p.state.sharding).reshard_after_forward) return kept;
  for (int64_t matrix : block_matrices(p.model)) kept.block += blocks(1, z.s * matrix);
  return kept;
}

void add_activations(const MemoryPlan& p, const Sizes& z, MemoryEstimate& e) {
  const int64_t layers = p.model.layers;
  std::vector<ActivationPart> parts = {
      {"embedding (tokens and its output)", blocks(1, 4 * z.tokens) + blocks(1, kF32 * z.a)}};
  const int64_t block = block_activations(z, p.model.heads);
  if (p.checkpoint_activations) {
    // Each block keeps its input; the one being backed up recomputes everything it saves.
    parts.push_back({"checkpointed block output", blocks(1, kF32 * z.a), layers});
    parts.push_back({"recomputed block", block});
  } else {
    parts.push_back({"block", block, layers});
  }
  parts.push_back(
      {"final normalisation and output layer", blocks(1, z.statistics) + linear_input(z)});
  parts.push_back(
      {"logits and loss probabilities", blocks(1, z.s * z.logits) + blocks(1, kF32 * z.logits)});
  // Checkpointed, only the block being backed up keeps its casts.
  const KeptCasts kept = kept_casts(p, z);
  const int64_t casts = kept.head + kept.block * (p.checkpoint_activations ? 1 : layers);
  if (casts > 0) parts.push_back({"weight casts kept for backward", casts});
  for (const ActivationPart& part : parts) e.activations += part.total();
  e.activation_layers = std::move(parts);
}

}  // namespace

int64_t allocator_bytes(int64_t count, int64_t bytes) {
  return count * static_cast<int64_t>(CachingAllocator::rounded_size(static_cast<size_t>(bytes)));
}

namespace {

// A group of tensors (the root, a unit) cut at the persistence threshold: the elements freed
// between uses and those kept, each part its own flat parameter padded for `ranks`.
struct SplitGroup {
  int64_t freed = 0, kept = 0;                // elements, DeepSpeed's count
  int64_t freed_padded = 0, kept_padded = 0;  // as the shards cut them
};

SplitGroup split_group(const std::vector<int64_t>& tensors, int64_t threshold, int ranks) {
  SplitGroup g;
  for (int64_t numel : tensors) (persists(numel, threshold) ? g.kept : g.freed) += numel;
  g.freed_padded = padded(g.freed, ranks);
  g.kept_padded = padded(g.kept, ranks);
  return g;
}

int64_t held_bytes(int64_t bytes) { return bytes > 0 ? blocks(1, bytes) : 0; }

// The most bytes of blocks' full values DeepSpeed's stage-3 prefetch holds at once over a step:
// its walk run on the sizes, each block gathered, the walk launched, the block freed after use.
int64_t stage3_gathered_peak(const std::vector<SplitGroup>& units, int64_t always_live,
                             int64_t value_bytes, PrefetchBudget budget) {
  const size_t count = units.size();
  std::vector<int64_t> elements;
  for (const SplitGroup& u : units) elements.push_back(u.freed);
  std::vector<bool> held(count);
  const auto always_there = [&](size_t u) { return units[u].freed == 0; };
  int64_t peak = 0;
  for (bool forward : {true, false}) {
    for (size_t k = 0; k < count; ++k) {
      const size_t u = forward ? k : count - 1 - k;
      for (size_t v = 0; v < count; ++v) held[v] = held[v] || always_there(v);
      held[u] = true;
      int64_t live = always_live;
      for (size_t v = 0; v < count; ++v) live += held[v] ? elements[v] : 0;
      for (size_t v : stage3_prefetch_walk(elements, held, live, u, forward, budget))
        held[v] = true;
      int64_t bytes = 0;
      for (size_t v = 0; v < count; ++v)
        bytes += held[v] ? held_bytes(value_bytes * units[v].freed_padded) : 0;
      peak = std::max(peak, bytes);
      held[u] = false;
    }
  }
  return peak;
}

// FSDP's prefetch: ZeRO-3 holds the unit being backed up and the one prefetched (before its
// gradients: BACKWARD_PRE), the largest such pair; the strategies keeping parameters, every unit.
int64_t fsdp_gathered_peak(const std::vector<SplitGroup>& units, const StatePlan& p,
                           int64_t value_bytes) {
  const int64_t count = static_cast<int64_t>(units.size());
  const bool frees = policy_of(*p.sharding).reshard_after_forward;
  const int64_t window = frees ? 1 + (p.backward_prefetch ? 1 : 0) : count;
  int64_t peak = 0;
  for (int64_t u = 0; u < count; ++u) {
    int64_t held = 0;
    for (int64_t v = u; v < std::min(count, u + window); ++v)
      held += held_bytes(value_bytes * units[v].freed_padded);
    peak = std::max(peak, held);
  }
  return peak;
}

void add_sharded_state(const StatePlan& p, const ParameterLayout& layout, int64_t states,
                       MemoryEstimate& e) {
  const ShardingPolicy policy = policy_of(*p.sharding);
  // One copy of the model is cut over the shard group (hybrid-shard, no-shard: not every rank).
  const int n = shard_group_size({.sharding = *p.sharding, .shard_group_size = p.shard_group_size},
                                 p.ranks, p.ranks);
  std::vector<int64_t> root_tensors = layout.before;
  root_tensors.insert(root_tensors.end(), layout.after.begin(), layout.after.end());
  const SplitGroup root = split_group(root_tensors, p.persistence_threshold, n);
  std::vector<SplitGroup> units;
  for (const std::vector<int64_t>& unit : layout.units)
    units.push_back(split_group(unit, p.persistence_threshold, n));
  const int64_t value_bytes = static_cast<int64_t>(dtype_size(p.param_dtype));
  // Full values: the root's for the whole step, the persistent parts always, the blocks' as
  // the prefetch holds them.
  int64_t always =
      held_bytes(value_bytes * root.freed_padded) + held_bytes(value_bytes * root.kept_padded);
  int64_t always_live = root.freed + root.kept, largest = 0, all_units = 0;
  int64_t shards =
      held_bytes(kF32 * root.freed_padded / n) + held_bytes(kF32 * root.kept_padded / n);
  for (const SplitGroup& u : units) {
    always += held_bytes(value_bytes * u.kept_padded);
    always_live += u.kept;
    largest = std::max(largest, u.freed_padded + u.kept_padded);
    shards += held_bytes(kF32 * u.freed_padded / n) + held_bytes(kF32 * u.kept_padded / n);
    all_units += held_bytes(kF32 * u.freed_padded) + held_bytes(kF32 * u.kept_padded);
  }
  const bool stage3 = p.stage3_prefetch && policy.reshard_after_forward;
  e.parameters =
      always + (stage3 ? stage3_gathered_peak(units, always_live, value_bytes, *p.stage3_prefetch)
                       : fsdp_gathered_peak(units, p, value_bytes));
  // Full gradients: ZeRO-1 keeps all of them; the others the root's and one unit's at a time.
  const int64_t root_padded = root.freed_padded + root.kept_padded;
  e.gradients = blocks(1, kF32 * root_padded) +
                (policy.keep_full_gradients ? all_units : blocks(1, kF32 * largest));
  if (p.cpu_offload) {
    e.offloaded = (2 + states) * shards;
  } else {
    e.parameters += shards;
    e.gradients += shards;
    e.optimizer_states = states * shards;
  }
  // The reduce-scatter outputs in flight: the root's and a unit's.
  e.communication = blocks(1, kF32 * root_padded / n) + blocks(1, kF32 * largest / n);
}

}  // namespace

void add_model_state(const StatePlan& p, const ParameterLayout& layout, MemoryEstimate& e) {
  const int64_t states = optim::state_tensors_per_parameter(p.optimizer);
  if (!p.sharding) {
    // Every parameter its own value, gradient and states; DDP's buckets hold every gradient.
    std::vector<int64_t> bytes;
    for (int64_t numel : layout.before) bytes.push_back(kF32 * numel);
    for (const std::vector<int64_t>& unit : layout.units) {
      for (int64_t numel : unit) bytes.push_back(kF32 * numel);
    }
    for (int64_t numel : layout.after) bytes.push_back(kF32 * numel);
    int64_t each = 0;
    for (int64_t b : bytes) each += blocks(1, b);
    e.parameters = each;
    e.gradients = each;
    e.optimizer_states = states * each;
    if (p.ranks > 1) {
      for (const std::vector<size_t>& bucket :
           plan_gradient_buckets(bytes, p.bucket_bytes, p.first_bucket_bytes)) {
        int64_t bucket_bytes = 0;
        for (size_t i : bucket) bucket_bytes += bytes[i];
        e.communication += blocks(1, bucket_bytes);
      }
    }
    return;
  }
  add_sharded_state(p, layout, states, e);
}

int64_t MemoryEstimate::total() const {
  return parameters + gradients + optimizer_states + activations + communication + temporaries;
}

MemoryEstimate estimate_memory(const MemoryPlan& plan) {
  COURSE_CHECK(plan.state.ranks >= 1 && plan.batch >= 1,
               "a memory estimate needs ranks and batch >= 1");
  const Sizes z = sizes_of(plan);
  MemoryEstimate e;
  add_model_state(plan.state, gpt_parameters(plan.model), e);
  add_activations(plan, z, e);
  // Alive with everything above while the last block's MLP is backed up: the loss's f32
  // gradient (and its cast to the compute dtype), the residual stream's gradient (and its
  // cast), and the activation's input and output gradients (one of its saved tensors is
  // released).
  const bool cast = z.s != kF32;
  e.temporaries = blocks(1, kF32 * z.logits) + (cast ? blocks(1, z.s * z.logits) : 0) +
                  blocks(1, kF32 * z.a) + (cast ? blocks(1, z.s * z.a) : 0) +
                  blocks(1, z.s * z.expanded);
  return e;
}

std::string describe(const MemoryEstimate& e) {
  std::string out;
  const auto line = [&out](const std::string& name, int64_t bytes) {
    char text[160];
    std::snprintf(text, sizeof(text), "  %-40s %12s\n", name.c_str(), format_bytes(bytes).c_str());
    out += text;
  };
  line("parameters", e.parameters);
  line("gradients", e.gradients);
  line("optimizer states", e.optimizer_states);
  line("activations", e.activations);
  for (const ActivationPart& part : e.activation_layers) {
    const bool each = part.count > 1;
    line("  " + part.name + (each ? " (each of " + std::to_string(part.count) + ")" : ""),
         part.bytes);
  }
  line("communication buffers", e.communication);
  line("temporaries (loss gradient)", e.temporaries);
  line("total", e.total());
  if (e.offloaded > 0) line("offloaded to host memory (not in total)", e.offloaded);
  return out;
}

int64_t zero_paper_bytes(int64_t psi, int stage, int ranks) {
  COURSE_CHECK(stage >= 0 && stage <= 3 && ranks >= 1, "ZeRO stage 0-3 on >= 1 rank");
  constexpr int64_t kParams = 2, kGrads = 2, kOptimizer = 12;
  const int64_t n = ranks;
  switch (stage) {
    case 0:
      return (kParams + kGrads + kOptimizer) * psi;
    case 1:
      return (kParams + kGrads) * psi + kOptimizer * psi / n;
    case 2:
      return kParams * psi + (kGrads + kOptimizer) * psi / n;
    default:
      return (kParams + kGrads + kOptimizer) * psi / n;
  }
}

}  // namespace course::parallel
