#include "flags/flag_names.h"

namespace strata {

NormalizedArgs::NormalizedArgs(int argc, char** argv) {
  bool flags_ended = false;
  storage_.reserve(argc);
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") flags_ended = true;
    if (!flags_ended && i > 0 && arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      const size_t end = arg.find('=');
      for (size_t j = 2; j < std::min(end, arg.size()); ++j) {
        if (arg[j] == '-') arg[j] = '_';
      }
    }
    storage_.push_back(std::move(arg));
  }
  Point();
}

void NormalizedArgs::Point() {
  pointers_.clear();
  for (auto& s : storage_) pointers_.push_back(s.data());
}

std::vector<std::string> NormalizedArgs::TakeRepeated(const std::string& name) {
  const std::string flag = "--" + name, with_value = flag + "=";
  std::vector<std::string> values, kept;
  bool flags_ended = false;
  for (size_t i = 0; i < storage_.size(); ++i) {
    const std::string& arg = storage_[i];
    if (arg == "--") flags_ended = true;
    if (!flags_ended && i > 0 && arg.compare(0, with_value.size(), with_value) == 0) {
      values.push_back(arg.substr(with_value.size()));
    } else if (!flags_ended && i > 0 && arg == flag && i + 1 < storage_.size()) {
      values.push_back(storage_[++i]);
    } else {
      kept.push_back(arg);
    }
  }
  storage_ = std::move(kept);
  Point();
  return values;
}

}  // namespace strata
