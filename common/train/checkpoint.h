// Checkpoints: named tensors plus a JSON header, written atomically (a temporary file in the
// same directory, flushed, then renamed over the target), so an interrupted save never leaves a
// truncated checkpoint where a good one was.
//
// File layout: "COURSE-CKPT-1\n", u64 header length, header JSON, u64 tensor count, then per
// tensor: u32 name length, name, u8 dtype, u8 rank, i64 sizes, u64 byte count, raw bytes.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor/tensor.h"

namespace course::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

// Refuses (course::Error) to replace a file that is not a checkpoint: a user's file is never lost.
void save_checkpoint(const std::string& path, const NamedTensors& tensors,
                     const nlohmann::json& header);

// Fails when `path` is a file that holds something other than a checkpoint (an empty one is
// fine), naming `what` ("--chkpt"): the check a tool makes before its work, as save_checkpoint
// does before writing.
void check_overwritable(const std::string& what, const std::string& path);

// The header alone (to check what a checkpoint is of before loading it).
nlohmann::json read_checkpoint_header(const std::string& path);

// Reads `path` into the given tensors (in place, on their devices); every name must be present
// with the same dtype and shape, and the file must hold nothing else unless `skip_others`.
// Returns the header. Throws course::Error naming the problem.
nlohmann::json load_checkpoint(const std::string& path, const NamedTensors& tensors,
                               bool skip_others = false);

// Per-rank checkpoints (sharded data parallelism: each rank saves what only it holds): rank r of
// n writes "<stem>.rank<r>-of-<n><suffix>" next to <path> (model.ckpt: model.rank0-of-2.ckpt),
// its header marked with with_rank_header(r, n) under "sharded".
std::string rank_file(const std::string& path, int rank, int ranks);
// The number of ranks of the sharded checkpoint saved as `path`, when rank 0's file is there.
std::optional<int> sharded_ranks(const std::string& path);
nlohmann::json with_rank_header(nlohmann::json header, int rank, int ranks);
// Throws unless rank `rank`'s file of `path` exists and its header says it is rank `rank` of
// `ranks`; the message says how many ranks a checkpoint saved on others needs, or that `path`
// is one process's checkpoint.
nlohmann::json read_rank_file_header(const std::string& path, int rank, int ranks);

}  // namespace course::train
