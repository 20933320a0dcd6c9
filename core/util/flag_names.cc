#include "core/util/flag_names.h"

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
  for (auto& s : storage_) pointers_.push_back(s.data());
}

}  // namespace strata
