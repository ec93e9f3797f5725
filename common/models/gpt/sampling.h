// The next token drawn from a language model's logits: greedy (temperature 0), or from
// softmax(logits / temperature) restricted to the k most likely tokens (top-k) and then to the
// fewest most likely whose probabilities add up to p (top-p, nucleus sampling, Holtzman et al.
// 2020), renormalised. As Hugging Face's generate applies them: temperature, top-k, top-p.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace course::nn {

struct SamplingOptions {
  float temperature = 1.0f;  // 0: greedy (the most likely token, the first of equals)
  int64_t top_k = 0;         // 0: every token
  float top_p = 1.0f;        // in (0, 1]; 1: every token
};

// Throws for a negative temperature or top-k, or a top-p outside (0, 1].
void check_sampling(const SamplingOptions& options);

// The distribution the token is drawn from: probabilities over the vocabulary, zero outside
// the kept tokens (greedy: one 1).
std::vector<double> sampling_distribution(const std::vector<float>& logits,
                                          const SamplingOptions& options);

int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& options,
                     std::mt19937& rng);

}  // namespace course::nn
