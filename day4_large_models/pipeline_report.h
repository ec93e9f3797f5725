// What the day-4 lab shows of its parallelism after training: the communication per step and,
// for a pipeline (common/parallel/pipeline/pipeline_measurement.h), each stage's measured bubble
// next to the schedule's formula and the activations it held, and the last step's forwards and
// backwards as a PNG, a row per stage (common/plot/timeline_chart.h).
#pragma once

#include <string>

#include "common/parallel/pipeline/pipeline_measurement.h"
#include "common/parallel/training_parallelism.h"
#include "common/train/training_loop.h"
#include "day4_large_models/gpt_options.h"

namespace day4 {

// Collective (the pipeline's measurements are gathered); rank 0 (`lead`) prints.
void print_parallel_reports(course::parallel::TrainingParallelism& parallelism,
                            const course::train::LoopResult& run, const std::string& model,
                            const std::string& timeline, bool lead, int ranks);

void print_pipeline_bubbles(const course::parallel::PipelineMeasurement& measured);

void write_timeline_png(const course::parallel::PipelineMeasurement& measured,
                        const std::string& path, const std::string& title);

}  // namespace day4
