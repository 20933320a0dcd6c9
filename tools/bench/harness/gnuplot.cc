#include "tools/bench/harness/gnuplot.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/process/subprocess.h"
#include "core/status.h"

namespace strata::bench {

std::string GnuplotString(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "''"}}), "'");
}

absl::Status RunGnuplotAndClean(const std::string& script, const std::string& dir,
                                const std::string& png_path) {
  ProcessSpec spec;
  spec.argv = {"gnuplot", script};
  spec.output_path = dir + "/gnuplot.log";
  absl::StatusOr<int> code = RunProcess(spec, absl::Minutes(1));
  const std::string log = FileTail(spec.output_path, 1000);
  std::filesystem::remove_all(dir);
  if (absl::IsNotFound(code.status())) {
    return absl::NotFoundError("gnuplot is not installed (apt-get install gnuplot-nox)");
  }
  STRATA_RETURN_IF_ERROR(code.status());
  if (*code != 0 || !std::filesystem::exists(png_path) ||
      std::filesystem::file_size(png_path) == 0) {
    return absl::InternalError(absl::StrCat("gnuplot could not draw ", png_path, ": ", log));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
