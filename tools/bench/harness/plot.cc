#include "tools/bench/harness/plot.h"

#include "absl/strings/str_cat.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {

absl::Status DrawReport(const nlohmann::json& report, const std::string& png_path,
                        const std::string& what) {
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch, ScratchDirectory::Make("strata_plot"));
  const std::string json_path = scratch.path() + "/report.json";
  STRATA_RETURN_IF_ERROR(WriteJsonFile(json_path, report));
  ProcessSpec spec;
  spec.argv = {"python3", SourceDir() + "/tools/bench/plot_report.py", json_path, png_path};
  if (!what.empty()) spec.argv.insert(spec.argv.end(), {"--what", what});
  spec.output_path = scratch.path() + "/plot.log";
  const absl::StatusOr<int> code = RunProcess(spec, absl::Minutes(1));
  if (absl::IsNotFound(code.status())) {
    return absl::NotFoundError("python3 is not installed (apt-get install python3)");
  }
  STRATA_RETURN_IF_ERROR(code.status());
  const std::string log = FileTail(spec.output_path, 1000);
  switch (*code) {
    case 0:
      return absl::OkStatus();
    case 2:
      return absl::InvalidArgumentError(log);
    case 3:
      return absl::NotFoundError("gnuplot is not installed (apt-get install gnuplot-nox)");
    default:
      return absl::InternalError(absl::StrCat("cannot draw ", png_path, ": ", log));
  }
}

}  // namespace strata::bench
