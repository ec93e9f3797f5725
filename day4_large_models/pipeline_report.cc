// Printing the communication, and printing and drawing a pipeline's measurements.
#include "day4_large_models/pipeline_report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "common/plot/timeline_chart.h"

namespace day4 {

using namespace course::parallel;

void print_parallel_reports(TrainingParallelism& parallelism, const course::train::LoopResult& run,
                            const std::string& model, const std::string& timeline, bool lead,
                            int ranks) {
  // What the host posted (a replayed graph's collectives move what its capture counted).
  const int64_t posted = run.steps - run.replayed_steps;
  if (lead && posted > 0 && ranks > 1) {
    std::printf("communication per step on rank 0: %.3f MiB sent (ring), %.1f ms waited for%s\n",
                parallelism.bytes_sent() / posted / 1048576.0,
                parallelism.exposed_communication_seconds() * 1e3 / posted,
                run.replayed_steps > 0 ? " (the steps run on the host: replays not counted)" : "");
  }
  const std::optional<PipelineMeasurement> pipeline = parallelism.pipeline_measurement();
  if (!pipeline || !lead) return;
  print_pipeline_bubbles(*pipeline);
  if (!timeline.empty() && run.steps > 0) {
    write_timeline_png(*pipeline, timeline,
                       model + ": " + parallelism.describe() + ", the last step as measured");
  }
}

void print_pipeline_bubbles(const PipelineMeasurement& measured) {
  if (measured.steps_measured < 1) return;
  const int stages = static_cast<int>(measured.stages.size()), v = measured.virtual_stages;
  const char* formula = measured.schedule == PipelineSchedule::kNaive ? "(p-1)/p"
                        : measured.schedule == PipelineSchedule::kZeroBubbleH1
                            ? "(p-1)/(3m+p-1), passes of equal length"
                        : v > 1 ? "(p-1)/(v m+p-1)"
                                : "(p-1)/(m+p-1)";
  std::printf(
      "pipeline bubble (idle share of a step, %lld steps after the first; formula %s %.3f):\n",
      static_cast<long long>(measured.steps_measured), formula,
      bubble_fraction(measured.schedule, stages, measured.micro_batches, v));
  if (measured.schedule == PipelineSchedule::kZeroBubbleH1) {
    // Its formula depends on the passes' lengths: (p-1)(F+B) - (min(m,p)-1) min(F,B,W) idle.
    std::vector<TimedAction> every_stage;
    for (const StageMeasurement& stage : measured.stages) {
      every_stage.insert(every_stage.end(), stage.last_step.begin(), stage.last_step.end());
    }
    const PassCosts passes = mean_pass_costs(every_stage);
    std::printf("  for the measured passes (F %.2f, B %.2f, W %.2f ms): %.3f\n",
                passes.forward * 1e3, passes.backward * 1e3, passes.weight * 1e3,
                bubble_fraction(measured.schedule, stages, measured.micro_batches, v, passes));
  }
  for (int s = 0; s < stages; ++s) {
    const StageMeasurement& stage = measured.stages[s];
    std::printf("  stage %d: %.3f measured, at most %d micro-batch(es) of activations held", s,
                stage.bubble, stage.micro_batches_in_flight);
    if (v > 1) std::printf(" (each through one chunk, 1/%d of the stage)", v);
    std::printf("\n");
  }
}

void write_timeline_png(const PipelineMeasurement& measured, const std::string& path,
                        const std::string& title) {
  course::plot::TimelineChart chart{.title = title,
                                    .kinds = {"forward", "backward", "weight gradients"}};
  for (size_t s = 0; s < measured.stages.size(); ++s) {
    const StageMeasurement& stage = measured.stages[s];
    const int lane = static_cast<int>(s);
    chart.lanes.push_back("stage " + std::to_string(s) + " (rank " +
                          std::to_string(stage.world_rank) + ")");
    for (const TimedAction& a : stage.last_step) {
      std::string label = action_name(a.action);
      label.erase(std::remove(label.begin(), label.end(), ' '), label.end());  // "F3c1"
      chart.spans.push_back(
          {lane, a.start_s, a.end_s, static_cast<int>(a.action.kind), std::move(label)});
    }
  }
  course::plot::write_timeline_png(chart, path);
  std::printf("pipeline timeline of the last step written to %s\n", path.c_str());
}

}  // namespace day4
