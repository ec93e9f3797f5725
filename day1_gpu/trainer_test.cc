// The day-1 training run end to end on small synthetic data (with the solutions linked in):
// resuming from a checkpoint continues bit-exactly, channels-last and mixed precision follow
// the f32 NCHW run, accumulated micro-batches train as one batch, clipping acts on the unscaled
// gradient, graph replays (--cuda-graphs) match the eager run bit for bit, the profiler writes
// the named phases, and bad input is a clear error.
#include "day1_gpu/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/testing/errors_and_files.h"
#include "common/testing/tolerance.h"
#include "common/train/stop_signal.h"

namespace day1 {
namespace {

using course::DType;
using course::HostWaits;
using course::testing::temp_path;
using ::testing::HasSubstr;

LabOptions small(int64_t steps) {
  LabOptions o;
  o.synthetic = 96;
  o.batch_size = 16;
  o.test = true;
  o.test_nsteps = steps;
  o.device = course::parse_device_request("cpu");
  o.progress = false;
  o.lr = 0.05f;
  return o;
}

std::vector<float> flat(const LabResult& r) {
  std::vector<float> out;
  for (const auto& p : r.parameters) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// TP1.1 is asked for by naming a GPU (or the simulated accelerator); the default device (a GPU when
// one is visible) copies with the course's copy, so the quick start never stops at an unwritten
// exercise.
TEST(Day1Lab, OnlyAnExplicitGpuDeviceRunsTheTraineesCopy) {
  LabOptions o;
  EXPECT_FALSE(copies_with_to_device(o));
  for (const char* gpu : {"cuda", "cuda:1", "sim"}) {
    o.device = course::parse_device_request(gpu);
    EXPECT_TRUE(copies_with_to_device(o)) << gpu;
  }
  o.device = course::parse_device_request("cpu");
  EXPECT_FALSE(copies_with_to_device(o));
}

// On the simulated accelerator, which counts a GPU's waits in host memory: after the first step
// (allocations, plans), a step never waits for the device, in every precision and layout,
// replayed as a graph and profiled; the host reads the loss (and the chronometer's events) only
// every
// --log-every steps, and on the CPU nothing is a wait.
TEST(Day1Lab, StepsAfterTheFirstNeverWaitForTheDevice) {
  struct Variant {
    const char* name;
    bool amp = false;
    DType amp_dtype = DType::kBF16;
    bool channels_last = false, cuda_graphs = false, profiled = false;
  };
  for (const Variant& v : {Variant{"f32"}, Variant{"bf16", true}, Variant{"f16", true, DType::kF16},
                           Variant{"channels-last", false, DType::kBF16, true},
                           Variant{"graph", false, DType::kBF16, false, true},
                           Variant{"bf16 channels-last graph", true, DType::kBF16, true, true},
                           Variant{"f16 graph", true, DType::kF16, false, true},
                           Variant{"profiled", false, DType::kBF16, false, false, true}}) {
    LabOptions o = small(20);
    o.synthetic = 20 * 16;  // one epoch of 20 steps: no epoch end in between
    o.log_every = 10;
    o.device = course::parse_device_request("sim");
    o.amp = v.amp;
    o.amp_dtype = v.amp_dtype;
    o.channels_last = v.channels_last;
    o.cuda_graphs = v.cuda_graphs;
    if (v.profiled) o.profile = temp_path("waits-trace.json");  // its ranges timed by events
    const LabResult run = run_lab(o);
    EXPECT_EQ(run.steps, 20) << v.name;
    EXPECT_EQ(run.step_waits, HostWaits{})
        << v.name << ": " << run.step_waits.reads << " reads, " << run.step_waits.synchronizations
        << " synchronisations, " << run.step_waits.copies << " copies in steps 2..20";
    // Two reads: the loss window's values and the chronometer's last event.
    EXPECT_EQ(run.read_waits, (HostWaits{.reads = 2, .synchronizations = 2})) << v.name;
  }
  LabOptions o = small(20);
  o.synthetic = 20 * 16;
  o.device = course::parse_device_request("sim");
  o.log_every = 1;
  // The first step is not timed: the chronometer waits from the second read on.
  EXPECT_EQ(run_lab(o).read_waits, (HostWaits{.reads = 20, .synchronizations = 19}));
  o.device = course::parse_device_request("cpu");
  const LabResult on_cpu = run_lab(o);
  EXPECT_EQ(on_cpu.step_waits.total() + on_cpu.read_waits.total(), 0);
}

TEST(Day1Lab, ResumingFromACheckpointContinuesBitExactly) {
  const LabResult straight = run_lab(small(6));
  LabOptions first = small(3);
  first.chkpt = temp_path("half.ckpt");
  run_lab(first);
  LabOptions second = small(6);
  second.resume = first.chkpt;
  const LabResult resumed = run_lab(second);
  EXPECT_EQ(resumed.steps, 3);
  EXPECT_EQ(flat(resumed), flat(straight));
  EXPECT_EQ(resumed.last_loss, straight.last_loss);
}

// As a Slurm job meets it: SIGUSR1 before the time limit, a checkpoint, a requeued run that
// resumes from it; the end is the uninterrupted run's.
TEST(Day1Lab, ASignalStopsAfterTheStepWithACheckpointToResumeFrom) {
  const LabResult straight = run_lab(small(6));
  LabOptions first = small(6);
  first.chkpt = temp_path("preempted.ckpt");
  course::train::install_stop_handlers();
  course::train::send_stop_signal(SIGUSR1);
  EXPECT_THAT([&] { run_lab(first); },
              ::testing::ThrowsMessage<course::train::PreemptedError>(
                  AllOf(HasSubstr("SIGUSR1 after step 1"), HasSubstr("--resume"))));
  course::train::install_stop_handlers();
  LabOptions second = small(6);
  second.resume = first.chkpt;
  const LabResult resumed = run_lab(second);
  EXPECT_EQ(resumed.steps, 5);
  EXPECT_EQ(flat(resumed), flat(straight));
}

TEST(Day1Lab, ChannelsLastFollowsTheNchwRun) {
  const LabResult nchw = run_lab(small(3));
  LabOptions o = small(3);
  o.channels_last = true;
  const LabResult nhwc = run_lab(o);
  EXPECT_NEAR(nhwc.last_loss, nchw.last_loss, 1e-4);
  EXPECT_TRUE(course::testing::all_close(flat(nhwc), flat(nchw), {1e-4, 1e-3}));
}

TEST(Day1Lab, MixedPrecisionTrainsCloseToF32) {
  const LabResult f32 = run_lab(small(3));
  for (course::DType dtype : {course::DType::kBF16, course::DType::kF16}) {
    LabOptions o = small(3);
    o.amp = true;
    o.amp_dtype = dtype;
    const LabResult amp = run_lab(o);
    EXPECT_NEAR(amp.last_loss, f32.last_loss, 0.05) << course::dtype_name(dtype);
    EXPECT_EQ(amp.skipped_steps, 0) << course::dtype_name(dtype);
    EXPECT_TRUE(course::testing::all_close(flat(amp), flat(f32), {2e-2, 5e-2}));
  }
}

// --accumulate K: K micro-batches of b train as one batch of K x b (a Vision Transformer: no
// batch norm, whose statistics are each micro-batch's), the epoch's short last batch (100 images
// in steps of 24, its 4 in micro-batches of 2, 1, 1) included.
LabOptions vit_micro(int64_t micro_batch, int64_t accumulate) {
  LabOptions o = small(5);
  o.model = "vit-micro";
  o.synthetic = 100;
  o.batch_size = micro_batch;
  o.accumulate = accumulate;
  return o;
}

TEST(Day1Lab, AccumulatedMicroBatchesTrainAsOneBatch) {
  const LabResult whole = run_lab(vit_micro(24, 1));
  const LabResult accumulated = run_lab(vit_micro(8, 3));
  EXPECT_EQ(accumulated.steps, 5);
  EXPECT_NEAR(accumulated.last_loss, whole.last_loss, 1e-5);
  EXPECT_TRUE(course::testing::all_close(flat(accumulated), flat(whole), {1e-5, 1e-4}));
}

// --clip-grad-norm with f16's loss scaler clips the unscaled gradient: the run follows the
// clipped f32 run (not the unclipped one), as bf16's does.
TEST(Day1Lab, ClippingActsOnTheUnscaledGradient) {
  LabOptions o = vit_micro(24, 1);
  const LabResult unclipped = run_lab(o);
  o.clip_grad_norm = 0.3f;
  const LabResult f32 = run_lab(o);
  ASSERT_FALSE(course::testing::all_close(flat(f32), flat(unclipped), {1e-3, 1e-2}))
      << "the test's norm must clip";
  for (course::DType dtype : {course::DType::kBF16, course::DType::kF16}) {
    o.amp = true;
    o.amp_dtype = dtype;
    const LabResult amp = run_lab(o);
    EXPECT_EQ(amp.skipped_steps, 0) << course::dtype_name(dtype);
    EXPECT_TRUE(course::testing::all_close(flat(amp), flat(f32), {1e-3, 1e-2}))
        << course::dtype_name(dtype);
  }
}

// On the CPU a graph replays the recorded kernels on the captured memory: after the eager first
// step it must follow the eager run exactly, through the one-cycle schedule, channels-last and
// bf16 casts, f16's loss scaling (its skip and scale decided on the device, inside the graph),
// and an eager smaller last batch (100 images in batches of 16).
TEST(Day1Lab, GraphReplaysMatchTheEagerRunBitExactly) {
  for (const bool channels_last : {false, true}) {
    for (const DType precision : {DType::kF32, DType::kBF16, DType::kF16}) {
      LabOptions o = small(7);
      o.synthetic = 100;
      o.channels_last = channels_last;
      o.amp = precision != DType::kF32;
      o.amp_dtype = precision;
      const LabResult eager = run_lab(o);
      o.cuda_graphs = true;
      const LabResult graphed = run_lab(o);
      const std::string label = std::string(channels_last ? "channels-last " : "nchw ") +
                                std::string(course::dtype_name(precision));
      EXPECT_EQ(graphed.steps, 7) << label;
      EXPECT_EQ(flat(graphed), flat(eager)) << label;
      EXPECT_EQ(graphed.last_loss, eager.last_loss) << label;
      EXPECT_TRUE(graphed.timing.timed[static_cast<int>(course::train::Phase::kGraphReplay)]);
      EXPECT_FALSE(eager.timing.timed[static_cast<int>(course::train::Phase::kGraphReplay)]);
    }
  }
  LabOptions o = vit_micro(8, 2);  // the accumulated micro-batches in the graph
  const LabResult eager = run_lab(o);
  o.cuda_graphs = true;
  EXPECT_EQ(flat(run_lab(o)), flat(eager)) << "--accumulate 2";
}

// The trace's duration events are the timed phases of the recorded steps; its one metadata event
// names the process (the rank on several ranks).
TEST(Day1Lab, ProfilerTraceHoldsTheNamedPhases) {
  const auto phase_names = [](const std::string& path, std::size_t* events) {
    std::ifstream in(path);
    const auto trace = nlohmann::json::parse(in);
    std::set<std::string> names;
    *events = 0;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] == "M") {
        EXPECT_EQ(e["name"], "process_name");
        continue;
      }
      names.insert(e["name"].get<std::string>());
      ++*events;
    }
    return names;
  };
  LabOptions o = small(4);
  o.profile = temp_path("trace.json");
  run_lab(o);
  std::size_t events = 0;
  EXPECT_EQ(phase_names(o.profile, &events),
            (std::set<std::string>{"step", "load", "forward", "backward", "optimizer"}));
  EXPECT_EQ(events, 2u * 5);  // steps 2 and 3 of 0..3 are recorded

