// Admission, the mixed prefill/decode step, and retirement.
#include "common/models/gpt/generation_engine.h"

#include <algorithm>

#include "common/core/error.h"

namespace course::nn {

GenerationEngine::GenerationEngine(Gpt& model, const KvCacheOptions& cache)
    : model_(model),
      cache_(model.config(), cache, model.token_table().value.device()),
      decoder_(model, cache_) {
  for (int s = static_cast<int>(cache.sequences) - 1; s >= 0; --s) free_slots_.push_back(s);
}

int GenerationEngine::add(GenerationRequest request) {
  const GptConfig& config = model_.config();
  const int64_t length = static_cast<int64_t>(request.prompt.size());
  COURSE_CHECK(length > 0, "a generation request needs a prompt of at least one token");
  COURSE_CHECK(request.max_new_tokens > 0, "a generation request needs a positive token budget");
  COURSE_CHECK(length + request.max_new_tokens <= config.context, "a prompt of ", length,
               " tokens and ", request.max_new_tokens, " new ones exceed the context of ",
               config.context, " tokens");
  for (const int32_t token : request.prompt) {
    COURSE_CHECK(token >= 0 && token < config.vocabulary, "prompt token ", token,
                 " is outside the vocabulary of ", config.vocabulary);
  }
  COURSE_CHECK(cache_.blocks_for(length + request.max_new_tokens) <= cache_.options().blocks,
               "a request of ", length + request.max_new_tokens,
               " positions needs more blocks than the key/value cache holds (",
               cache_.options().blocks, ")");
  check_sampling(request.sampling);
  requests_.push_back(std::move(request));
  results_.emplace_back();
  waiting_.push_back(static_cast<int>(requests_.size()) - 1);
  return static_cast<int>(requests_.size()) - 1;
}

void GenerationEngine::admit() {
  while (!waiting_.empty() && !free_slots_.empty()) {
    const GenerationRequest& r = requests_[waiting_.front()];
    const int64_t positions = static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens;
    if (!cache_.fits(positions)) return;  // in arrival order: the next waits for blocks too
    const int slot = free_slots_.back();
    free_slots_.pop_back();
    cache_.reserve(slot, positions);
    running_.push_back({waiting_.front(), slot, std::mt19937(r.seed)});
    waiting_.pop_front();
  }
}

void GenerationEngine::retire(size_t index) {
  cache_.release(running_[index].slot);
  free_slots_.push_back(running_[index].slot);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
}

bool GenerationEngine::step() {
  admit();
  if (running_.empty()) {
    COURSE_CHECK(waiting_.empty(), "a waiting request never fits the key/value cache");
    return false;
  }
  // Each request's rows: its whole prompt on its first step, else its last drawn token.
  DecoderRows rows;
  std::vector<int64_t> last_row;
  for (Running& run : running_) {
    const GenerationRequest& r = requests_[run.id];
    const std::vector<int32_t>& drawn = results_[run.id].tokens;
    const int64_t prompt = static_cast<int64_t>(r.prompt.size());
    const int64_t first = run.prefilled ? prompt + static_cast<int64_t>(drawn.size()) - 1 : 0;
    const int64_t end = prompt + static_cast<int64_t>(drawn.size());
    for (int64_t p = first; p < end; ++p) {
      rows.tokens.push_back(p < prompt ? r.prompt[p] : drawn[p - prompt]);
      rows.sequences.push_back(run.slot);
      rows.positions.push_back(static_cast<int32_t>(p));
    }
    run.prefilled = true;
    last_row.push_back(static_cast<int64_t>(rows.tokens.size()) - 1);
  }
  const std::vector<float> logits = decoder_.logits(rows).to_vector<float>();
  const int64_t vocabulary = model_.config().vocabulary;
  ++stats_.steps;
  stats_.rows += static_cast<int64_t>(rows.tokens.size());
  stats_.largest_batch = std::max<int64_t>(stats_.largest_batch, running_.size());
  for (size_t i = running_.size(); i-- > 0;) {
    Running& run = running_[i];
    const GenerationRequest& r = requests_[run.id];
    GenerationResult& result = results_[run.id];
    const std::vector<float> row(logits.begin() + last_row[i] * vocabulary,
                                 logits.begin() + (last_row[i] + 1) * vocabulary);
    const int32_t token = sample_token(row, r.sampling, run.rng);
    if (r.keep_logits) result.logits.push_back(row);
    ++stats_.generated;
    if (r.stop_token && token == *r.stop_token) {
      result.stopped = true;
      retire(i);
      continue;
    }
    result.tokens.push_back(token);
    if (static_cast<int64_t>(result.tokens.size()) == r.max_new_tokens) retire(i);
  }
  return true;
}

std::vector<GenerationResult> GenerationEngine::run() {
  while (step()) {
  }
  return results_;
}

}  // namespace course::nn
