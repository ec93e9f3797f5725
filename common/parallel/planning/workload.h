// The throughput model's workloads (common/models/workload.h): the GPT's and the Llama's in
// closed form (their embedding and logits as the ends), an image family's from its spec where it
// has one (the ViT's), else measured piece by piece on one image (piece_measurement.h: CoAtNet,
// whose convolution stages have no short closed form; its blocks are not cut over
// tensor-parallel ranks).
#pragma once

#include "common/models/gpt/gpt_config.h"
#include "common/models/models.h"
#include "common/models/workload.h"

namespace course::parallel {

using nn::BlockWork;
using nn::kBf16Bytes;
using nn::Workload;

Workload gpt_workload(const nn::GptConfig& config);
// An image model at the channels, classes and size `model` gives: its family's closed form, or,
// for a family built in pieces without one, measured piece by piece.
Workload image_workload(const nn::ModelConfig& model);

}  // namespace course::parallel
