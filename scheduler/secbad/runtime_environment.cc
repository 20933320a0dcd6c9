#include "scheduler/secbad/runtime_environment.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "scheduler/secbad/changepoint_controller.h"

namespace strata::secbad {
namespace {

// The evaluation's scores from its totals: `efficiency` summed over the
// episodes (each episode's mean), `requests` summed over them, each
// episode `steps` iterations long.
void Score(double efficiency, int64_t requests, int episodes, int steps, RuntimeRun& run) {
  episodes = std::max(1, episodes);
  run.efficiency = efficiency / episodes;
  run.requests_per_1000 = 1000.0 * static_cast<double>(requests) / (episodes * steps);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RuntimeEnvironment>> RuntimeEnvironment::Create(
    std::shared_ptr<const KnobContext> context, const RuntimeEnvironmentOptions& options,
    uint64_t seed) {
  if (options.episode_iterations < 1 || options.lag < 0 || !(options.change_cost >= 0)) {
    return absl::InvalidArgumentError(
        "runtime environment: episodes need an iteration, and the lag and a change's cost "
        "must be >= 0");
  }
  STRATA_ASSIGN_OR_RETURN(SegmentPrior segments,
                          SegmentPrior::TruncatedNormal(
                              options.segment_mean, options.segment_stddev, options.segment_min));
  return std::unique_ptr<RuntimeEnvironment>(
      new RuntimeEnvironment(std::move(context), options, std::move(segments), seed));
}

RuntimeEnvironment::RuntimeEnvironment(std::shared_ptr<const KnobContext> context,
                                       const RuntimeEnvironmentOptions& options,
                                       SegmentPrior segments, uint64_t seed)
    : knob_(std::move(context)),
      outliers_(knob_->outliers()),
      options_(options),
      segments_(std::move(segments)),
      trace_rng_(DeriveSeed(seed, 1)),
      noise_rng_(DeriveSeed(seed, 2)) {
  Reset();
}

void RuntimeEnvironment::NewSegment() {
  context_ = knob_->SampleContext(trace_rng_);
  noise_.clear();
  for (const std::string& value : knob_->values()) {
    noise_.push_back(knob_->ObservationNoise(value, context_));
  }
  segment_end_ = iteration_ + segments_.Sample(trace_rng_);
}

void RuntimeEnvironment::Reset() {
  iteration_ = 0;
  requests_ = 0;
  changes_.clear();
  scheduled_.clear();
  in_force_ = requested_ =
      static_cast<int>(trace_rng_.Below(static_cast<uint64_t>(knob_->values().size())));
  NewSegment();
}

RuntimeEnvironment::Outcome RuntimeEnvironment::Step(int wanted) {
  const std::vector<std::string>& values = knob_->values();
  if (wanted >= 0 && wanted < static_cast<int>(values.size()) && wanted != requested_) {
    requested_ = wanted;
    ++requests_;
    scheduled_[iteration_ + options_.lag] = wanted;  // a later request replaces an earlier
  }
  const int before = in_force_;
  for (auto it = scheduled_.begin(); it != scheduled_.end() && it->first <= iteration_;) {
    in_force_ = it->second;
    it = scheduled_.erase(it);
  }
  Outcome out;
  out.seconds = knob_->IterationSeconds(values[in_force_], context_) *
                (in_force_ != before ? 1 + options_.change_cost : 1.0);
  out.efficiency = knob_->IterationSeconds(knob_->Best(context_), context_) / out.seconds;
  out.seen = context_;
  if (outliers_.rate > 0 && noise_rng_.Uniform() < outliers_.rate) {
    for (size_t d = 0; d < out.seen.size(); ++d) {
      out.seen[d] =
          outliers_.low[d] + (outliers_.high[d] - outliers_.low[d]) * noise_rng_.Uniform();
    }
  } else {
    for (double& v : out.seen) v += noise_[in_force_] * noise_rng_.Normal();
  }
  ++iteration_;
  out.done = iteration_ >= options_.episode_iterations;
  if (!out.done && iteration_ >= segment_end_) {
    NewSegment();
    changes_.push_back(iteration_);
  }
  return out;
}

const std::vector<std::string>& RuntimeContenders() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all = KnobPolicyBeliefs();
    all.push_back("changepoint");
    return all;
  }();
  return names;
}

RuntimeExperiment::RuntimeExperiment(std::shared_ptr<const KnobContext> context,
                                     RuntimeExperimentOptions options)
    : context_(std::move(context)), options_(std::move(options)) {}

absl::StatusOr<RuntimeRun> RuntimeExperiment::Run(const std::string& contender, uint64_t seed) {
  if (contender == "changepoint") {
    return RunChangepoint(seed);
  }
  const std::vector<std::string>& beliefs = KnobPolicyBeliefs();
  if (std::find(beliefs.begin(), beliefs.end(), contender) == beliefs.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown contender \"", contender, "\" (use ",
                                                   absl::StrJoin(RuntimeContenders(), ", "), ")"));
  }
  return RunLearned(contender, seed);
}

