// Continuous batching (as vLLM schedules it, Yu et al.'s Orca): requests wait in arrival order;
// at each step every request that finds a free slot and free cache blocks joins the running
// batch, its whole prompt run in that step (prefill) next to the running requests' last tokens
// (decode); each request then draws its next token, and one that is done (its stop token, or
// its token budget) leaves the batch and frees its blocks for the next waiting request. The
// batch is never drained to admit new work, which is what keeps the device busy.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "common/models/gpt/cached_decoder.h"
#include "common/models/gpt/sampling.h"

namespace course::nn {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // at least one token; with max_new_tokens within the context
  int64_t max_new_tokens = 64;
  SamplingOptions sampling;
  std::optional<int32_t> stop_token;  // ends the request when drawn (not kept)
  uint32_t seed = 0;                  // the request's own draws: alike however it is batched
  bool keep_logits = false;           // record each drawn token's logits (tests)
};

struct GenerationResult {
  std::vector<int32_t> tokens;             // generated, the prompt not included
  bool stopped = false;                    // by the stop token (else by the budget)
  std::vector<std::vector<float>> logits;  // with keep_logits: per generated token
};

struct EngineStats {
  int64_t steps = 0, rows = 0, generated = 0;
  int64_t largest_batch = 0;  // requests running at once
};

class GenerationEngine {
 public:
  GenerationEngine(Gpt& model, const KvCacheOptions& cache);

  // Queues a request; returns its id (0, 1, ... in order). Throws for an empty prompt, tokens
  // outside the vocabulary, a prompt and budget beyond the context or the cache, bad sampling.
  int add(GenerationRequest request);
  // One step of the running batch (after admitting what fits); false when nothing is left.
  bool step();
  // Steps until every request is done; their results by id.
  std::vector<GenerationResult> run();
  const EngineStats& stats() const { return stats_; }

 private:
  struct Running {
    int id;
    int slot;
    std::mt19937 rng;
    bool prefilled = false;
  };
  void admit();
  void retire(size_t index);

  Gpt& model_;
  PagedKvCache cache_;
  CachedDecoder decoder_;
  std::vector<GenerationRequest> requests_;
  std::vector<GenerationResult> results_;
  std::deque<int> waiting_;
  std::vector<Running> running_;
  std::vector<int> free_slots_;
  EngineStats stats_;
};

}  // namespace course::nn
