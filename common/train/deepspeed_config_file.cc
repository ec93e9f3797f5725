// --config through CLI11's configuration-file hook: the file's JSON read as the flags
// deepspeed_flags() maps it to, and what the run took of it said key by key.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/core/error.h"
#include "common/train/deepspeed_config.h"

namespace course::train {

namespace {

using nlohmann::json;

// CLI11's configuration-file hook: the file's JSON as the flags above.
class DeepSpeedConfigFile : public CLI::Config {
 public:
  explicit DeepSpeedConfigFile(std::shared_ptr<ResolvedConfig> resolved)
      : resolved_(std::move(resolved)) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override {
    throw CLI::ConfigError("the lab reads DeepSpeed configuration files; it does not write them");
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string file = "--config " + resolved_->file + ": ";
    std::vector<ConfigFlag> flags;
    std::string last_key;  // where the JSON library stopped, for its messages
    const json::parser_callback_t note_key = [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key) last_key = parsed.get<std::string>();
      return true;
    };
    try {
      flags = deepspeed_flags(json::parse(input, note_key));
    } catch (const json::exception& e) {  // not JSON, a number out of range, a wrong type
      throw CLI::ConfigError(file + "not valid JSON" +
                             (last_key.empty() ? "" : " (at the key '" + last_key + "')") + ": " +
                             e.what());
    } catch (const Error& e) {
      throw CLI::ConfigError(file + e.what());
    }
    resolved_->from_file = flags;
    std::vector<CLI::ConfigItem> items;
    for (const ConfigFlag& f : flags) {
      if (!f.flag.empty()) items.push_back({.name = f.flag, .inputs = {f.value}});
    }
    return items;
  }

 private:
  std::shared_ptr<ResolvedConfig> resolved_;
};

}  // namespace

std::string ResolvedConfig::summary() const {
  std::string text = "--config " + file + ", each key as the run took it:";
  const auto line = [&](const ConfigFlag& f, const std::string& taken) {
    std::string key = "  " + f.key;
    key.resize(std::max<size_t>(key.size() + 2, 44), ' ');
    text += "\n" + key + taken + (f.note.empty() ? "" : " (" + f.note + ")");
  };
  for (const ConfigFlag& f : from_file) {
    if (f.flag.empty()) {
      text += "\n  " + f.key + " " + f.value + ": " + f.note;
      continue;
    }
    const bool is_switch = f.value == "true" || f.value == "false";
    line(f,
         is_switch ? (f.value == "true" ? "--" : "--no-") + f.flag : "--" + f.flag + " " + f.value);
  }
  for (const ConfigFlag& f : overridden) {
    line({.flag = f.flag, .key = f.key},
         "the command line's --" + f.flag + ", not the file's " + f.value);
  }
  return text;
}

namespace {

// Whether `args` give the option `flag` names, by any of its names ("-b 8", "-b8", "--batch-size
// 8", "--batch-size=8", and a switch's "--no-" form).
bool given_on_command_line(const CLI::App& app, const std::string& flag,
                           const std::vector<std::string>& args) {
  const CLI::Option* option = app.get_option_no_throw("--" + flag);
  std::vector<std::string> longs = {flag}, shorts;
  if (option != nullptr) {
    longs = option->get_lnames();
    shorts = option->get_snames();
    for (const std::string& name : option->get_fnames()) longs.push_back(name);
  }
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) {
    const bool as_long = std::any_of(longs.begin(), longs.end(), [&](const std::string& name) {
      return a == "--" + name || a.starts_with("--" + name + "=");
    });
    const bool as_short = std::any_of(shorts.begin(), shorts.end(), [&](const std::string& name) {
      return a.starts_with("-" + name) && !a.starts_with("--");
    });
    return as_long || as_short;
  });
}

}  // namespace

void add_deepspeed_config_flag(CLI::App& app, std::shared_ptr<ResolvedConfig> resolved) {
  app.config_formatter(std::make_shared<DeepSpeedConfigFile>(resolved));
  app.set_config("--config", "",
                 "a DeepSpeed configuration (ds_config.json): its keys as this lab's flags "
                 "(README.md, Part 9); flags on the command line win over the file's");
}

void resolve_config(ResolvedConfig& resolved, const CLI::App& app,
                    const std::vector<std::string>& args) {
  std::vector<ConfigFlag> taken;
  for (const ConfigFlag& f : resolved.from_file) {
    const bool overridden = !f.flag.empty() && given_on_command_line(app, f.flag, args);
    (overridden ? resolved.overridden : taken).push_back(f);
  }
  resolved.from_file = std::move(taken);
}

}  // namespace course::train
