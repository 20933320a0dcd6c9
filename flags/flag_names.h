// Lets every binary accept GNU-style flag names with dashes
// (--max-steps) as well as Abseil's underscores (--max_steps).
#ifndef STRATA_FLAGS_FLAG_NAMES_H_
#define STRATA_FLAGS_FLAG_NAMES_H_

#include <string>
#include <vector>

namespace strata {

// Returns argv with the dashes inside each "--flag-name[=value]" turned into
// underscores (the value after '=' is left alone; "--" ends flag parsing).
// The returned strings back the char* list `ParseArgs` hands to Abseil.
class NormalizedArgs {
 public:
  NormalizedArgs(int argc, char** argv);
  // Removes every "--NAME VALUE" and "--NAME=VALUE" (NAME with underscores)
  // and returns the values in order: a flag that may be given several
  // times (Abseil keeps only the last). A "--NAME" without a value is left
  // for Abseil to refuse.
  std::vector<std::string> TakeRepeated(const std::string& name);
  int argc() const { return static_cast<int>(pointers_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  void Point();
  std::vector<std::string> storage_;
  std::vector<char*> pointers_;
};

}  // namespace strata

#endif  // STRATA_FLAGS_FLAG_NAMES_H_
