// The grid-world experiment of SeCBAD's paper, in kind: each contender
// (scheduler/secbad/context_tracker.h) trains the same PPO agent on the
// windy grid world (experiments/gridworld.h), its state the agent's
// cell (one-hot) and the contender's context features, and is scored by
// its mean return over evaluation episodes it was not trained on (its
// actions sampled as in training, and its likeliest actions).
//
//   GridworldExperiment experiment(options);
//   absl::StatusOr<GridworldRun> run = experiment.Run("secbad", /*seed=*/1);
//
// Contenders: "secbad" (the run-length posterior with SeCBAD's segment
// prior), "constant-hazard" (the same with a constant hazard of the same
// mean length), "whole-history" (one belief per episode, VariBAD-like),
// "plain" (no context), "known-segments" (the belief from the current
// segment's pushes, its start told: SeCBAD's ceiling), "oracle" (the true
// wind), and beyond those "revealed-after-N" (RevealedContender). Plan
// scores a contender's belief without learning: the planner
// (experiments/gridworld_planner.h) acting on its means, over the same
// evaluation episodes. Deterministic for a seed. Not thread-safe.
#ifndef STRATA_EXPERIMENTS_GRIDWORLD_EXPERIMENT_H_
#define STRATA_EXPERIMENTS_GRIDWORLD_EXPERIMENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "experiments/gridworld.h"
#include "experiments/gridworld_planner.h"
#include "scheduler/secbad/context_tracker.h"
#include "scheduler/secbad/ppo.h"

namespace strata::secbad {

// Every contender, in the order reports list them.
const std::vector<std::string>& GridworldContenders();

// A contender beyond those: "revealed-after-N", the known-segments belief
// until the segment has shown N moves' pushes, then the true wind (what
// knowing the wind that soon is worth; N = 0 acts as the oracle).
inline constexpr char kRevealedPrefix[] = "revealed-after-";
std::string RevealedContender(int moves);

// PPO as the grid world needs it: a goal is a few moves away, so a short
// horizon (gamma 0.95, lambda 0.9) sees every reward that matters, with
// far less variance in the advantages than PPO's usual 0.99.
inline PpoOptions GridworldPpoOptions() {
  PpoOptions options;
  options.gamma = 0.95f;
  options.gae_lambda = 0.9f;
  return options;
}

struct GridworldExperimentOptions {
  GridworldOptions world;
  int64_t training_steps = 3'000'000;  // environment steps per contender and seed
  int envs = 16;                       // episodes per PPO update
  // Returns swing by tens from one wind to another, so the mean needs
  // many episodes to be told apart from a neighbour's.
  int evaluation_episodes = 2000;
  int hidden = 64;
  int window = 200;  // run lengths the posterior keeps (>= an episode)
  // How the belief contenders read the pushes: "grid" (the world's own
  // push rule over a grid of winds, exact) or "normal-gamma" (each axis a
  // Gaussian of unknown mean and noise).
  std::string observation_model = "grid";
  // What the belief contenders' states hold of a belief per axis: "mean",
  // "mean-spread" (its mean and standard deviation), or "distribution"
  // (its probability of each grid wind; the grid model only).
  std::string belief_features = "mean";
  PpoOptions ppo = GridworldPpoOptions();
  std::string policy_out;  // "" = none; else the trained networks go here
  // Called after each PPO update with the steps done and the mean training
  // return; false stops the training (Run returns Cancelled).
  std::function<bool(int64_t, double)> progress;
};

struct GridworldRun {
  double mean_return = 0;            // over the evaluation episodes, actions sampled
  double greedy_return = 0;          // the same episodes, the policy's likeliest actions
  std::vector<double> curve;         // mean training return per update
};

// One evaluation episode's run-length posterior, for the plot: the
// posterior after every step (window values each) and the true changes.
struct PosteriorTrace {
  int window = 0;
  std::vector<std::vector<double>> posterior;
  std::vector<int> map;
  std::vector<int> changes;
};

class GridworldExperiment {
 public:
  explicit GridworldExperiment(GridworldExperimentOptions options);

  // Trains `contender` from `seed` and evaluates it. InvalidArgument for an
  // unknown contender, naming the known ones.
  absl::StatusOr<GridworldRun> Run(const std::string& contender, uint64_t seed);

  // The mean return, over the evaluation episodes of `seed` (Run's), of
  // GridworldPlanner acting on `contender`'s belief means as if they were
  // the wind (the true wind for the oracle, calm for plain): what the
  // belief is worth with no learning in the way. InvalidArgument for an
  // unknown contender.
  absl::StatusOr<double> Plan(const std::string& contender, uint64_t seed);

  // The run-length posterior of SeCBAD's inference over one episode of a
  // random walk in the world of `seed`.
  PosteriorTrace TracePosterior(uint64_t seed) const;

  // The tracker a contender uses (for tests and tools).
  absl::StatusOr<std::unique_ptr<ContextTracker>> TrackerFor(const std::string& contender) const;

 private:
  // Chooses an action per row of states {n, inputs} (as the PPO agent's).
  using Chooser = std::function<std::vector<int>(const Tensor& states)>;
  // The mean return of `choose`'s actions for `contender` over the
  // evaluation episodes of `seed`.
  absl::StatusOr<double> Evaluate(const std::string& contender, uint64_t seed,
                                  const Chooser& choose) const;
  // A new observation model of the pushes, as options_ choose (checked
  // by TrackerFor).
  std::unique_ptr<ObservationModel> WindModel() const;

  GridworldExperimentOptions options_;
  std::optional<GridworldPlanner> planner_;  // made by the first Plan
};

}  // namespace strata::secbad

#endif  // STRATA_EXPERIMENTS_GRIDWORLD_EXPERIMENT_H_
