// strata_research: the research experiments behind Strata's runtime
// controllers, apart from strata_bench's measurements of Strata itself.
//
//   strata_research secbad-gridworld [--seeds 5] ...   SeCBAD and its baselines on the grid
//                                                      world of abrupt changes
//   strata_research secbad-runtime --cost-model cost.json ...   the same on a knob's runtime
//                                                               environment
//   strata_research secbad-live --config JOB.json --cost-model cost.json --cpu-schedule S ...
//                                                      the controllers re-tuning a live job
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "core/model/job_config.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/count_list.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"
#include "startup/program_startup.h"
#include "tools/bench/harness/subcommands.h"
#include "tools/research/secbad_experiments.h"
#include "tools/research/secbad_live.h"

ABSL_FLAG(std::string, config, "", "secbad-live: the job config JSON file");
ABSL_FLAG(std::string, mode, "ps", "secbad-live: the job's mode, ps or stanza");
ABSL_FLAG(int32_t, threads, 2, "secbad-live: CPU threads the job's processes share");
ABSL_FLAG(int32_t, repeat, 3, "secbad-live: runs per contender (alternated)");
ABSL_FLAG(std::string, json, "", "write the report as JSON to this file");
ABSL_FLAG(std::string, plot, "",
          "secbad-gridworld: the run-length posterior of one episode; secbad-live: each "
          "contender's throughput over time (PNG)");
ABSL_FLAG(int32_t, seeds, 5, "seeds per contender");
ABSL_FLAG(int64_t, training_steps, 3000000,
          "environment steps each contender trains for, per seed");
ABSL_FLAG(std::string, contenders, "",
          "comma-separated contenders (default: all of the experiment's)");
ABSL_FLAG(double, learning_rate, strata::research::SecbadExperimentOptions{}.learning_rate,
          "secbad-gridworld: PPO's learning rate (Adam's step)");
ABSL_FLAG(int32_t, evaluation_episodes,
          strata::research::SecbadExperimentOptions{}.evaluation_episodes,
          "secbad-gridworld: evaluation episodes per contender and seed (the same for every "
          "contender)");
ABSL_FLAG(std::string, policy_dir, "", "keep each trained policy in this directory");
ABSL_FLAG(double, live_seconds, 125, "secbad-live: each run's length from its launch");
ABSL_FLAG(std::string, records_dir, "",
          "secbad-live: keep each run's records and log in DIR/<contender>_<repeat>");
ABSL_FLAG(double, warmup, 5, "secbad-live: seconds from the launch left out of every figure");
ABSL_FLAG(
    double, decision_margin, strata::research::kSecbadDecisionMargin,
    "secbad-runtime and secbad-live: how far another value must lead the one in force or asked "
    "for before a trained policy asks for it: its leads in the policy's probabilities, "
    "added up over consecutive observations; in [0, 10], saved with the policy");
ABSL_FLAG(
    double, segment_mean, strata::research::kSecbadSegmentMean,
    "secbad-runtime and secbad-live (the policy it trains): iterations a context holds on average "
    "in the runtime environment, the segment prior the policies train under; episodes are "
    "4 and the posterior's window 2 mean segments");
ABSL_FLAG(double, segment_stddev, strata::research::kSecbadSegmentStddev,
          "secbad-runtime and secbad-live: the standard deviation of a context's iterations");
ABSL_FLAG(int32_t, lag, 4,
          "secbad-runtime: iterations from a controller's request to its value in force");
ABSL_FLAG(std::string, observation_model,
          strata::research::SecbadExperimentOptions{}.observation_model,
          "secbad-gridworld: how beliefs read the pushes: grid (the world's push rule over a "
          "grid of winds) or normal-gamma (a Gaussian of unknown mean and noise per axis)");
ABSL_FLAG(std::string, belief_features, strata::research::SecbadExperimentOptions{}.belief_features,
          "secbad-gridworld: what a belief contender's state holds of its belief per axis: mean, "
          "mean-spread (the mean and standard deviation), or distribution (the probability of "
          "every grid wind; needs --observation-model grid)");
ABSL_FLAG(std::string, gridworld_rules, strata::research::SecbadExperimentOptions{}.gridworld_rules,
          "secbad-gridworld: strata (the wind pushes a move along both axes; the goal sends the "
          "agent back to the start) or secbad-code (the rules of SeCBAD's public code: the wind "
          "pushes a move along its own axis only; the goal holds the agent, each step on it "
          "earning its reward)");
ABSL_FLAG(std::optional<double>, step_cost, std::nullopt,
          "secbad-gridworld: what each step that does not land on the goal costs (the goal "
          "earns 1); unset, the rules' own: none under strata (a return counts arrivals at the "
          "goal), 0.1 under secbad-code");
ABSL_FLAG(bool, learn, true,
          "secbad-gridworld: train and score every contender's policy; false: only score each "
          "contender's belief with the planner (no training)");

