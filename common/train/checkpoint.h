// Checkpoints: named tensors plus a JSON header, written atomically (a temporary file in the
// same directory, flushed, then renamed over the target), so an interrupted save never leaves a
// truncated checkpoint where a good one was.
//
// File layout: "COURSE-CKPT-1\n", u64 header length, header JSON, u64 tensor count, then per
// tensor: u32 name length, name, u8 dtype, u8 rank, i64 sizes, u64 byte count, raw bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

void save_checkpoint(const std::string& path, const NamedTensors& tensors,
                     const nlohmann::json& header);

// The header alone (to check what a checkpoint is of before loading it).
nlohmann::json read_checkpoint_header(const std::string& path);

// Reads `path` into the given tensors (in place, on their devices); every name must be present
// with the same dtype and shape, and the file must hold nothing else unless `skip_others`.
// Returns the header. Throws course::Error naming the problem.
nlohmann::json load_checkpoint(const std::string& path, const NamedTensors& tensors,
                               bool skip_others = false);

// Per-rank checkpoints (sharded data parallelism: each rank saves what only it holds): rank r of
// n writes "<path>.rank<r>-of-<n>", its header marked with rank_file_header(r, n) under
// "sharded".
std::string rank_file(const std::string& path, int rank, int ranks);
nlohmann::json with_rank_header(nlohmann::json header, int rank, int ranks);
// Throws unless `path` exists and its header says it is rank `rank` of `ranks`.
nlohmann::json read_rank_file_header(const std::string& path, int rank, int ranks);

}  // namespace course::train
