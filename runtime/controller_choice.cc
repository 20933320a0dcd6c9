#include "runtime/controller_choice.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "scheduler/knobs.h"
#include "scheduler/secbad/changepoint_controller.h"

namespace strata {

absl::StatusOr<ControllerChoice> ChooseController(const std::string& kind,
                                                  const std::string& cost_model_path,
                                                  const std::string& mode) {
  ControllerChoice choice;
  choice.kind = kind;
  if (kind == "none") {
    if (!cost_model_path.empty()) {
      return absl::InvalidArgumentError(
          "--cost-model is for --controller changepoint; --controller none takes none");
    }
    return choice;
  }
  if (kind != "changepoint") {
    return absl::InvalidArgumentError(
        absl::StrCat("--controller ", kind, ": unknown (use none or changepoint)"));
  }
  if (cost_model_path.empty()) {
    return absl::InvalidArgumentError(
        "--controller changepoint needs --cost-model FILE (strata_bench train --knob ... "
        "--cost-model-out FILE writes one)");
  }
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json json, ReadJsonFile(cost_model_path));
  STRATA_ASSIGN_OR_RETURN(secbad::KnobCostModel model,
                          secbad::KnobCostModel::FromJson(json, cost_model_path));
  if (model.mode() != mode) {
    return absl::InvalidArgumentError(absl::StrCat(cost_model_path, ": fitted to ", model.mode(),
                                                   " mode, but this job runs in ", mode, " mode"));
  }
  for (const auto& [value, cost] : model.values()) {
    STRATA_RETURN_IF_ERROR_CTX(KnobCatalog::Global().Validate(model.knob(), value),
                               cost_model_path);
  }
  choice.cost_model = std::move(model);
  return choice;
}

std::unique_ptr<Controller> MakeController(const ControllerChoice& choice, int rank) {
  if (rank == 0 && choice.kind == "changepoint" && choice.cost_model.has_value()) {
    // The options were checked with the defaults: Create cannot fail.
    return std::move(*secbad::ChangepointController::Create(*choice.cost_model));
  }
  return std::make_unique<NoChangeController>();
}

}  // namespace strata