  o.cuda_graphs = true;  // step 0 eager, the recorded steps replayed
  run_lab(o);
  EXPECT_EQ(phase_names(o.profile, &events),
            (std::set<std::string>{"step", "load", "graph replay"}));
}

TEST(Day1Lab, BadInputIsOneClearError) {
  const auto error_of = [](const LabOptions& o) {
    return course::testing::error_of([&] { run_lab(o); });
  };
  LabOptions o = small(1);
  o.batch_size = 0;
  EXPECT_THAT(error_of(o), HasSubstr("--batch-size must be positive"));
  o = small(1);
  o.image_size = 3;
  EXPECT_THAT(error_of(o), HasSubstr("--image-size 3 is too small for smallnet"));
  o = small(1);
  o.synthetic = 0;
  o.data_dir = temp_path("no-such-dir");
  EXPECT_THAT(error_of(o), HasSubstr("does not exist"));
  if (course::cuda_device_count() == 0) {
    o = small(1);
    o.device = course::parse_device_request("cuda");
    EXPECT_THAT(error_of(o), HasSubstr("device cuda:0 requested"));
  }
  o = small(1);
  o.cuda_graphs = true;
  o.clip_grad_norm = 1.0f;
  EXPECT_THAT(error_of(o), HasSubstr("--cuda-graphs does not take --clip-grad-norm"));
  for (const float norm : {0.0f, -1.0f}) {
    o = small(1);
    o.clip_grad_norm = norm;
    EXPECT_THAT(error_of(o), HasSubstr("--clip-grad-norm must be positive"));
  }
  o = small(1);
  o.accumulate = 0;
  EXPECT_THAT(error_of(o), HasSubstr("--accumulate must be at least 1"));
  o = vit_micro(8, 6);  // 100 images in steps of 48: a last batch of 4
  EXPECT_THAT(error_of(o), HasSubstr("the epoch's last batch of 4 image(s) does not split into 6"));
  o = small(1);
  o.resume = temp_path("absent.ckpt");
  EXPECT_THAT(error_of(o), HasSubstr("cannot open checkpoint"));
}

}  // namespace
}  // namespace day1
