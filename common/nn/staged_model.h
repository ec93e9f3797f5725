// A model as pipeline parallelism cuts it (common/parallel/pipeline/pipeline_parallel.h): a first
// part (a GPT's embeddings, an image model's stem), a run of blocks, then a last part (a GPT's
// final norm and output layer, a classifier's head). A stage is a contiguous run of blocks, with
// the first part on the first stage and the last part on the last. A GPT (gpt_stage.h) and a model
// assembled from pieces (piece_stages.h) are staged models; the pipeline knows only this.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/nn/module.h"

namespace course::nn {

struct StageBounds {
  int64_t first_block = 0, end_block = 0;
  bool first = false;  // the first stage: it runs the first part
  bool last = false;   // the last stage: it runs the last part
};

// A figure for the first part, each block and the last part: what the stage balancer evens out.
struct PartCosts {
  double first = 0;
  std::vector<double> blocks;
  double last = 0;
};

class StagedModel {
 public:
  virtual ~StagedModel() = default;

  virtual int64_t blocks() = 0;
  // A view of the layers within `bounds`, its parameters named as in the whole model.
  virtual std::unique_ptr<Module> stage(const StageBounds& bounds) = 0;
  // Parameters of each part as the stages of a cut into `stages` hold them (a GPT's last stage
  // trains its own copy of a tied token table).
  virtual PartCosts parameters(int stages) = 0;
  // Multiply-adds of each part's forward for one sample: its weight matrices' and convolutions'
  // and its attention's score and value products. The balance of compute, not of memory.
  virtual PartCosts multiply_adds() = 0;
  // An empty f32 tensor of the shape and memory format of the activation entering block
  // `block` (blocks() for the one entering the last part), for the micro-batch `input` of the
  // first stage: where a stage receives it, or its gradient.
  virtual Tensor empty_activation(int64_t block, const Tensor& input) = 0;
  // The parameter both the first and the last part use (a token table tied to the output
  // layer), or nullptr. The first and the last stage each train it; the pipeline sums their
  // gradients.
  virtual Parameter* shared_by_ends() { return nullptr; }
};

}  // namespace course::nn
