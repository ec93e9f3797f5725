// A first-order model of a training step on a GPU cluster under 4D parallelism
// (dp x cp x tp x pp),
// the back-of-the-envelope of the Megatron-LM papers, so a grid can be chosen before a job is
// submitted. For any model whose workload is known (workload.h: the GPT and Llama presets, ViT,
// CoAtNet), mixed-precision Adam (bf16 compute, 16 bytes of model state per parameter), 1F1B
// pipelines whose stages take equal numbers of blocks (the first ones the remainder, the last one
// the ends' products too), no sequence parallelism, activations recomputed or not (`recompute`:
// Megatron's full checkpointing, each block's input kept and its forward run again in backward).
// B samples a step, b a micro-batch, r = 1 when recomputing:
//   FLOPs per step       F = 6 B x multiply-adds per sample (for a GPT:
//                        72 B s L h^2 (1 + s / (6 h) + V / (12 L h))); the hardware's, which
//                        Megatron-LM reports, add the blocks' forward again when recomputing
//   a matrix product     its flops / (peak efficiency q), q the share of the tiles' slots
//                        (a tile of outputs a multiprocessor, a wave of them at a time) that
//                        hold outputs, in the largest tile while the product fills a wave of
//                        them, else in the one that fills them best: cuBLAS's tile and wave
//                        quantization; a tensor-parallel rank's cut of it (columns, depth
//                        or heads); a block whose products are not listed at efficiency alone
//   memory-bound work    the blocks' elementwise bytes (workload.h) / memory bandwidth,
//                        backward moving twice the forward's
//   a stage's micro-batch (3 + r) x (its blocks' products and elementwise work), the last stage
//                        3 x the ends' products too, and the micro-batch's weight gradients
//                        added into the step's (3 bf16 accesses a parameter of the stage:
//                        PyTorch's AccumulateGrad, Megatron's main_grad hook)
//   compute              m x the slowest stage's micro-batch                (m micro-batches)
//   pipeline bubble      (p - 1) x the slowest stage's micro-batch
//   tensor parallelism   4 + 2 r all-reduces per block and micro-batch (2 forward, 2 backward,
//                        2 in the recomputed forward) of the block's b-sample output in bf16:
//                        2 (t - 1) / t of them sent, a stage's share (1 / p) of the blocks
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
//                        (whole, plus cut / t; recomputing, each block's bf16 input and one
//                        block's whole set), plus the ends' (embedding, logits); all of them
//                        divided by c (a rank keeps its tokens' only; ring attention keeps no
//                        (s, s) matrix, so the s^2 term is an upper bound)
//   MFU                  F / (step time n peak)
// A collective's bandwidth is the intra-node one when its ranks fit in a node (tensor ranks are
// innermost, then context, then data, then pipeline, as in process_grid.h), else the inter-node
// one. The cluster's figures are an A100 80 GB SXM's and a DGX A100's, from NVIDIA's data sheets:
// 312 TFLOP/s of dense bf16, 108 multiprocessors, 2,039 GB/s of HBM2e, NVLink 3 at 300 GB/s each
// way, eight 200 Gb/s HDR InfiniBand adapters a node (one a GPU); the tiles are cuBLAS's Ampere
// ones (256 x 128 down to 64 x 64, NVIDIA's Matrix Multiplication Background guide), and 80% of
// peak what its bf16 products sustain there in every tile (an assumption, the one figure not from
// a data sheet; smaller tiles reuse less and run slower).
#pragma once

#include <string>
#include <vector>

#include "common/parallel/comm/process_grid.h"
#include "common/parallel/planning/workload.h"

namespace course::parallel {

// A multiprocessor's share of a product's outputs (the cluster's largest first).
struct Tile {
  int rows, columns;
};

struct Cluster {
  int gpus_per_node = 8;
  double peak_flops = 312e12;  // per GPU (A100, bf16 dense)
  double efficiency = 0.8;  // share of peak a matrix product filling whole waves of tiles reaches
  int multiprocessors = 108;
  std::vector<Tile> tiles = {{256, 128}, {128, 256}, {128, 128}, {256, 64},
                             {64, 256},  {128, 64},  {64, 128},  {64, 64}};
  double memory_bandwidth = 2039e9;     // bytes/s per GPU (HBM2e)
  double intra_node_bandwidth = 300e9;  // bytes/s per GPU (NVLink)
  double inter_node_bandwidth = 25e9;   // bytes/s per GPU (a 200 Gb/s NIC each)
};

struct StepPlan {
  Workload model;
  GridShape grid;
  int64_t global_batch = 512;  // samples (sequences, images) per step
  int64_t micro_batch = 1;     // samples per micro-batch and pipeline
  bool recompute = false;      // every block's activations recomputed in backward
};

struct StepPrediction {
  double flops = 0;           // per step, every GPU together
  double hardware_flops = 0;  // the same with the recomputed forward (Megatron-LM's count)
  double compute_s = 0, bubble_s = 0, tensor_parallel_s = 0, context_parallel_s = 0, pipeline_s = 0,
         data_parallel_s = 0;
  double step_s = 0;
  double memory_bytes = 0;  // per GPU, the first stage's
  double mfu = 0;
  double hardware_flops_per_gpu = 0;  // per second: hardware_flops / (step time n)
  int64_t micro_batches = 0;          // per pipeline and step
};

// Why `plan`'s grid cannot run its model (heads not splitting over tp, or blocks not cut over
// tp at all; a window not cutting into 2 cp chunks, or samples that are not windows; fewer
// blocks than stages; a batch that does not divide), or "" when it can.
std::string grid_misfit(const StepPlan& plan);

// Throws grid_misfit's message when the grid does not fit the model (heads not dividing over tp, or
// blocks not cut over tp at all; fewer blocks than stages; a batch that does not divide).
StepPrediction predict_step(const StepPlan& plan, const Cluster& cluster);

// A table's row of the prediction: the grid, micro-batches, the step and its parts in seconds,
// memory per GPU in GiB and MFU, under the header kDescribedColumns (columns two spaces apart
// or more, as the lab sheets' figures tool reads them).
extern const char* const kDescribedColumns;
std::string describe(const StepPlan& plan, const StepPrediction& prediction);

}  // namespace course::parallel
