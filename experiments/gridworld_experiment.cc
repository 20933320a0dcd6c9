#include "experiments/gridworld_experiment.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata::secbad {

namespace {

// The planner looks far ahead (an episode's 200 steps are many goal
// visits), and plans for 19 winds per axis (0.1 apart across +-0.9).
constexpr double kPlannerDiscount = 0.99;
constexpr int kPlannerWinds = 19;

SegmentPrior SeCbadPrior() { return *SegmentPrior::TruncatedNormal(80, 20, 10); }

// What a push shows of one axis's wind, for the Normal-Gamma model: 0 or
// +-1 with mean w, so its noise is at most 0.5, and winds spread over
// +-0.9.
NormalGammaPrior WindPrior() { return NormalGammaPrior::For(0, 0.5, 0.5); }

// The world's own push rule over a grid of winds (0.1 apart across
// +-max_wind), per axis, each push given at least a small probability
// (kPushFloor in all) so that a belief which assumes one wind for too long
// (the whole history's) is contradicted, not broken, by a push its winds
// rule out.
constexpr double kPushFloor = 0.01;
GridDimension WindGrid(double max_wind) {
  GridDimension axis;
  axis.symbols = {-1, 0, 1};
  const int steps = static_cast<int>(std::lround(max_wind / 0.1));
  for (int i = -steps; i <= steps; ++i) {
    const double w = max_wind * i / std::max(1, steps);
    axis.contexts.push_back(w);
    std::vector<double> row;
    for (double push : axis.symbols) {
      row.push_back((1 - kPushFloor) * WindyGridworld::PushProbability(w, static_cast<int>(push)) +
                    kPushFloor / static_cast<double>(axis.symbols.size()));
    }
    axis.likelihood.push_back(std::move(row));
  }
  return axis;
}

// One episode of an agent and its tracker.
struct Agent {
  std::unique_ptr<WindyGridworld> world;
  std::unique_ptr<ContextTracker> tracker;
  double episode_return = 0;
};

int Inputs(const GridworldOptions& world, const ContextTracker& tracker) {
  return world.size * world.size + tracker.features();
}

void WriteState(const Agent& agent, float* out) {
  const int cells = agent.world->options().size * agent.world->options().size;
  std::fill(out, out + cells, 0.0f);
  out[agent.world->y() * agent.world->options().size + agent.world->x()] = 1.0f;
  agent.tracker->Features(out + cells);
}

// Steps `agent` with `action`; returns the reward and whether it ended.
std::pair<float, bool> Step(Agent& agent, int action) {
  const WindyGridworld::Outcome o = agent.world->Act(action);
  agent.tracker->Observe(o.pushed.data(), agent.world->wind().data());
  agent.episode_return += o.reward;
  return {static_cast<float>(o.reward), o.done};
}

}  // namespace

std::string RevealedContender(int moves) { return absl::StrCat(kRevealedPrefix, moves); }

const std::vector<std::string>& GridworldContenders() {
  static const std::vector<std::string> names = {"secbad", "constant-hazard", "whole-history",
                                                 "plain",  "known-segments",  "oracle"};
  return names;
}

GridworldExperiment::GridworldExperiment(GridworldExperimentOptions options)
    : options_(std::move(options)) {}

std::unique_ptr<ObservationModel> GridworldExperiment::WindModel() const {
  if (options_.observation_model == "normal-gamma") {
    return std::make_unique<NormalGammaModel>(
        *NormalGammaModel::Create({WindPrior(), WindPrior()}));
  }
  const GridDimension axis = WindGrid(options_.world.max_wind);
  return std::make_unique<GridContextModel>(*GridContextModel::Create({axis, axis}));
}

