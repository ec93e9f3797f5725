// Reading fortunes, the byte tokenizer, the document split and the unigram entropy.
#include "common/data/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "common/core/error.h"

namespace course {

namespace {

namespace fs = std::filesystem;

void append_fortunes(const fs::path& file, std::vector<std::string>& out) {
  std::ifstream in(file, std::ios::binary);
  COURSE_CHECK(in.good(), "cannot read ", file.string());
  std::string line, current;
  while (std::getline(in, line)) {
    if (line == "%") {
      if (!current.empty()) out.push_back(std::move(current));
      current.clear();
      continue;
    }
    current += line;
    current += '\n';
  }
  if (!current.empty()) out.push_back(std::move(current));
}

}  // namespace

std::vector<std::string> load_fortunes(const std::string& dir) {
  std::error_code error;
  COURSE_CHECK(fs::is_directory(dir, error), "text corpus ", dir,
               " not found (install Debian's fortunes package: ./setup.sh)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path& p = entry.path();
    if (entry.is_regular_file() && !entry.is_symlink() && p.extension() != ".dat" &&
        p.extension() != ".u8") {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> documents;
  for (const fs::path& f : files) append_fortunes(f, documents);
  COURSE_CHECK(!documents.empty(), "text corpus ", dir, " holds no fortunes");
  return documents;
}

Tensor encode_bytes(const std::string& text) {
  std::vector<int32_t> tokens(text.size());
  std::transform(text.begin(), text.end(), tokens.begin(),
                 [](char c) { return static_cast<int32_t>(static_cast<unsigned char>(c)); });
  return Tensor::from_vector(tokens, {static_cast<int64_t>(tokens.size())}, Device::cpu());
}

std::string decode_bytes(const std::vector<int32_t>& tokens) {
  std::string text(tokens.size(), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    COURSE_CHECK(tokens[i] >= 0 && tokens[i] < kByteVocabulary, "token ", tokens[i],
                 " is not a byte");
    text[i] = static_cast<char>(tokens[i]);
  }
  return text;
}

TokenSplit split_documents(const std::vector<std::string>& documents, double val_fraction,
                           uint32_t seed) {
  COURSE_CHECK(val_fraction > 0 && val_fraction < 1, "the validation fraction must be in (0, 1)");
  std::mt19937 rng(seed);
  std::bernoulli_distribution to_val(val_fraction);
  std::string train, val;
  for (const std::string& d : documents) {
    std::string& side = to_val(rng) ? val : train;
    side += d;
    side += '\n';
  }
  COURSE_CHECK(!train.empty() && !val.empty(), "too few documents (", documents.size(),
               ") to split into training and validation");
  return {encode_bytes(train), encode_bytes(val)};
}

TokenSplit random_tokens(int64_t count, int64_t vocabulary, double val_fraction, uint32_t seed) {
  COURSE_CHECK(val_fraction > 0 && val_fraction < 1, "the validation fraction must be in (0, 1)");
  COURSE_CHECK(vocabulary > 0 && vocabulary <= std::numeric_limits<int32_t>::max(),
               "a vocabulary of ", vocabulary, " tokens");
  const auto val = static_cast<int64_t>(std::llround(val_fraction * static_cast<double>(count)));
  COURSE_CHECK(val > 0 && val < count, count, " random tokens do not split into training and ",
               "validation at ", val_fraction);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> draw(0, static_cast<int32_t>(vocabulary - 1));
  std::vector<int32_t> tokens(count);
  for (int32_t& t : tokens) t = draw(rng);
  const Tensor all = Tensor::from_vector(tokens, {count}, Device::cpu());
  return {all.slice(0, count - val).clone(), all.slice(count - val, count).clone()};
}

double unigram_entropy(const Tensor& tokens) {
  const std::vector<int32_t> values = tokens.to_vector<int32_t>();
  std::vector<int64_t> counts(kByteVocabulary);
  for (int32_t t : values) {
    COURSE_CHECK(t >= 0, "token ", t, " is negative");
    if (static_cast<size_t>(t) >= counts.size()) counts.resize(t + 1);
    ++counts[t];
  }
  double entropy = 0;
  for (int64_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(values.size());
    entropy -= p * std::log(p);
  }
  return entropy;
}

}  // namespace course
