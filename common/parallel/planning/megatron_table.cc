// Megatron-LM's published rows and their plans (megatron_table.h).
#include "common/parallel/planning/megatron_table.h"

#include "common/core/error.h"
#include "common/models/gpt/gpt_config.h"

namespace course::parallel {

const std::vector<MegatronRow>& megatron_rows() {
  static const std::vector<MegatronRow> rows{
      {"megatron-1.7b", 2304, 24, 24, 1, 1, 32, 512, 137},
      {"megatron-18b", 6144, 48, 40, 8, 1, 256, 1024, 135},
      {"megatron-145b", 12288, 96, 80, 8, 8, 1536, 2304, 148},
      {"megatron-1t", 25600, 160, 128, 8, 64, 3072, 3072, 163},
  };
  return rows;
}

const MegatronRow& megatron_row(const std::string& name) {
  std::string names;
  for (const MegatronRow& row : megatron_rows()) {
    if (row.name == name || row.name == "megatron-" + name) return row;
    names += (names.empty() ? "" : ", ") + row.name.substr(row.name.find('-') + 1);
  }
  COURSE_FAIL("no row '", name, "' in Megatron-LM's table: its rows are ", names, " (or all)");
}

StepPlan megatron_plan(const MegatronRow& row) {
  const int64_t model_parallel = row.tensor_parallel * row.pipeline_stages;
  const nn::GptConfig config{row.name, row.layers, row.heads, row.hidden, 2048, 51200};
  return {.model = gpt_workload(config),
          .grid = {.dp = static_cast<int>(row.gpus / model_parallel),
                   .tp = static_cast<int>(row.tensor_parallel),
                   .pp = static_cast<int>(row.pipeline_stages)},
          .global_batch = row.global_batch,
          .micro_batch = 1,
          .recompute = true};
}

}  // namespace course::parallel
