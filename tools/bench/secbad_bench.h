// `strata_bench secbad`: SeCBAD against its baselines.
//
//   strata_bench secbad gridworld --seeds 5 [--steps 3000000] [--contenders a,b]
//       [--observation-model grid|normal-gamma] [--json out.json] [--plot posterior.png]
//       [--policy-dir DIR]
//
// gridworld: every contender (scheduler/secbad/gridworld_experiment.h)
// trained and evaluated from each seed, one after another, with the mean
// and standard deviation of the evaluation return over seeds, each
// contender's ratio to the oracle, and whether SeCBAD stands above each
// baseline by more than the two standard errors combined. The JSON has a
// "results" map: contender -> {"mean", "std", "per_seed"}. The plot is
// the run-length posterior of one episode against its true change points.
#ifndef STRATA_TOOLS_BENCH_SECBAD_BENCH_H_
#define STRATA_TOOLS_BENCH_SECBAD_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct SecbadBenchOptions {
  std::string experiment = "gridworld";
  int seeds = 5;
  int64_t training_steps = 3'000'000;
  std::vector<std::string> contenders;  // empty: all
  // How the belief contenders read the pushes (GridworldExperimentOptions).
  std::string observation_model = "grid";
  std::string json_out;
  std::string plot;
  std::string policy_dir;  // each trained policy as DIR/<contender>-<seed>.bin
};

absl::Status RunSecbadBench(const SecbadBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_SECBAD_BENCH_H_
