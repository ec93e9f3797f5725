// The day-3 exercises (TP3.1-TP3.10): what the trainee writes in day3_data/exercises.cc. The
// complete versions are in solutions/day3_data/exercises.cc; the lab program calls these
// functions when it mixes batches (--mixup, --cutmix) and reads tar shards or packed files, the
// HPO tool when it samples with TPE and prunes with the median rule or successive halving, the
// learning-rate finder (--findlr) when it sweeps and suggests a rate, and //day3_data:check
// tests them.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "common/data/batch_mix.h"
#include "common/data/tar_shards.h"
#include "common/hpo/rules.h"
#include "common/kernels/cross_entropy.h"

namespace day3 {

using course::Tensor;

// TP3.1: CutMix's cut for a drawn `lambda` on a height x width image: a box whose sides are
// sqrt(1 - lambda) of the image's, centred on a uniformly drawn pixel, clipped to the image
// (the border included), and lambda recomputed as 1 - box area / image area.
course::CutMixCut cutmix_cut(float lambda, int64_t height, int64_t width, std::mt19937& rng);

// TP3.2: the soft targets (N x classes, row-major) of a batch whose sample i was mixed with its
// partner N-1-i: lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), where label smoothing
// e puts 1 - e + e/classes on the class and e/classes on every other.
std::vector<float> mixed_targets(const std::vector<int64_t>& labels,
                                 const std::vector<float>& lambdas, int64_t classes,
                                 float smoothing);

// TP3.3: the gradient of grad_loss x (mean over the batch of the soft-target cross-entropy)
// with respect to the logits, from the forward pass's softmax probabilities (N, classes) f32 and
// the targets (N, classes) f32 on the same device; (N, classes) f32.
Tensor soft_target_gradient(const course::CrossEntropyOutput& forward, const Tensor& targets,
                            float grad_loss);

// TP3.4: WebDataset's samples from a shard's members, in order: consecutive members whose keys
// are equal form one sample; a member's key is its path up to the first dot of its file name
// ("train/000017.seg.png" -> "train/000017"), and it is filed under what follows that dot
// ("seg.png").
std::vector<course::TarSample> group_members(const std::vector<course::TarMember>& members);

// TP3.5: FFCV's quasi-random order of the samples of a packed file, sample_pages[i] being the
// page sample i lies in: the pages shuffled, then taken `pages_in_memory` at a time, the samples
// of each such group shuffled together (so reading the order keeps few pages in use).
std::vector<int64_t> quasi_random_pages(const std::vector<int64_t>& sample_pages,
                                        int64_t pages_in_memory, std::mt19937& rng);

// TP3.8: TPE's split of a study's trials into the n_below best ("below") and the rest
// ("above"): complete trials ranked by value in the study's direction, then pruned trials, the
// furthest-trained first (largest last step), ties by the value they last reported; with
// include_running (the constant liar) running trials are added above; failed trials are left
// out. Both lists in trial-number order.
course::hpo::TrialSplit split_trials(const std::vector<course::hpo::Trial>& trials,
                                     course::hpo::Direction direction, int n_below,
                                     bool include_running);

// TP3.9: successive halving's promotion rule: `value` goes on to the next rung when it is
// among the top floor(n / reduction_factor) of the n `competing` values recorded at the rung
// (itself included), or the best of them when floor(n / reduction_factor) is 0. Ties promote.
bool promotable_to_next_rung(double value, std::vector<double> competing, int reduction_factor,
                             course::hpo::Direction direction);

// TP3.10: the median pruner's rule at `step`: prune when the trial's best value so far (NaNs
// ignored; no value at all prunes) is worse than the median of the complete trials' values at
// `step` (NaNs ignored); never when none of them has a value there.
bool median_prunes(const course::hpo::Trial& trial, int step,
                   const std::vector<const course::hpo::Trial*>& complete,
                   course::hpo::Direction direction);

// The three as the HPO tool's rules.
course::hpo::SearchRules search_rules();

// TP3.6: the learning-rate finder's `count` rates, log-spaced from `first` to `last`, both
// included (first * (last / first)^(i / (count - 1))).
std::vector<float> sweep_rates(float first, float last, int64_t count);

// TP3.7: the rate the finder suggests: one tenth of the rate whose mean loss is the lowest
// (NaN losses, diverged or not reached, left out; the lower rate wins a tie); none when every
// loss is NaN.
std::optional<float> suggest_rate(const std::vector<float>& rates,
                                  const std::vector<double>& mean_losses);

}  // namespace day3