absl::StatusOr<std::unique_ptr<ContextTracker>> GridworldExperiment::TrackerFor(
    const std::string& contender) const {
  if (options_.observation_model != "grid" && options_.observation_model != "normal-gamma") {
    return absl::InvalidArgumentError(absl::StrCat("unknown observation model \"",
                                                   options_.observation_model,
                                                   "\" (use grid or normal-gamma)"));
  }
  const std::map<std::string, BeliefFeatures> layouts = {
      {"mean", BeliefFeatures::kMean},
      {"mean-spread", BeliefFeatures::kMeanAndSpread},
      {"distribution", BeliefFeatures::kDistribution}};
  const auto layout = layouts.find(options_.belief_features);
  if (layout == layouts.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown belief features \"", options_.belief_features,
                     "\" (use mean, mean-spread or distribution)"));
  }
  if (layout->second == BeliefFeatures::kDistribution && options_.observation_model != "grid") {
    return absl::InvalidArgumentError(
        absl::StrCat("belief features \"distribution\" need the grid observation model, not \"",
                     options_.observation_model, "\""));
  }
  const BeliefFeatures features = layout->second;
  if (contender == "secbad") {
    return SegmentContext(SeCbadPrior(), WindModel(), options_.window, features);
  }
  if (contender == "constant-hazard") {
    STRATA_ASSIGN_OR_RETURN(SegmentPrior constant,
                            SegmentPrior::ConstantHazard(1.0 / SeCbadPrior().MeanLength()));
    return SegmentContext(std::move(constant), WindModel(), options_.window, features);
  }
  if (contender == "whole-history") {
    return WholeHistoryContext(WindModel(), options_.world.episode_steps, features);
  }
  if (contender == "known-segments") {
    return KnownSegmentsContext(WindModel(), options_.world.episode_steps, features);
  }
  if (contender == "plain") return NoContext();
  if (contender == "oracle") return OracleContext(2);
  if (int moves = 0; absl::StartsWith(contender, kRevealedPrefix) &&
                     absl::SimpleAtoi(contender.substr(std::strlen(kRevealedPrefix)), &moves) &&
                     moves >= 0) {
    if (features == BeliefFeatures::kDistribution) {
      return absl::InvalidArgumentError(absl::StrCat(
          contender, " gives the wind's means: use --belief-features mean or mean-spread"));
    }
    return RevealedContext(WindModel(), options_.world.episode_steps, moves, features);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown contender \"", contender, "\" (use ",
                                                 absl::StrJoin(GridworldContenders(), ", "),
                                                 ", or ", kRevealedPrefix, "N)"));
}

absl::StatusOr<GridworldRun> GridworldExperiment::Run(const std::string& contender, uint64_t seed) {
  const int envs = std::max(1, options_.envs);
  const int steps = options_.world.episode_steps;
  std::vector<Agent> agents;
  for (int e = 0; e < envs; ++e) {
    Agent a;
    a.world =
        std::make_unique<WindyGridworld>(options_.world, SeCbadPrior(), DeriveSeed(seed, 1000 + e));
    STRATA_ASSIGN_OR_RETURN(a.tracker, TrackerFor(contender));
    agents.push_back(std::move(a));
  }
  const int inputs = Inputs(options_.world, *agents[0].tracker);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ActorCritic> net,
                          ActorCritic::Create({inputs, WindyGridworld::kActions, options_.hidden},
                                              DeriveSeed(seed, 1)));
  Ppo ppo(*net, options_.ppo, DeriveSeed(seed, 2));
  RolloutBuffer rollout(envs, steps, inputs);
  GridworldRun run;
  const int64_t updates = std::max<int64_t>(1, options_.training_steps / (int64_t{envs} * steps));
  for (int64_t u = 0; u < updates; ++u) {
    for (Agent& a : agents) {
      a.world->Reset();
      a.tracker->Reset();
      a.episode_return = 0;
    }
    for (int t = 0; t < steps; ++t) {
      for (int e = 0; e < envs; ++e) WriteState(agents[e], rollout.state(t, e));
      const Ppo::Actions acts = ppo.Act(rollout.states(t), /*greedy=*/false);
      for (int e = 0; e < envs; ++e) {
        const auto [reward, done] = Step(agents[e], acts.action[e]);
        rollout.Record(t, e, acts.action[e], acts.log_prob[e], acts.value[e], reward, done);
      }
    }
    rollout.set_bootstrap(std::vector<float>(envs, 0.0f));  // every episode ended
    ppo.Update(rollout);
    double total = 0;
    for (const Agent& a : agents) total += a.episode_return;
    run.curve.push_back(total / envs);
    if (options_.progress && !options_.progress((u + 1) * envs * steps, run.curve.back())) {
      return absl::CancelledError("training stopped");
    }
  }
  // Evaluated with the policy sampled as trained, and acting on its likeliest
  // action.
  STRATA_ASSIGN_OR_RETURN(run.mean_return, Evaluate(contender, seed, [&](const Tensor& states) {
                            return ppo.Act(states, /*greedy=*/false).action;
                          }));
  STRATA_ASSIGN_OR_RETURN(run.greedy_return, Evaluate(contender, seed, [&](const Tensor& states) {
                            return ppo.Act(states, /*greedy=*/true).action;
                          }));
  if (!options_.policy_out.empty()) {
    STRATA_RETURN_IF_ERROR(net->Save(options_.policy_out, contender));
  }
  return run;
}

