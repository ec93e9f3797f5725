// A first-order model of a training step on a GPU cluster under 4D parallelism
// (dp x cp x tp x pp),
// the back-of-the-envelope of the Megatron-LM papers, so a grid can be chosen before a job is
// submitted. For any model whose workload is known (workload.h: the GPT and Llama presets, ViT,
// CoAtNet), mixed-precision Adam (bf16 compute, 16 bytes of model state per parameter), 1F1B
// pipelines whose stages take equal numbers of blocks (the first ones the remainder), no
// activation recomputation, no sequence parallelism. B samples a step, b a micro-batch:
//   FLOPs per step       F = 6 B x multiply-adds per sample (for a GPT:
//                        72 B s L h^2 (1 + s / (6 h) + V / (12 L h)))
//   compute              t_c = F / (n peak efficiency)
//   pipeline bubble      t_c (p - 1) / m                                    (m micro-batches)
//   tensor parallelism   4 all-reduces per block and micro-batch (2 forward, 2 backward) of the
//                        block's b-sample output in bf16: 2 (t - 1) / t of them sent, a stage's
//                        share (1 / p) of the blocks
//   context parallelism  a window's s tokens cut over c ranks (ring attention): per block and
//                        micro-batch the rank's keys and values (2 b s/c h_kv bf16) go c - 1
//                        hops forward, and backward again with their gradients (3 (c - 1)
//                        passes in all), a stage's share of the blocks, not overlapped
//   pipeline sends       2 per micro-batch of the largest output crossing a stage boundary
//                        (a rank's s/c tokens of it)
//   data parallelism     one all-reduce of the stage's 2 Psi / (t p) bytes of bf16 gradients
//                        over the d c ranks that hold them: 2 (dc - 1) / dc of them sent, not
//                        overlapped (an upper bound)
//   memory per GPU       16 Psi / (t p) + the activations of the stage that holds the most:
//                        stage k keeps min(p - k, m) micro-batches of its blocks' saved bytes
//                        (whole, plus cut / t), plus the ends' (embedding, logits); all of them
//                        divided by c (a rank keeps its tokens' only; ring attention keeps no
//                        (s, s) matrix, so the s^2 term is an upper bound)
//   MFU                  F / (step time n peak)
// A collective's bandwidth is the intra-node one when its ranks fit in a node (tensor ranks are
// innermost, then context, then data, then pipeline, as in process_grid.h), else the inter-node
// one.
#pragma once

#include <string>

#include "common/parallel/comm/process_grid.h"
#include "common/parallel/planning/workload.h"

namespace course::parallel {

struct Cluster {
  int gpus_per_node = 8;
  double peak_flops = 312e12;           // per GPU (A100, bf16 dense)
  double efficiency = 0.6;              // share of peak the GEMMs reach
  double intra_node_bandwidth = 300e9;  // bytes/s per GPU (NVLink)
  double inter_node_bandwidth = 25e9;   // bytes/s per GPU (a 200 Gb/s NIC each)
};

struct StepPlan {
  Workload model;
  GridShape grid;
  int64_t global_batch = 512;  // samples (sequences, images) per step
  int64_t micro_batch = 1;     // samples per micro-batch and pipeline
};

struct StepPrediction {
  double flops = 0;  // per step, every GPU together
  double compute_s = 0, bubble_s = 0, tensor_parallel_s = 0, context_parallel_s = 0, pipeline_s = 0,
         data_parallel_s = 0;
  double step_s = 0;
  double memory_bytes = 0;  // per GPU, the first stage's
  double mfu = 0;
  int64_t micro_batches = 0;  // per pipeline and step
};

// Why `plan`'s grid cannot run its model (heads not splitting over tp, or blocks not cut over
// tp at all; a window not cutting into 2 cp chunks, or samples that are not windows; fewer
// blocks than stages; a batch that does not divide), or "" when it can.
std::string grid_misfit(const StepPlan& plan);

// Throws grid_misfit's message when the grid does not fit the model (heads not dividing over tp, or
// blocks not cut over tp at all; fewer blocks than stages; a batch that does not divide).
StepPrediction predict_step(const StepPlan& plan, const Cluster& cluster);

// "dp 2 x tp 4 x pp 1: step 1.23 s (compute 0.9, bubble 0, tp 0.2, pp 0, dp 0.1), 21.3 GiB, MFU
// 41%"
std::string describe(const StepPlan& plan, const StepPrediction& prediction);

}  // namespace course::parallel
