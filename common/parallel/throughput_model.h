// A first-order model of a GPT training step on a GPU cluster under 3D parallelism
// (dp x tp x pp), the back-of-the-envelope of the Megatron-LM papers, so a grid can be chosen
// before a job is submitted. For mixed-precision Adam (bf16 compute, 16 bytes of model state per
// parameter), 1F1B pipelines, no activation recomputation, no sequence parallelism:
//   FLOPs per step       F = 72 B s L h^2 (1 + s / (6 h) + V / (12 L h))    (B sequences)
//   compute              t_c = F / (n peak efficiency)
//   pipeline bubble      t_c (p - 1) / m                                    (m micro-batches)
//   tensor parallelism   4 all-reduces per layer and micro-batch (2 forward, 2 backward) of
//                        b s h bf16 values: 2 (t - 1) / t of them sent, L / p layers a stage
//   pipeline sends       2 (b s h) bf16 values per micro-batch and stage boundary
//   data parallelism     one all-reduce of the stage's 2 Psi / (t p) bytes of bf16 gradients:
//                        2 (d - 1) / d of them sent, not overlapped (an upper bound)
//   memory per GPU       16 Psi / (t p) + activations of p micro-batches in flight on the
//                        first stage: L / p layers of s b h (10 + 24 / t + 5 a s / (h t)) bytes
//                        (Korthikanti et al.), plus the embedding's and logits' s b (h + 4V / t)
//   MFU                  F / (step time n peak)
// A collective's bandwidth is the intra-node one when its ranks fit in a node (tensor ranks are
// innermost, then data, then pipeline, as in process_grid.h), else the inter-node one.
#pragma once

#include <string>

#include "common/nn/gpt.h"
#include "common/parallel/process_grid.h"

namespace course::parallel {

struct Cluster {
  int gpus_per_node = 8;
  double peak_flops = 312e12;           // per GPU (A100, bf16 dense)
  double efficiency = 0.6;              // share of peak the GEMMs reach
  double intra_node_bandwidth = 300e9;  // bytes/s per GPU (NVLink)
  double inter_node_bandwidth = 25e9;   // bytes/s per GPU (a 200 Gb/s NIC each)
};

struct StepPlan {
  nn::GptConfig model;
  GridShape grid;
  int64_t global_batch = 512;  // sequences per step
  int64_t micro_batch = 1;     // sequences per micro-batch and pipeline
};

struct StepPrediction {
  double flops = 0;  // per step, every GPU together
  double compute_s = 0, bubble_s = 0, tensor_parallel_s = 0, pipeline_s = 0, data_parallel_s = 0;
  double step_s = 0;
  double memory_bytes = 0;  // per GPU, the first stage's
  double mfu = 0;
  int64_t micro_batches = 0;  // per pipeline and step
};

// Throws when the grid does not fit the model (heads, layers, batch not divisible).
StepPrediction predict_step(const StepPlan& plan, const Cluster& cluster);

// "dp 2 x tp 4 x pp 1: step 1.23 s (compute 0.9, bubble 0, tp 0.2, pp 0, dp 0.1), 21.3 GiB, MFU
// 41%"
std::string describe(const StepPlan& plan, const StepPrediction& prediction);

}  // namespace course::parallel