absl::StatusOr<double> GridworldExperiment::Evaluate(const std::string& contender, uint64_t seed,
                                                     const Chooser& choose) const {
  // Episodes on worlds of their own (the same for every contender of a
  // seed), `envs` at a time.
  const int episodes = std::max(1, options_.evaluation_episodes);
  const int batch = std::min(episodes, std::max(1, options_.envs));
  double total = 0;
  for (int first = 0; first < episodes; first += batch) {
    const int n = std::min(batch, episodes - first);
    std::vector<Agent> agents(static_cast<size_t>(n));
    for (int e = 0; e < n; ++e) {
      agents[e].world = std::make_unique<WindyGridworld>(options_.world, SeCbadPrior(),
                                                         DeriveSeed(seed, 900000 + first + e));
      STRATA_ASSIGN_OR_RETURN(agents[e].tracker, TrackerFor(contender));
    }
    const int inputs = Inputs(options_.world, *agents[0].tracker);
    Tensor states = Tensor::Empty({n, inputs});
    // Every world's episode has the same number of steps.
    for (bool done = false; !done;) {
      for (int e = 0; e < n; ++e) {
        WriteState(agents[e], states.data() + static_cast<size_t>(e) * inputs);
      }
      const std::vector<int> actions = choose(states);
      for (int e = 0; e < n; ++e) done = Step(agents[e], actions[e]).second;
    }
    for (const Agent& a : agents) total += a.episode_return;
  }
  return total / episodes;
}

absl::StatusOr<double> GridworldExperiment::Plan(const std::string& contender, uint64_t seed) {
  if (!planner_.has_value()) {
    STRATA_ASSIGN_OR_RETURN(
        GridworldPlanner planner,
        GridworldPlanner::Create(options_.world, kPlannerDiscount, kPlannerWinds));
    planner_.emplace(std::move(planner));
  }
  const int size = options_.world.size;
  const int cells = size * size;
  // What follows the cell in a state: nothing (plain PPO: the planner acts
  // on a calm wind), the wind or the belief's means first (spreads after
  // them), or the belief's probability of each grid wind per axis, whose
  // means the planner then acts on.
  const bool told = contender != "plain";
  const bool distribution =
      told && contender != "oracle" && options_.belief_features == "distribution";
  const std::vector<double> grid = WindGrid(options_.world.max_wind).contexts;
  const int winds = static_cast<int>(grid.size());
  return Evaluate(contender, seed, [&](const Tensor& states) {
    const int inputs = static_cast<int>(states.dim(1));
    std::vector<int> actions;
    for (int64_t row = 0; row < states.dim(0); ++row) {
      const float* s = states.data() + row * inputs;
      const int at = static_cast<int>(std::max_element(s, s + cells) - s);
      double wind[2] = {0, 0};
      for (int axis = 0; told && axis < 2; ++axis) {
        if (!distribution) {
          wind[axis] = s[cells + axis];
          continue;
        }
        const float* p = s + cells + axis * winds;
        for (int g = 0; g < winds; ++g) wind[axis] += p[g] * grid[g];
      }
      actions.push_back(planner_->Act(at % size, at / size, wind[0], wind[1]));
    }
    return actions;
  });
}

PosteriorTrace GridworldExperiment::TracePosterior(uint64_t seed) const {
  WindyGridworld world(options_.world, SeCbadPrior(), seed);
  RunLengthPosterior inference(SeCbadPrior(), WindModel(), options_.window);
  Rng rng(DeriveSeed(seed, 7));
  PosteriorTrace trace;
  trace.window = options_.window;
  for (bool done = false; !done;) {
    const WindyGridworld::Outcome o = world.Act(1 + static_cast<int>(rng.Below(4)));
    inference.Observe(o.pushed.data());
    trace.posterior.push_back(inference.posterior());
    trace.map.push_back(inference.map_run_length());
    done = o.done;
  }
  trace.changes = world.changes();
  return trace;
}

}  // namespace strata::secbad
