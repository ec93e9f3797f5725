// How the GPT lab's ranks share a step: alone, DDP (--sharding none on several ranks), or
// sharded data parallelism (ZeRO 1-3, FSDP's strategies). The trainer runs forward and backward
// through net(), gives the optimizer optimized(), and calls finish_backward() and after_step()
// around the optimizer's step, whichever the mode.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/gpt.h"
#include "common/parallel/ddp.h"
#include "common/parallel/sharded_data_parallel.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

class DataParallelGpt {
 public:
  // Collective over `comm`.
  DataParallelGpt(course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> comm,
                  const GptLabOptions& options);

  course::nn::Module& net() { return sdp_ ? static_cast<course::nn::Module&>(*sdp_) : model_; }
  std::vector<std::pair<std::string, course::nn::Parameter*>> optimized();
  void finish_backward();        // DDP's gradient average (the sharded modes reduce in backward)
  void after_step();             // ZeRO-1/2's all-gather of the updated shards
  std::string describe() const;  // "zero3 over 4 ranks (backward prefetch pre)"

 private:
  course::nn::Gpt& model_;
  std::string description_;
  std::unique_ptr<course::parallel::DistributedDataParallel> ddp_;
  std::unique_ptr<course::parallel::ShardedDataParallel> sdp_;
};

}  // namespace day4
