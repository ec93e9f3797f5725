// The embedded default text corpus of the transformer labs: Debian's `fortunes` package (about
// 2.5 MB of English quips, quotations and verse), read as documents separated by "%" lines,
// split into training and validation documents, and turned into token streams by the
// byte-level tokenizer (a token is a byte: vocabulary 256, nothing to train, every text
// representable).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor/tensor.h"

namespace course {

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";
inline constexpr int64_t kByteVocabulary = 256;

// Every fortune of every text file in `dir` (the index files *.dat and the *.u8 links are
// skipped), files in name order. Throws when the folder is missing or holds no fortunes.
std::vector<std::string> load_fortunes(const std::string& dir);

// Byte-level tokenizer.
Tensor encode_bytes(const std::string& text);  // (n,) i32 in [0, 256)
std::string decode_bytes(const std::vector<int32_t>& tokens);

struct TokenSplit {
  Tensor train, val;  // (n,) i32 token streams, documents joined by a newline
};

// Every document goes to validation with probability `val_fraction` (decided by a seeded
// draw per document, so the split never depends on file order), the rest to training.
TokenSplit split_documents(const std::vector<std::string>& documents, double val_fraction,
                           uint32_t seed);

// `count` uniformly random tokens in [0, vocabulary), seeded, the last `val_fraction` of them
// (rounded) for validation: a throughput run's stream for a vocabulary no text here is tokenized
// for (GPT-2's), nothing in it to learn.
TokenSplit random_tokens(int64_t count, int64_t vocabulary, double val_fraction, uint32_t seed);

// Entropy in nats of the token frequencies of `tokens`: the loss of the best model that ignores
// context, the bar a language model must get well under.
double unigram_entropy(const Tensor& tokens);

}  // namespace course
