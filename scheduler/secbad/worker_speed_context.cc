#include "scheduler/secbad/worker_speed_context.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/control/knobs.h"
#include "core/model/batch_shares.h"
#include "core/status.h"
#include "core/util/json_reader.h"
#include "core/util/statistics.h"

namespace strata::secbad {
namespace {

const std::string kWorkerSpeedKind = "worker-speed";
const std::string kKnobName = kBatchSharesKnob;

// ln(seconds per row) of every conv worker, an observation once all have
// reported an iteration (their records may come in any order, relayed a
// few iterations late).
constexpr int64_t kStartupIterations = 2;

class WorkerSpeedReader final : public ContextReader {
 public:
  explicit WorkerSpeedReader(int conv_workers)
      : conv_workers_(conv_workers), last_rows_(conv_workers, -1), taken_(conv_workers, 0) {}

  std::optional<ContextObservation> Take(const IterationRecord& record) override {
    int rank = -1;
    if (!record.completed || !ParseRank(record.process, &rank) || rank >= conv_workers_) {
      return std::nullopt;
    }
    // Start-up (a process's first kStartupIterations: its first touches of
    // memory, its peers starting beside it on the cores), and the first
    // iteration at a new batch size (kernels made for it): not the
    // worker's speed.
    const bool settled = taken_[rank] >= kStartupIterations && last_rows_[rank] == record.rows;
    last_rows_[rank] = record.rows;
    ++taken_[rank];
    if (!settled || record.rows <= 0 || !(record.compute_seconds > 0) ||
        record.iteration <= completed_) {
      return std::nullopt;
    }
    Partial& p = partial_[record.iteration];
    if (p.values.empty()) p.values.assign(conv_workers_, std::nan(""));
    p.values[rank] = std::log(record.compute_seconds / static_cast<double>(record.rows));
    if (!record.knobs.empty()) {
      const auto in_force = record.knobs.find(kKnobName);
      if (in_force != record.knobs.end()) p.in_force = in_force->second;
    }
    if (std::any_of(p.values.begin(), p.values.end(), [](double v) { return std::isnan(v); })) {
      // Keep a few iterations in waiting; older ones will not complete.
      while (partial_.size() > 16) partial_.erase(partial_.begin());
      return std::nullopt;
    }
    ContextObservation seen{record.iteration, std::move(p.values), std::move(p.in_force)};
    completed_ = record.iteration;
    partial_.erase(partial_.begin(), partial_.upper_bound(record.iteration));
    return seen;
  }

 private:
  struct Partial {
    std::vector<double> values;
    std::string in_force;
  };
  // "conv worker 3" -> 3.
  static bool ParseRank(const std::string& process, int* rank) {
    constexpr char kPrefix[] = "conv worker ";
    if (process.rfind(kPrefix, 0) != 0) return false;
    return absl::SimpleAtoi(process.substr(sizeof(kPrefix) - 1), rank) && *rank >= 0;
  }

