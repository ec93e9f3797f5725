// What the GPT lab shows of a pipeline after training (common/parallel/pipeline_measurement.h):
// each stage's measured bubble next to the schedule's formula and the activations it held, and
// the last step's forwards and backwards as a PNG, a row per stage (tools/plot/timeline_chart.h).
#pragma once

#include <string>

#include "common/parallel/pipeline_measurement.h"

namespace day4 {

void print_pipeline_bubbles(const course::parallel::PipelineMeasurement& measured);

void write_timeline_png(const course::parallel::PipelineMeasurement& measured,
                        const std::string& path, const std::string& title);

}  // namespace day4
