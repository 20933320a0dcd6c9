// strata_fit: fits a runtime controller's cost model to the runs a
// benchmark recorded, for strata_launch --controller changepoint|secbad
// --cost-model. The runs come from a saved report of
// `strata_bench train --knob NAME=V1,V2` (its "fit_inputs"; fit_inputs.h),
// so a model is fitted again (after a fix to a fitter, or from a colleague's
// runs) without training anything.
//
//   strata_fit --report train.json --out cost_model.json
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "startup/program_startup.h"
#include "tools/fit/cost_model_fit.h"
#include "tools/fit/fit_inputs.h"

ABSL_FLAG(std::string, report, "",
          "a report of strata_bench train --knob (JSON), or a file of its fit_inputs alone");
ABSL_FLAG(std::string, out, "", "where the cost model's JSON goes");

namespace strata::fit {
namespace {

absl::Status Run() {
  const std::string report_path = absl::GetFlag(FLAGS_report);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (report_path.empty() || out.empty()) {
    return absl::InvalidArgumentError("--report REPORT.json and --out MODEL.json are required");
  }
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json report, ReadJsonFile(report_path));
  if (!report.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(report_path, " holds no JSON object"));
  }
  if (!report.contains("fit_inputs") && !report.contains("knob")) {
    return absl::InvalidArgumentError(
        absl::StrCat(report_path,
                     " has no fit_inputs: strata_bench train records them with --knob NAME=V1,V2 "
                     "and one cluster mode"));
  }
  absl::StatusOr<FitInputs> inputs =
      FitInputs::FromJson(report.contains("fit_inputs") ? report["fit_inputs"] : report);
  if (!inputs.ok()) return WithContext(inputs.status(), report_path);
  std::printf(
      "strata_fit: %s (%s, %zu cost samples, %zu runs of link readings, %zu values of "
      "conv worker speeds) from %s\n",
      inputs->knob.c_str(), inputs->mode.c_str(), inputs->cost_samples.size(),
      inputs->link_runs.size(), inputs->speed_runs.size(), report_path.c_str());
  return FitAndWriteCostModel(*inputs, out);
}

}  // namespace
}  // namespace strata::fit

int main(int argc, char** argv) {
  strata::StartProgram(argc, argv,
                       "Fits a runtime controller's cost model to recorded runs.\n"
                       "  strata_fit --report REPORT.json --out MODEL.json");
  return strata::ExitCodeFor("strata_fit", strata::fit::Run());
}