  int conv_workers_;
  std::vector<int64_t> last_rows_;
  std::vector<int64_t> taken_;  // completed records of each conv worker
  int64_t completed_ = -1;
  std::map<int64_t, Partial> partial_;
};

}  // namespace

const std::string& WorkerSpeedContext::kind() const { return kWorkerSpeedKind; }
const std::string& WorkerSpeedContext::knob() const { return kKnobName; }

absl::Status WorkerSpeedContext::Complete(const std::string& source) {
  if (global_batch_ < conv_workers_ || conv_workers_ < 1) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": a global batch of ", global_batch_,
                                                   " over ", conv_workers_, " conv workers"));
  }
  if (overhead_.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": values: expected two or more batch shares to choose between"));
  }
  for (const auto& [value, overhead] : overhead_) {
    absl::StatusOr<BatchShares> shares = BatchShares::Parse(value);
    absl::StatusOr<std::vector<int64_t>> rows =
        shares.ok() ? shares->Rows(global_batch_, conv_workers_)
                    : absl::StatusOr<std::vector<int64_t>>(shares.status());
    if (!rows.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": values.", value, ": ", rows.status().message()));
    }
    if (!(overhead >= 0) || !std::isfinite(overhead)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": values.", value, ": overhead_seconds must be finite and >= 0"));
    }
    values_.push_back(value);
    rows_[value] = *rows;
  }
  if (!(seconds_per_row_ > 0) || !(noise_ > 0) || !std::isfinite(seconds_per_row_ + noise_)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": seconds_per_row and noise must be finite and > 0"));
  }
  if (!(trace_.slow_probability >= 0 && trace_.slow_probability <= 1) ||
      !(trace_.min_slowdown >= 1) || !(trace_.max_slowdown >= trace_.min_slowdown) ||
      !(trace_.spread >= 1 && trace_.spread <= 10) ||
      !(trace_.outliers >= 0 && trace_.outliers < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": trace: slow_probability must be in [0, 1], 1 <= min_slowdown <= "
                     "max_slowdown, the spread in [1, 10], and the outliers in [0, 1)"));
  }
  return absl::OkStatus();
}

