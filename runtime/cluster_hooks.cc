#include "runtime/cluster_hooks.h"

#include "core/model/batch_shares.h"
#include "core/net/wire_format.h"
#include "core/status.h"
#include "scheduler/crossover.h"

namespace strata {

absl::Status ClusterHooks::DeclareWireFormat(const std::string& initial, FcLink* link) {
  STRATA_ASSIGN_OR_RETURN(const wire::DataType start, ParseWireFormat(initial));
  const auto apply = [this, link](wire::DataType type) {
    client_.kv().set_wire_format(type);
    if (link != nullptr) link->set_wire_format(type);
  };
  apply(start);
  knobs_.Declare(kWireFormatKnob, initial, [apply](const std::string& value) -> absl::Status {
    STRATA_ASSIGN_OR_RETURN(const wire::DataType type, ParseWireFormat(value));
    apply(type);
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

void ClusterHooks::Attach(StepLoopOptions* options) {
  if (DevicePolicy* device = options->device; device != nullptr && device->TakesTurns()) {
    knobs_.Declare(kDeviceSharingKnob, "crossover", [device](const std::string& value) {
      device->SetTakesTurns(value == "crossover");
      return absl::OkStatus();
    });
  }
  options->knobs = &knobs_;
  options->schedule = &schedule_;
  options->controller = controller_.get();
}

absl::Status ClusterHooks::DeclareBatchShares(const std::string& initial, int64_t global,
                                              int conv_workers, RowsApplier apply) {
  STRATA_ASSIGN_OR_RETURN(const BatchShares start, BatchShares::Parse(initial));
  STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> rows, start.Rows(global, conv_workers));
  apply(rows);
  knobs_.Declare(kBatchSharesKnob, start.ForRanks(conv_workers).ToString(),
                 [apply, global, conv_workers](const std::string& value) -> absl::Status {
                   STRATA_ASSIGN_OR_RETURN(const BatchShares shares, BatchShares::Parse(value));
                   STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> rows,
                                           shares.Rows(global, conv_workers));
                   apply(rows);
                   return absl::OkStatus();
                 });
  return absl::OkStatus();
}

}  // namespace strata
