#include "runtime/controller_choice.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/control/knobs.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "scheduler/secbad/changepoint_controller.h"
#include "scheduler/secbad/secbad_controller.h"

namespace strata {

absl::StatusOr<ControllerChoice> ChooseController(const std::string& kind,
                                                  const std::string& cost_model_path,
                                                  const std::string& policy_path,
                                                  const ControlledJob& job) {
  ControllerChoice choice;
  choice.kind = kind;
  const bool learned = kind == "secbad";
  const bool modelled = kind == "changepoint" || learned;
  if (!modelled && kind != "none" && kind != "static") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--controller ", kind, ": unknown (use none, static, changepoint or secbad)"));
  }
  if (!modelled && !cost_model_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cost-model is for --controller changepoint or secbad; --controller ", kind,
        " takes none"));
  }
  if (!learned && !policy_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--policy-file is for --controller secbad; --controller ", kind, " takes none"));
  }
  if (!modelled) return choice;
  if (cost_model_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--controller ", kind,
        " needs --cost-model FILE (strata_bench train --knob ... --cost-model-out FILE writes "
        "one)"));
  }
  if (learned && policy_path.empty()) {
    return absl::InvalidArgumentError(
        "--controller secbad needs --policy-file FILE (strata_research secbad-runtime "
        "--cost-model ... --policy-dir DIR trains one)");
  }
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json json, ReadJsonFile(cost_model_path));
  STRATA_ASSIGN_OR_RETURN(choice.context, secbad::KnobContextFromJson(json, cost_model_path));
  if (choice.context->mode() != job.mode) {
    return absl::InvalidArgumentError(absl::StrCat(cost_model_path, ": fitted to ",
                                                   choice.context->mode(),
                                                   " mode, but this job runs in ", job.mode,
                                                   " mode"));
  }
  STRATA_RETURN_IF_ERROR_CTX(choice.context->FitsJob(job.conv_workers, job.global_batch),
                             cost_model_path);
  for (const std::string& value : choice.context->values()) {
    STRATA_RETURN_IF_ERROR_CTX(KnobCatalog::Global().Validate(choice.context->knob(), value),
                               cost_model_path);
  }
  if (learned) {
    choice.policy_file = policy_path;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<secbad::KnobPolicy> policy,
                            secbad::KnobPolicy::Load(policy_path, choice.context));
    STRATA_RETURN_IF_ERROR(secbad::SecbadController::Create(std::move(policy)).status());
  }
  return choice;
}

absl::StatusOr<std::vector<ControllerChoice>> ChooseControllers(
    const std::string& kind, const std::string& cost_models, const std::string& policy_files,
    const std::vector<ControlledJob>& jobs) {
  // Each job's file from a list of one for all or one per job.
  auto per_job = [&](const std::string& flag,
                     const std::string& list) -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> files = absl::StrSplit(list, ',', absl::SkipEmpty());
    if (files.empty()) return std::vector<std::string>(jobs.size());
    if (files.size() == 1) return std::vector<std::string>(jobs.size(), files[0]);
    if (files.size() != jobs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " names ", files.size(), " files for ", jobs.size(),
          jobs.size() == 1 ? " job" : " jobs", ": give one for every job, or one per job"));
    }
    return files;
  };
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> models,
                          per_job("--cost-model", cost_models));
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> policies,
                          per_job("--policy-file", policy_files));
  std::vector<ControllerChoice> choices;
  for (size_t i = 0; i < jobs.size(); ++i) {
    absl::StatusOr<ControllerChoice> choice =
        ChooseController(kind, models[i], policies[i], jobs[i]);
    if (!choice.ok() && jobs.size() > 1) {
      return WithContext(choice.status(), absl::StrCat("job ", i + 1));
    }
    STRATA_RETURN_IF_ERROR(choice.status());
    choices.push_back(*std::move(choice));
  }
  return choices;
}

absl::StatusOr<std::unique_ptr<Controller>> MakeController(const ControllerChoice& choice,
                                                           int rank) {
  if (rank != 0 || choice.context == nullptr) return std::make_unique<NoChangeController>();
  if (choice.kind == "changepoint") {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<secbad::ChangepointController> controller,
                            secbad::ChangepointController::Create(choice.context));
    return std::unique_ptr<Controller>(std::move(controller));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<secbad::KnobPolicy> policy,
                          secbad::KnobPolicy::Load(choice.policy_file, choice.context));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<secbad::SecbadController> controller,
                          secbad::SecbadController::Create(std::move(policy)));
  return std::unique_ptr<Controller>(std::move(controller));
}

}  // namespace strata