absl::Status WorkerSpeedContext::FitsJob(int conv_workers, int64_t global_batch) const {
  if (conv_workers > 0 && conv_workers != conv_workers_) {
    return absl::InvalidArgumentError(absl::StrCat("fitted to a job of ", conv_workers_,
                                                   " conv workers; this one has ", conv_workers));
  }
  if (global_batch > 0 && global_batch != global_batch_) {
    return absl::InvalidArgumentError(absl::StrCat("fitted to a global batch of ", global_batch_,
                                                   "; this job's is ", global_batch));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const WorkerSpeedContext>> WorkerSpeedContext::Fit(
    std::string mode, int64_t global_batch, int conv_workers,
    const std::map<std::string, std::vector<std::vector<SpeedSample>>>& runs,
    WorkerSpeedTrace trace) {
  if (conv_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model: conv_workers must be at least 1, got ", conv_workers));
  }
  std::shared_ptr<WorkerSpeedContext> c(new WorkerSpeedContext());
  c->mode_ = std::move(mode);
  c->global_batch_ = global_batch;
  c->conv_workers_ = conv_workers;
  c->trace_ = trace;
  std::vector<double> per_row, deviations;
  // Per iteration, its conv workers' largest squared deviation from their
  // run's mean: an iteration is an outlier when one worker's is.
  std::vector<double> widest;
  for (const auto& [value, of_value] : runs) {
    std::vector<double> overheads;
    for (const std::vector<SpeedSample>& run : of_value) {
      // readings[r][i]: conv worker r's ln(seconds per row) in iteration i,
      // NaN where it computed no rows.
      std::vector<std::vector<double>> readings(conv_workers,
                                                std::vector<double>(run.size(), std::nan("")));
      for (size_t i = 0; i < run.size(); ++i) {
        const SpeedSample& s = run[i];
        if (s.compute_seconds.size() != static_cast<size_t>(conv_workers) ||
            s.rows.size() != static_cast<size_t>(conv_workers)) {
          return absl::InvalidArgumentError(
              absl::StrCat("cost model: batch.shares=", value,
                           ": an iteration without one compute time and "
                           "row count per conv worker (",
                           conv_workers, ")"));
        }
        overheads.push_back(std::max(
            0.0, s.wall_seconds -
                     *std::max_element(s.compute_seconds.begin(), s.compute_seconds.end())));
        for (int r = 0; r < conv_workers; ++r) {
          if (s.rows[r] <= 0 || !(s.compute_seconds[r] > 0)) continue;
          const double t = s.compute_seconds[r] / static_cast<double>(s.rows[r]);
          per_row.push_back(t);
          readings[r][i] = std::log(t);
        }
      }
      // How far each reading strays from its worker's mean over the run.
      std::vector<double> mean(conv_workers, 0.0);
      for (int r = 0; r < conv_workers; ++r) {
        double n = 0;
        for (double x : readings[r]) {
          if (std::isnan(x)) continue;
          mean[r] += x;
          n += 1;
        }
        if (n > 0) mean[r] /= n;
      }
      for (size_t i = 0; i < run.size(); ++i) {
        double w = 0;
        for (int r = 0; r < conv_workers; ++r) {
          if (std::isnan(readings[r][i])) continue;
          const double squared = (readings[r][i] - mean[r]) * (readings[r][i] - mean[r]);
          deviations.push_back(squared);
          w = std::max(w, squared);
        }
        widest.push_back(w);
      }
    }
    if (overheads.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cost model: batch.shares=", value, " has no measured iteration"));
    }
    c->overhead_[value] = Median(overheads);
  }
  if (per_row.empty()) {
    return absl::InvalidArgumentError("cost model: no conv worker computed any rows");
  }
  std::sort(per_row.begin(), per_row.end());
  c->seconds_per_row_ = per_row[per_row.size() / 4];
  // The readings' standard deviation about their runs' means: not a
  // robust estimate, on purpose, since a worker's readings go back and
  // forth between two speeds for stretches (the server's threads run on
  // one core or the other) and every one of those is noise to the
  // controllers. The floor keeps a quiet table from making every jitter a
  // change.
  double squares = 0;
  for (double d : deviations) squares += d;
  c->noise_ = std::max(
      0.05, deviations.empty() ? 0.1 : std::sqrt(squares / static_cast<double>(deviations.size())));
  const double far = kOutlierDeviations * c->noise_;
  c->trace_.outliers =
      widest.empty() ? 0.0
                     : static_cast<double>(std::count_if(widest.begin(), widest.end(),
                                                         [&](double w) { return w > far * far; })) /
                           static_cast<double>(widest.size());
  STRATA_RETURN_IF_ERROR(c->Complete("cost model"));
  return std::shared_ptr<const WorkerSpeedContext>(std::move(c));
}

absl::StatusOr<std::shared_ptr<const WorkerSpeedContext>> WorkerSpeedContext::FromJson(
    const nlohmann::json& json, const std::string& source) {
  std::shared_ptr<WorkerSpeedContext> c(new WorkerSpeedContext());
  JsonObjectReader top(json, source);
  std::string knob, context;
  int64_t conv_workers = 0;
  STRATA_RETURN_IF_ERROR(top.Required("knob", &knob));
  STRATA_RETURN_IF_ERROR(top.Required("context", &context));
  STRATA_RETURN_IF_ERROR(top.Required("mode", &c->mode_));
  STRATA_RETURN_IF_ERROR(top.Required("global_batch", &c->global_batch_));
  STRATA_RETURN_IF_ERROR(top.Required("conv_workers", &conv_workers));
  STRATA_RETURN_IF_ERROR(top.Required("seconds_per_row", &c->seconds_per_row_));
  STRATA_RETURN_IF_ERROR(top.Optional("noise", &c->noise_));
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json* values, top.Child("values"));
  if (top.Has("trace")) {
    STRATA_ASSIGN_OR_RETURN(const nlohmann::json* trace, top.Child("trace"));
    JsonObjectReader r(*trace, top.ChildPath("trace"));
    STRATA_RETURN_IF_ERROR(r.Optional("slow_probability", &c->trace_.slow_probability));
    STRATA_RETURN_IF_ERROR(r.Optional("min_slowdown", &c->trace_.min_slowdown));
    STRATA_RETURN_IF_ERROR(r.Optional("max_slowdown", &c->trace_.max_slowdown));
    STRATA_RETURN_IF_ERROR(r.Optional("spread", &c->trace_.spread));
    STRATA_RETURN_IF_ERROR(r.Optional("outliers", &c->trace_.outliers));
    STRATA_RETURN_IF_ERROR(r.Finish());
  }
  STRATA_RETURN_IF_ERROR(top.Finish());
  if (knob != kKnobName || context != kWorkerSpeedKind) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": a worker-speed cost model is for ", kKnobName, ", not ", knob));
  }
  if (conv_workers < 1 || conv_workers > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ".conv_workers: ", conv_workers, " is not from 1 to 4096"));
  }
  c->conv_workers_ = static_cast<int>(conv_workers);
  if (!values->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(top.ChildPath("values"), ": expected an object of batch shares"));
  }
  for (const auto& [value, fields] : values->items()) {
    JsonObjectReader r(fields, top.ChildPath("values") + "." + value);
    double overhead = 0;
    STRATA_RETURN_IF_ERROR(r.Required("overhead_seconds", &overhead));
    STRATA_RETURN_IF_ERROR(r.Finish());
    c->overhead_[value] = overhead;
  }
  STRATA_RETURN_IF_ERROR(c->Complete(source));
  return std::shared_ptr<const WorkerSpeedContext>(std::move(c));
}