namespace {

using strata::SplitList;

absl::Status SecbadLive() {
  strata::research::SecbadLiveOptions o;
  o.config = absl::GetFlag(FLAGS_config);
  const strata::ClusterLayout layout = strata::LayoutFromFlagsOver(absl::GetFlag(FLAGS_config));
  o.cluster.servers = layout.servers;
  o.cluster.conv_workers = layout.conv_workers;
  o.cluster.fc_workers = layout.fc_workers;
  o.cluster.mode = absl::GetFlag(FLAGS_mode).empty() ? "ps" : absl::GetFlag(FLAGS_mode);
  const strata::ConditionFlags conditions = strata::ConditionsFromFlags();
  o.cluster.cpu_schedule = conditions.cpu_schedule;
  o.cluster.cpu_pin = conditions.cpu_pin;
  o.cluster.bandwidth_schedule = conditions.bandwidth_schedule;
  STRATA_ASSIGN_OR_RETURN(o.cluster.knob_lead, strata::KnobLeadFromFlags());
  o.threads = absl::GetFlag(FLAGS_threads);
  o.cost_model = strata::ControllerFromFlags().cost_model;
  o.policy_file = strata::ControllerFromFlags().policy_file;
  o.training_steps = absl::GetFlag(FLAGS_training_steps);
  o.decision_margin = absl::GetFlag(FLAGS_decision_margin);
  o.segment_mean = absl::GetFlag(FLAGS_segment_mean);
  o.segment_stddev = absl::GetFlag(FLAGS_segment_stddev);
  o.seconds = absl::GetFlag(FLAGS_live_seconds);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.repeat = absl::GetFlag(FLAGS_repeat);
  if (!absl::GetFlag(FLAGS_contenders).empty())
    o.contenders = SplitList(absl::GetFlag(FLAGS_contenders));
  o.json_out = absl::GetFlag(FLAGS_json);
  o.plot = absl::GetFlag(FLAGS_plot);
  o.records_dir = absl::GetFlag(FLAGS_records_dir);
  return strata::research::RunSecbadLive(o);
}

// `secbad-gridworld` or `secbad-runtime`.
absl::Status Secbad(const std::string& experiment) {
  strata::research::SecbadExperimentOptions o;
  o.experiment = experiment;
  o.seeds = absl::GetFlag(FLAGS_seeds);
  o.training_steps = absl::GetFlag(FLAGS_training_steps);
  o.contenders = SplitList(absl::GetFlag(FLAGS_contenders));
  o.json_out = absl::GetFlag(FLAGS_json);
  o.plot = absl::GetFlag(FLAGS_plot);
  o.policy_dir = absl::GetFlag(FLAGS_policy_dir);
  o.observation_model = absl::GetFlag(FLAGS_observation_model);
  o.belief_features = absl::GetFlag(FLAGS_belief_features);
  o.gridworld_rules = absl::GetFlag(FLAGS_gridworld_rules);
  o.step_cost = absl::GetFlag(FLAGS_step_cost);
  o.evaluation_episodes = absl::GetFlag(FLAGS_evaluation_episodes);
  o.learn = absl::GetFlag(FLAGS_learn);
  o.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  o.cost_model = strata::ControllerFromFlags().cost_model;
  o.lag = absl::GetFlag(FLAGS_lag);
  o.decision_margin = absl::GetFlag(FLAGS_decision_margin);
  o.segment_mean = absl::GetFlag(FLAGS_segment_mean);
  o.segment_stddev = absl::GetFlag(FLAGS_segment_stddev);
  return strata::research::RunSecbadExperiment(o);
}

const strata::bench::Subcommand kSubcommands[] = {
    {"secbad-gridworld",
     "[--seeds 5] [--training-steps N] [--contenders a,b]\n"
     "[--observation-model grid|normal-gamma] [--belief-features mean|mean-spread|distribution]\n"
     "[--learning-rate 0.001] [--evaluation-episodes 2000] [--learn=false]\n"
     "[--gridworld-rules strata|secbad-code] [--step-cost C] [--json f]\n"
     "[--plot posterior.png] [--policy-dir DIR]",
     [] { return Secbad("gridworld"); }},
    {"secbad-runtime",
     "--cost-model cost.json [--seeds 5] [--training-steps N]\n"
     "[--contenders a,b] [--lag 4] [--decision-margin M]\n"
     "[--segment-mean 300] [--segment-stddev 100] [--json f] [--policy-dir DIR]",
     [] { return Secbad("runtime"); }},
    {"secbad-live",
     "--config JOB.json [--mode ps] [--conv-workers N]\n"
     "--cost-model cost.json [--policy-file p.bin | --training-steps N\n"
     "[--decision-margin M] [--segment-mean 300] [--segment-stddev 100]]\n"
     "--cpu-schedule S [--bandwidth-schedule S] [--cpu-pin conv0=0,...]\n"
     "[--live-seconds 125] [--warmup 5] [--repeat 3] [--knob-lead 2]\n"
     "[--contenders static,changepoint,secbad] [--json f] [--plot p.png] [--records-dir DIR]",
     SecbadLive},
};

}  // namespace

int main(int argc, char** argv) {
  strata::StopChildrenOnInterrupt();  // Ctrl-C stops the runs and cleans up
  const std::string usage =
      strata::bench::UsageOf("strata_research", "Strata's research experiments.", kSubcommands);
  const strata::ProgramArguments args = strata::StartProgram(argc, argv, usage.c_str());
  strata::SetLogProcess("research");
  return strata::bench::RunSubcommand("strata_research", kSubcommands, args.positional);
}
