// Writing shards, and joining them into a whole model.
#include "common/train/sharded_checkpoint.h"

#include <nlohmann/json.hpp>

#include "common/kernels/elementwise.h"

namespace course::train {

void save_sharded_checkpoint(const std::string& path, parallel::ShardedDataParallel& sharded,
                             const NamedTensors& rank_tensors, const nlohmann::json& header) {
  parallel::Communicator& comm = sharded.communicator();
  NamedTensors tensors = rank_tensors;
  for (const auto& [name, shard] : sharded.shard_parameters()) {
    tensors.emplace_back("model." + name, &shard->value);
  }
  nlohmann::json layout = header;
  layout["shard_group_size"] = sharded.shard_group_size();
  layout["persistence_threshold"] = sharded.persistence_threshold();
  save_checkpoint(rank_file(path, comm.rank(), comm.size()), tensors,
                  with_rank_header(layout, comm.rank(), comm.size()));
  comm.barrier();
}

nlohmann::json load_full_model(const std::string& path, int ranks, nn::Module& model,
                               nn::Sequential& blocks) {
  COURSE_CHECK(ranks >= 1, "a sharded checkpoint has at least one rank's file");
  // Hybrid sharding cuts each replica over a group of ranks: the first group's files hold it.
  nlohmann::json first_header = read_rank_file_header(path, 0, ranks);
  const int group = first_header.value("shard_group_size", ranks);
  const parallel::ShardingUnits units = parallel::sharding_units(
      model, blocks, first_header.value("persistence_threshold", int64_t{0}));
  COURSE_CHECK(group >= 1 && ranks % group == 0, "sharded checkpoint ", path, ": shard groups of ",
               group, " do not divide ", ranks, " ranks");
  // Each unit's flat values, padded to the group's size as its ranks cut them.
  std::vector<std::vector<float>> flat(units.size());
  std::vector<int64_t> shard_numel(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    int64_t numel = 0;
    for (const nn::Parameter* p : units[u].second) numel += p->value.numel();
    shard_numel[u] = (numel + group - 1) / group;
  }
  for (int r = 0; r < group; ++r) {
    read_rank_file_header(path, r, ranks);
    std::vector<Tensor> shards;
    NamedTensors wanted;
    shards.reserve(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      shards.push_back(Tensor::empty({shard_numel[u]}));
      wanted.emplace_back("model." + units[u].first + ".shard", &shards.back());
    }
    // The optimizer's per-rank states are in the file too; only the values are read.
    load_checkpoint(rank_file(path, r, ranks), wanted, /*skip_others=*/true);
    for (size_t u = 0; u < units.size(); ++u) {
      const std::vector<float> part = shards[u].to_vector<float>();
      flat[u].insert(flat[u].end(), part.begin(), part.end());
    }
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
  first_header.erase("sharded");
  first_header.erase("shard_group_size");
  first_header.erase("persistence_threshold");
  return first_header;
}

}  // namespace course::train