absl::StatusOr<RuntimeRun> RuntimeExperiment::RunLearned(const std::string& belief, uint64_t seed) {
  KnobPolicySpec spec = options_.policy;
  spec.belief = belief;
  spec.segment_mean = options_.env.segment_mean;
  spec.segment_stddev = options_.env.segment_stddev;
  spec.segment_min = options_.env.segment_min;
  spec.episode_iterations = options_.env.episode_iterations;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<KnobPolicy> policy,
                          KnobPolicy::Create(context_, spec, DeriveSeed(seed, 1)));
  const int envs = std::max(1, options_.envs);
  const int steps = options_.env.episode_iterations;
  const int inputs = policy->inputs();
  struct Agent {
    std::unique_ptr<RuntimeEnvironment> env;
    std::unique_ptr<ContextTracker> tracker;
    int wanted = 0;
    double efficiency = 0;
  };
  auto agent_for = [&](uint64_t env_seed) -> absl::StatusOr<Agent> {
    Agent a;
    STRATA_ASSIGN_OR_RETURN(a.env, RuntimeEnvironment::Create(context_, options_.env, env_seed));
    a.tracker = policy->NewTracker();
    return a;
  };
  auto reset = [&](Agent& a) {
    a.env->Reset();
    a.tracker->Reset();
    a.wanted = a.env->in_force();
    a.efficiency = 0;
  };
  // One iteration: the outcome's reading goes to the tracker.
  auto step = [&](Agent& a, int action) {
    const std::vector<double> truth = a.env->context();
    RuntimeEnvironment::Outcome o = a.env->Step(action);
    policy->Observe(*a.tracker, o.seen, truth);
    a.efficiency += o.efficiency;
    return o;
  };

  std::vector<Agent> agents;
  for (int e = 0; e < envs; ++e) {
    STRATA_ASSIGN_OR_RETURN(Agent a, agent_for(DeriveSeed(seed, 1000 + e)));
    agents.push_back(std::move(a));
  }
  Ppo ppo(policy->net(), options_.ppo, DeriveSeed(seed, 2));
  RolloutBuffer rollout(envs, steps, inputs);
  RuntimeRun run;
  const int64_t updates = std::max<int64_t>(1, options_.training_steps / (int64_t{envs} * steps));
  for (int64_t u = 0; u < updates; ++u) {
    for (Agent& a : agents) reset(a);
    for (int t = 0; t < steps; ++t) {
      for (int e = 0; e < envs; ++e) {
        policy->WriteState(*agents[e].tracker, agents[e].env->in_force(), rollout.state(t, e));
      }
      const Ppo::Actions acts = ppo.Act(rollout.states(t), /*greedy=*/false);
      for (int e = 0; e < envs; ++e) {
        const RuntimeEnvironment::Outcome o = step(agents[e], acts.action[e]);
        rollout.Record(t, e, acts.action[e], acts.log_prob[e], acts.value[e],
                       static_cast<float>(o.efficiency), o.done);
      }
    }
    rollout.set_bootstrap(std::vector<float>(envs, 0.0f));  // every episode ended
    ppo.Update(rollout);
    double total = 0;
    for (const Agent& a : agents) total += a.efficiency / steps;
    run.curve.push_back(total / envs);
    if (options_.progress && !options_.progress((u + 1) * envs * steps, run.curve.back())) {
      return absl::CancelledError("training stopped");
    }
  }
  // Evaluation: greedy, on episodes of their own.
  double total = 0;
  int64_t requests = 0;
  std::vector<float> state(static_cast<size_t>(inputs));
  for (int episode = 0; episode < options_.evaluation_episodes; ++episode) {
    STRATA_ASSIGN_OR_RETURN(Agent a, agent_for(DeriveSeed(seed, 900000 + episode)));
    reset(a);
    KnobDecision decision(spec.decision_margin);
    for (bool done = false; !done;) {
      policy->WriteState(*a.tracker, a.env->in_force(), state.data());
      const int wanted = decision.Next(policy->Probabilities(state.data()), a.env->requested());
      done = step(a, wanted).done;
    }
    total += a.efficiency / steps;
    requests += a.env->requests();
  }
  Score(total, requests, options_.evaluation_episodes, steps, run);
  if (!options_.policy_out.empty()) STRATA_RETURN_IF_ERROR(policy->Save(options_.policy_out));
  return run;
}

absl::StatusOr<RuntimeRun> RuntimeExperiment::RunChangepoint(uint64_t seed) {
  const int steps = options_.env.episode_iterations;
  double total = 0;
  int64_t requests = 0;
  for (int episode = 0; episode < options_.evaluation_episodes; ++episode) {
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<RuntimeEnvironment> env,
        RuntimeEnvironment::Create(context_, options_.env, DeriveSeed(seed, 900000 + episode)));
    ChangepointControllerOptions co;
    co.mean_segment_iterations = options_.env.segment_mean;
    co.window = options_.policy.window;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ChangepointController> controller,
                            ChangepointController::Create(context_, co));
    controller->set_logging(false);
    int wanted = env->in_force();
    double efficiency = 0;
    for (bool done = false; !done;) {
      const int64_t iteration = env->iteration();
      const RuntimeEnvironment::Outcome o = env->Step(wanted);
      efficiency += o.efficiency;
      done = o.done;
      const std::optional<std::string> proposal =
          controller->Consider({iteration, o.seen, context_->values()[env->in_force()]});
      if (proposal.has_value()) wanted = context_->IndexOf(*proposal);
    }
    total += efficiency / steps;
    requests += env->requests();
  }
  RuntimeRun run;
  Score(total, requests, options_.evaluation_episodes, steps, run);
  return run;
}

}  // namespace strata::secbad
