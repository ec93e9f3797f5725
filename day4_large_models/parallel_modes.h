// The GPT lab's choice of parallelism from its flags: model parallelism on the dp x tp x pp grid
// (--tensor-parallel, --pipeline-stages: common/parallel/model_parallel_gpt.h), or data
// parallelism: the library's modes (one process, DDP, ZeRO 1-3, FSDP's strategies:
// common/parallel/data_parallel_model.h) or "exercise-zero1", ZeRO-1 built from the trainee's
// TP4.1-TP4.3 over the whole model as one flat parameter.
#pragma once

#include <memory>

#include "common/nn/gpt.h"
#include "common/parallel/language_model_parallelism.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

// Collective over `comm`.
std::unique_ptr<course::parallel::LanguageModelParallelism> make_parallelism(
    course::nn::Gpt& model, std::shared_ptr<course::parallel::Communicator> comm,
    const GptLabOptions& options);

}  // namespace day4
