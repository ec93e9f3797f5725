// Loading a lab's checkpoint into its network.
#include "day4_large_models/compression/trained_model.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/core/error.h"
#include "common/models/models.h"
#include "common/train/checkpoint.h"
#include "common/train/training_state.h"

namespace day4 {

using namespace course;

std::unique_ptr<nn::Module> load_trained(const std::string& path, const std::string& model,
                                         const std::string& flag, const Dataset& data,
                                         Device device) {
  const std::string saved = train::read_checkpoint_header(path).value("model", "?");
  COURSE_CHECK(saved == model, flag, " ", path, " is a ", saved, " checkpoint, not ",
               flag == "--teacher" ? "--teacher-model " : "--model ", model);
  auto network = nn::make_model(
      {.name = model, .in_channels = data.channels(), .num_classes = data.num_classes()}, device);
  train::load_checkpoint(path, train::model_state(*network), /*skip_others=*/true);
  network->set_training(false);
  return network;
}

void add_checkpoint_flag(CLI::App& app, const std::string& name, std::string& path,
                         const std::string& what) {
  app.add_option(name, path, what + ": a checkpoint written by a lab's --chkpt")->required();
}

}  // namespace day4
