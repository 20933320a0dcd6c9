#include "scheduler/secbad/knob_policy.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/tensor/tensor.h"

namespace strata::secbad {
namespace {

// Features each belief gives per context dimension.
int FeaturesPerDimension(const std::string& belief) {
  if (belief == "plain") return 0;
  if (belief == "oracle") return 1;
  return 2;  // mean and standard deviation
}

}  // namespace

const std::vector<std::string>& KnobPolicyBeliefs() {
  static const std::vector<std::string> beliefs = {"secbad", "constant-hazard", "whole-history",
                                                   "plain", "oracle"};
  return beliefs;
}

KnobPolicy::KnobPolicy(std::shared_ptr<const KnobContext> context, KnobPolicySpec spec,
                       std::unique_ptr<ActorCritic> net)
    : context_(std::move(context)), spec_(std::move(spec)), net_(std::move(net)) {
  for (const NormalGammaPrior& p : context_->Priors()) prior_means_.push_back(p.mean);
}

absl::StatusOr<SegmentPrior> KnobPolicy::Segments() const {
  if (spec_.belief == "constant-hazard") {
    return SegmentPrior::ConstantHazard(1.0 / spec_.segment_mean);
  }
  return SegmentPrior::TruncatedNormal(spec_.segment_mean, spec_.segment_stddev, spec_.segment_min);
}

absl::StatusOr<std::unique_ptr<KnobPolicy>> KnobPolicy::Create(
    std::shared_ptr<const KnobContext> context, const KnobPolicySpec& spec, uint64_t seed) {
  const std::vector<std::string>& beliefs = KnobPolicyBeliefs();
  if (std::find(beliefs.begin(), beliefs.end(), spec.belief) == beliefs.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown belief \"", spec.belief, "\" (use ",
                                                   absl::StrJoin(beliefs, ", "), ")"));
  }
  if (spec.window < 2 || spec.episode_iterations < 1) {
    return absl::InvalidArgumentError("a knob policy needs a window >= 2 and episodes >= 1");
  }
  if (!(spec.decision_margin >= 0 && spec.decision_margin <= kMaxDecisionMargin)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a knob policy's decision margin must be in [0, ", kMaxDecisionMargin,
                     "], got ", spec.decision_margin));
  }
  const int inputs = context->dims() * FeaturesPerDimension(spec.belief) +
                     static_cast<int>(context->values().size());
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ActorCritic> net,
      ActorCritic::Create({inputs, static_cast<int>(context->values().size()), spec.hidden}, seed));
  std::unique_ptr<KnobPolicy> policy(new KnobPolicy(std::move(context), spec, std::move(net)));
  STRATA_RETURN_IF_ERROR(policy->Segments().status());
  STRATA_RETURN_IF_ERROR(
      NormalGammaModel::Create(policy->CentredPriors(), policy->CentredOutliers()).status());
  return policy;
}

nlohmann::json KnobPolicy::AboutTheKnob() const {
  return {{"knob", context_->knob()},
          {"context", context_->kind()},
          {"dims", context_->dims()},
          {"values", context_->values()}};
}

absl::Status KnobPolicy::Save(const std::string& path) const {
  nlohmann::json about = AboutTheKnob();
  about["belief"] = spec_.belief;
  about["segment"] = {
      {"mean", spec_.segment_mean}, {"stddev", spec_.segment_stddev}, {"min", spec_.segment_min}};
  about["window"] = spec_.window;
  about["episode_iterations"] = spec_.episode_iterations;
  about["hidden"] = spec_.hidden;
  about["decision_margin"] = spec_.decision_margin;
  return net_->Save(path, spec_.belief, about);
}

