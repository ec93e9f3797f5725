// The pruning run: one fresh copy of the trained network per sparsity, pruned, evaluated,
// fine-tuned with its masks kept, evaluated again; the table and the plot.
#include "day4_large_models/compression/prune_run.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>

#include "common/core/format.h"
#include "common/core/gnuplot.h"
#include "common/core/launch_rank.h"
#include "common/train/evaluate.h"
#include "common/train/training_loop.h"
#include "day4_large_models/compression/compress_training.h"
#include "day4_large_models/compression/pruning.h"
#include "day4_large_models/compression/trained_model.h"

namespace day4 {

using namespace course;

namespace {

std::string percent(double fraction) { return format_percent(fraction) + "%"; }

// Test accuracy against sparsity: global magnitude pruning before and after fine-tuning, the 2:4
// pattern as two points, the dense network as a line.
void plot(const std::vector<PruneRow>& rows, const std::string& model, const std::string& path) {
  std::ostringstream global, two_four;
  for (const PruneRow& r : rows) {
    if (r.pruning == "dense") continue;
    std::ostringstream& block = r.pruning == "2:4" ? two_four : global;
    block << 100 * r.sparsity << " " << 100 * r.pruned_accuracy << " "
          << (r.tuned_accuracy ? format_number(100 * *r.tuned_accuracy) : "nan") << "\n";
  }
  std::ostringstream script;
  script << "set output '" << path << "'\n$global << EOD\n"
         << global.str() << "EOD\n$twofour << EOD\n"
         << two_four.str() << "EOD\nset title '" << model
         << ": test accuracy against the share of pruned weights' noenhanced\n"
         << "set xlabel 'weights pruned (%)'\nset ylabel 'test accuracy (%)'\n"
         << "set key bottom left\n"
         << "plot $global using 1:2 with linespoints pt 7 title 'global magnitude, pruned', "
         << "$global using 1:3 with linespoints pt 7 title 'global magnitude, fine-tuned', "
         << "$twofour using 1:2 with points pt 9 ps 2 title '2:4, pruned', "
         << "$twofour using 1:3 with points pt 5 ps 2 title '2:4, fine-tuned', "
         << 100 * rows.front().pruned_accuracy << " with lines dt 2 title 'dense'\n";
  run_gnuplot(script.str());
}

// A trained network's test accuracy.
using Accuracy = std::function<double(nn::Module&)>;

// The trained network as it is: its row, and what the run will do to each copy.
PruneRow dense_row(const PruneOptions& o, const Dataset& train_set, Device device,
                   const Accuracy& accuracy) {
  const auto dense = load_trained(o.trained, o.model, "--trained", train_set, device);
  const std::vector<nn::PrunedWeight> weights = nn::prunable_weights(*dense);
  int64_t count = 0;
  for (const nn::PrunedWeight& w : weights) count += w.weight->value.numel();
  const PruneRow row{"dense", nn::measured_sparsity(weights), accuracy(*dense), {}};
  std::printf("%s (%s): %lld weights in %zu convolution and linear tensors, test accuracy %s\n",
              o.model.c_str(), o.trained.c_str(), static_cast<long long>(count), weights.size(),
              percent(row.pruned_accuracy).c_str());
  std::printf("each pruned copy fine-tunes %lld epoch(s) at lr %s with its masks kept\n",
              static_cast<long long>(o.epochs), format_number(o.lr).c_str());
  return row;
}

// A fresh copy of the trained network pruned to `target` of its weights by global magnitude (none:
// the 2:4 pattern), evaluated, fine-tuned with its masks kept and evaluated again.
PruneRow prune_and_fine_tune(const PruneOptions& o, CompressData& in, Device device,
                             std::optional<double> target, const Accuracy& accuracy) {
  const auto network = load_trained(o.trained, o.model, "--trained", *in.datasets().train, device);
  network->set_training(true);
  std::vector<nn::PrunedWeight> weights = nn::prunable_weights(*network);
  PruneRow row{target ? "global " + format_number(100 * *target) + "%" : "2:4"};
  if (target) {
    nn::mask_by_global_magnitude(weights, *target);
  } else {
    mask_two_of_four(weights);
  }
  nn::apply_masks(weights);
  row.pruned_accuracy = accuracy(*network);
  std::printf("-- %s: %s of the weights zero, test accuracy %s before fine-tuning\n",
              row.pruning.c_str(), percent(nn::measured_sparsity(weights)).c_str(),
              percent(row.pruned_accuracy).c_str());
  for (const nn::PrunedWeight& w : weights) {
    if (w.dense) {
      std::printf("   %s stays dense: its rows do not divide by 4\n", w.name.c_str());
    } else {
      std::printf("   %s %s: %s pruned\n", w.name.c_str(),
                  shape_str(w.weight->value.shape()).c_str(),
                  percent(nn::measured_sparsity({w})).c_str());
    }
  }
  std::fflush(stdout);
  row.tuned_accuracy =
      train_on_loop(o, in,
                    {.model = *network,
                     .after_step = [&] { nn::apply_masks(weights); },
                     .identity = {{"model", o.model}, {"pruning", row.pruning}},
                     .recipe = "- fine-tuned after pruning (" + row.pruning + ")"});
  row.sparsity = nn::measured_sparsity(weights);
  return row;
}

void print_prune_table(const std::vector<PruneRow>& rows) {
  std::printf(
      "\n| pruning | zero weights | test accuracy pruned | after fine-tuning |\n"
      "| --- | ---: | ---: | ---: |\n");
  for (const PruneRow& r : rows) {
    std::printf("| %s | %s | %s | %s |\n", r.pruning.c_str(), percent(r.sparsity).c_str(),
                percent(r.pruned_accuracy).c_str(),
                r.tuned_accuracy ? percent(*r.tuned_accuracy).c_str() : "-");
  }
}

}  // namespace

std::vector<PruneRow> run_pruning(const PruneOptions& o) {
  course::check_alike_on_every_rank([&] { validate(o); });
  train::check_output_flags(o);
  const Device device = named_or_default_device(o.device);
  require_device(device);
  CompressData in(o, device);
  const Accuracy accuracy = [&](nn::Module& model) {
    return train::evaluate(model, in.datasets().val, in.datasets().val_transform, o, 0, 1,
                           [&](const Batch& host) { return in.place(host); })
        .accuracy();
  };

  std::vector<PruneRow> rows = {dense_row(o, *in.datasets().train, device, accuracy)};
  if (o.two_four) {
    // TP4.21 on one small weight first: an unwritten exercise stops the run now, not after the
    // global sparsities' fine-tuning.
    nn::Parameter probe(Tensor::from_vector<float>({0.5f, -2.0f, 1.0f, 0.25f}, {1, 4}));
    std::vector<nn::PrunedWeight> probe_weights{{.name = "probe", .weight = &probe}};
    mask_two_of_four(probe_weights);
  }
  std::vector<std::optional<double>> targets(o.sparsities.begin(), o.sparsities.end());
  if (o.two_four) targets.push_back(std::nullopt);  // the 2:4 pattern
  for (const std::optional<double>& target : targets) {
    rows.push_back(prune_and_fine_tune(o, in, device, target, accuracy));
  }
  print_prune_table(rows);
  if (!o.plot.empty()) {
    plot(rows, o.model, train::invocation_path(o.plot));
    std::printf("plot: %s\n", o.plot.c_str());
  }
  return rows;
}

}  // namespace day4
