// Writing shards, and joining them into a whole model.
#include "common/train/sharded_checkpoint.h"

#include <filesystem>

#include "common/kernels/elementwise.h"

namespace course::train {

namespace {

constexpr const char* kShardedKey = "sharded";

}  // namespace

std::string shard_file(const std::string& path, int rank, int ranks) {
  return path + ".rank" + std::to_string(rank) + "-of-" + std::to_string(ranks);
}

void save_sharded_checkpoint(const std::string& path, parallel::ShardedDataParallel& sharded,
                             const NamedTensors& rank_tensors, const nlohmann::json& header) {
  const parallel::Communicator& comm = sharded.communicator();
  NamedTensors tensors = rank_tensors;
  for (const auto& [name, shard] : sharded.shard_parameters()) {
    tensors.emplace_back(name, &shard->value);
  }
  nlohmann::json with_layout = header;
  with_layout[kShardedKey] = {{"rank", comm.rank()}, {"ranks", comm.size()}};
  save_checkpoint(shard_file(path, comm.rank(), comm.size()), tensors, with_layout);
  const_cast<parallel::Communicator&>(comm).barrier();
}

nlohmann::json load_full_model(const std::string& path, int ranks, nn::Module& model,
                               nn::Sequential& blocks) {
  COURSE_CHECK(ranks >= 1, "a sharded checkpoint has at least one rank's file");
  const parallel::ShardingUnits units = parallel::sharding_units(model, blocks);
  // Each unit's flat values, padded to the rank count as the ranks cut them.
  std::vector<std::vector<float>> flat(units.size());
  std::vector<int64_t> shard_numel(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t numel = 0;
    for (const nn::Parameter* p : units[u].second) numel += p->value.numel();
    shard_numel[u] = (numel + ranks - 1) / ranks;
  }
  nlohmann::json first_header;
  for (int r = 0; r < ranks; ++r) {
    const std::string file = shard_file(path, r, ranks);
    COURSE_CHECK(std::filesystem::exists(file), "sharded checkpoint ", path, ": ", file,
                 " is missing (saved on ", ranks, " ranks?)");
    const nlohmann::json header = read_checkpoint_header(file);
    COURSE_CHECK(header.contains(kShardedKey) && header[kShardedKey].value("rank", -1) == r &&
                     header[kShardedKey].value("ranks", -1) == ranks,
                 file, " is not rank ", r, " of a sharded checkpoint on ", ranks, " ranks");
    std::vector<Tensor> shards;
    NamedTensors wanted;
    shards.reserve(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      shards.push_back(Tensor::empty({shard_numel[u]}));
      wanted.emplace_back(units[u].first + ".shard", &shards.back());
    }
    // The optimizer's per-rank states are in the file too; only the values are read.
    load_checkpoint(file, wanted, /*skip_others=*/true);
    for (size_t u = 0; u < units.size(); ++u) {
      const std::vector<float> part = shards[u].to_vector<float>();
      flat[u].insert(flat[u].end(), part.begin(), part.end());
    }
    if (r == 0) first_header = header;
  }
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t offset = 0;
    for (nn::Parameter* p : units[u].second) {
      const int64_t n = p->value.numel();
      const std::vector<float> part(flat[u].begin() + offset, flat[u].begin() + offset + n);
      copy_(p->value, Tensor::from_vector<float>(part, p->value.shape()).to(p->value.device()));
      offset += n;
    }
  }
  first_header.erase(kShardedKey);
  return first_header;
}

}  // namespace course::train