absl::StatusOr<std::unique_ptr<KnobPolicy>> KnobPolicy::Load(
    const std::string& path, std::shared_ptr<const KnobContext> context) {
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json about, ActorCritic::ReadAbout(path));
  KnobPolicySpec spec;
  const std::string where = absl::StrCat("--policy-file ", path);
  try {
    spec.belief = about.at("belief").get<std::string>();
    const nlohmann::json& segment = about.at("segment");
    spec.segment_mean = segment.at("mean").get<double>();
    spec.segment_stddev = segment.at("stddev").get<double>();
    spec.segment_min = segment.at("min").get<int>();
    spec.window = about.at("window").get<int>();
    spec.episode_iterations = about.at("episode_iterations").get<int>();
    spec.hidden = about.value("hidden", spec.hidden);
    spec.decision_margin = about.value("decision_margin", spec.decision_margin);
  } catch (const nlohmann::json::exception&) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": not a knob policy (it does not say its belief, segment prior and window)"));
  }
  // A fresh policy of that spec gives the shape the file must have.
  absl::StatusOr<std::unique_ptr<KnobPolicy>> fresh = Create(context, spec, 0);
  STRATA_RETURN_IF_ERROR_CTX(fresh.status(), where);
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ActorCritic> net,
      ActorCritic::Load(path, (*fresh)->net_->shape(), spec.belief, (*fresh)->AboutTheKnob()));
  (*fresh)->net_ = std::move(net);
  return std::move(*fresh);
}

std::vector<NormalGammaPrior> KnobPolicy::CentredPriors() const {
  std::vector<NormalGammaPrior> centred = context_->Priors();
  for (NormalGammaPrior& p : centred) p.mean = 0;
  return centred;
}

OutlierModel KnobPolicy::CentredOutliers() const {
  OutlierModel centred = context_->outliers();
  for (size_t d = 0; d < centred.low.size() && d < prior_means_.size(); ++d) {
    centred.low[d] -= prior_means_[d];
    centred.high[d] -= prior_means_[d];
  }
  return centred;
}

std::unique_ptr<ContextTracker> KnobPolicy::NewTracker() const {
  const std::string& belief = spec_.belief;
  if (belief == "plain") return NoContext();
  if (belief == "oracle") return OracleContext(context_->dims());
  // The priors and the segment prior were checked by Create.
  auto model = [&] {
    return std::make_unique<NormalGammaModel>(
        *NormalGammaModel::Create(CentredPriors(), CentredOutliers()));
  };
  if (belief == "whole-history") return WholeHistoryContext(model(), spec_.episode_iterations);
  return SegmentContext(*Segments(), model(), spec_.window);
}

void KnobPolicy::Observe(ContextTracker& tracker, const std::vector<double>& seen,
                         const std::vector<double>& truth) const {
  std::vector<double> x(seen.size()), t(truth.size());
  for (size_t d = 0; d < seen.size(); ++d) x[d] = seen[d] - prior_means_[d];
  for (size_t d = 0; d < truth.size(); ++d) t[d] = truth[d] - prior_means_[d];
  tracker.Observe(x.data(), truth.empty() ? nullptr : t.data());
}

int KnobPolicy::inputs() const { return net_->shape().inputs; }

void KnobPolicy::WriteState(const ContextTracker& tracker, int in_force, float* out) const {
  tracker.Features(out);
  float* onehot = out + tracker.features();
  const int values = static_cast<int>(context_->values().size());
  std::fill(onehot, onehot + values, 0.0f);
  if (in_force >= 0 && in_force < values) onehot[in_force] = 1.0f;
}

std::vector<double> KnobPolicy::Probabilities(const float* state) {
  const Tensor states =
      Tensor::FromVector({1, inputs()}, std::vector<float>(state, state + inputs()));
  const ActorCritic::Output out = net_->Forward(states, /*training=*/false);
  const float* logits = out.logits.data();
  const int actions = net_->shape().actions;
  const double top = *std::max_element(logits, logits + actions);
  std::vector<double> p(static_cast<size_t>(actions));
  double total = 0;
  for (int a = 0; a < actions; ++a) total += p[a] = std::exp(logits[a] - top);
  for (double& x : p) x /= total;
  return p;
}

int KnobPolicy::Choose(const float* state) {
  const std::vector<double> p = Probabilities(state);
  return static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
}

int KnobDecision::Next(const std::vector<double>& p, int held) {
  const int likeliest = static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
  if (held < 0 || held >= static_cast<int>(p.size())) {
    Reset();
    return likeliest;
  }
  if (likeliest == held) {
    Reset();
    return held;
  }
  if (likeliest != candidate_) {
    candidate_ = likeliest;
    lead_ = 0;
  }
  lead_ += p[likeliest] - p[held];
  if (lead_ < margin_) return held;
  Reset();
  return likeliest;
}

void KnobDecision::Reset() {
  candidate_ = -1;
  lead_ = 0;
}

}  // namespace strata::secbad
