// The GPT lab's data-parallel modes: the library's (one process, DDP, ZeRO 1-3, FSDP's
// strategies: common/parallel/data_parallel_model.h) and "exercise-zero1", ZeRO-1 built from
// the trainee's TP4.1-TP4.3 over the whole model as one flat parameter.
#pragma once

#include <memory>

#include "common/nn/gpt.h"
#include "common/parallel/data_parallel_model.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

// Collective over `comm`.
std::unique_ptr<course::parallel::DataParallelStep> make_data_parallel(
    course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> comm,
    const GptLabOptions& options);

}  // namespace day4