std::unique_ptr<ContextReader> WorkerSpeedContext::NewReader() const {
  return std::make_unique<WorkerSpeedReader>(conv_workers_);
}

double WorkerSpeedContext::IterationSeconds(const std::string& value,
                                            const std::vector<double>& context) const {
  const std::vector<int64_t>& rows = rows_.at(value);
  double slowest = 0;
  for (int r = 0; r < conv_workers_; ++r) {
    slowest = std::max(slowest, static_cast<double>(rows[r]) * std::exp(context[r]));
  }
  return slowest + overhead_.at(value);
}

std::vector<NormalGammaPrior> WorkerSpeedContext::Priors() const {
  // Speeds within a factor of e^1.5 (4.5) of the usual one either way.
  return std::vector<NormalGammaPrior>(
      conv_workers_, NormalGammaPrior::For(std::log(seconds_per_row_), noise_, 1.5));
}

std::vector<double> WorkerSpeedContext::SampleContext(Rng& rng) const {
  std::vector<double> context(conv_workers_, std::log(seconds_per_row_));
  const double spread = std::log(trace_.spread);
  for (double& c : context) c += spread * (2 * rng.Uniform() - 1);
  if (rng.Uniform() < trace_.slow_probability) {
    const double lo = std::log(trace_.min_slowdown), hi = std::log(trace_.max_slowdown);
    context[rng.Below(static_cast<uint64_t>(conv_workers_))] += lo + (hi - lo) * rng.Uniform();
  }
  return context;
}

OutlierModel WorkerSpeedContext::outliers() const {
  if (trace_.outliers == 0) return {};
  const double usual = std::log(seconds_per_row_);
  return {trace_.outliers, std::vector<double>(conv_workers_, usual - kOutlierSpread),
          std::vector<double>(conv_workers_, usual + kOutlierSpread)};
}

std::string WorkerSpeedContext::Describe(const std::vector<double>& context) const {
  std::vector<std::string> ms;
  for (double c : context) ms.push_back(absl::StrFormat("%.3g", 1000 * std::exp(c)));
  return absl::StrCat("conv workers' ms per row ", absl::StrJoin(ms, ", "));
}

nlohmann::json WorkerSpeedContext::ToJson() const {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [value, overhead] : overhead_) values[value] = {{"overhead_seconds", overhead}};
  return {{"knob", kKnobName},
          {"mode", mode_},
          {"context", kWorkerSpeedKind},
          {"global_batch", global_batch_},
          {"conv_workers", conv_workers_},
          {"seconds_per_row", seconds_per_row_},
          {"noise", noise_},
          {"values", values},
          {"trace",
           {{"slow_probability", trace_.slow_probability},
            {"min_slowdown", trace_.min_slowdown},
            {"max_slowdown", trace_.max_slowdown},
            {"spread", trace_.spread},
            {"outliers", trace_.outliers}}}};
}

}  // namespace strata::secbad
