#include "tools/research/secbad_experiments.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/log.h"
#include "experiments/gridworld_experiment.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/runtime_environment.h"
#include "tools/bench/harness/plot.h"

namespace strata::research {

// What the research tool shares with the benchmarks.
using bench::DrawReport;

namespace {

struct Summary {
  std::vector<double> per_seed;
  double mean = 0, std = 0;
  double standard_error() const {
    return per_seed.size() > 1 ? std / std::sqrt(static_cast<double>(per_seed.size())) : 0.0;
  }
};

Summary Summarise(std::vector<double> values) {
  Summary s;
  s.per_seed = std::move(values);
  for (double v : s.per_seed) s.mean += v;
  s.mean /= static_cast<double>(s.per_seed.size());
  double squares = 0;
  for (double v : s.per_seed) squares += (v - s.mean) * (v - s.mean);
  s.std =
      s.per_seed.size() > 1 ? std::sqrt(squares / static_cast<double>(s.per_seed.size() - 1)) : 0.0;
  return s;
}

// Each contender's scores summarised.
std::map<std::string, Summary> SummariseEach(
    const std::map<std::string, std::vector<double>>& scores) {
  std::map<std::string, Summary> summary;
  for (const auto& [c, values] : scores) summary[c] = Summarise(values);
  return summary;
}

// The planner's score of each contender's belief from every seed
// (GridworldExperiment::Plan), by contender.
absl::StatusOr<std::map<std::string, std::vector<double>>> PlanScores(
    secbad::GridworldExperiment& experiment, const std::vector<std::string>& contenders,
    int seeds) {
  std::map<std::string, std::vector<double>> scores;
  for (int seed = 1; seed <= seeds; ++seed) {
    for (const std::string& c : contenders) {
      STRATA_ASSIGN_OR_RETURN(const double value, experiment.Plan(c, static_cast<uint64_t>(seed)));
      scores[c].push_back(value);
    }
  }
  return scores;
}

// The run-length posterior of one episode, as plot_report.py draws it:
// the posterior after each step over the first run lengths, the MAP run
// length and the true change points.
nlohmann::json PosteriorOf(const secbad::PosteriorTrace& trace) {
  constexpr size_t kShown = 160;  // run lengths drawn
  nlohmann::json p = nlohmann::json::array();
  for (const std::vector<double>& step : trace.posterior) {
    p.push_back(std::vector<double>(step.begin(), step.begin() + std::min(kShown, step.size())));
  }
  return {{"p", p}, {"map", trace.map}, {"changes", trace.changes}};
}

// The table of each contender's scores over the seeds (in `contenders`'
// order, each as a share of the oracle's where there is one); returns
// their summaries.
std::map<std::string, Summary> PrintScoreTable(
    const std::vector<std::string>& contenders, const std::string& score_name,
    const std::map<std::string, std::vector<double>>& scores) {
  const std::map<std::string, Summary> summary = SummariseEach(scores);
  const auto oracle = summary.find("oracle");
  std::printf("\n| contender | mean %s | std | per seed | of the oracle |\n|---|---|---|---|---|\n",
              score_name.c_str());
  for (const std::string& c : contenders) {
    const Summary& s = summary.at(c);
    std::vector<std::string> seeds;
    for (double v : s.per_seed) seeds.push_back(absl::StrFormat("%.3f", v));
    std::printf("| %s | %.3f | %.3f | %s | %s |\n", c.c_str(), s.mean, s.std,
                absl::StrJoin(seeds, ", ").c_str(),
                oracle != summary.end() && oracle->second.mean != 0
                    ? absl::StrFormat("%.1f%%", 100 * s.mean / oracle->second.mean).c_str()
                    : "-");
  }
  return summary;
}

nlohmann::json SummaryJson(const std::map<std::string, Summary>& summary) {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [c, s] : summary) {
    json[c] = {{"mean", s.mean}, {"std", s.std}, {"per_seed", s.per_seed}};
  }
  return json;
}

// Every contender trained and scored from each seed (`score`), then the
// table, the separations from SeCBAD and the JSON, as the header says.
absl::Status RunContenderTable(
    const SecbadExperimentOptions& o, const std::vector<std::string>& contenders,
    const std::string& score_name,
    const std::function<absl::StatusOr<double>(const std::string&, int)>& score,
    nlohmann::json& json) {
  std::map<std::string, std::vector<double>> scores;
  for (int seed = 1; seed <= o.seeds; ++seed) {
    for (const std::string& c : contenders) {
      absl::StatusOr<double> scored = score(c, seed);
      if (!scored.ok() && Interrupted()) {
        return absl::CancelledError("interrupted: stopped the training; nothing is reported");
      }
      STRATA_ASSIGN_OR_RETURN(const double value, scored);
      LogInfo("secbad %s: %s seed %d: %s %.3f", o.experiment.c_str(), c.c_str(), seed,
              score_name.c_str(), value);
      scores[c].push_back(value);
    }
  }
  const std::map<std::string, Summary> summary = PrintScoreTable(contenders, score_name, scores);
  json["training_steps"] = o.training_steps;
  json["score"] = score_name;
  json["results"] = SummaryJson(summary);
  const bool have_oracle = summary.count("oracle") != 0;
  if (summary.count("secbad") != 0) {
    const Summary& secbad = summary.at("secbad");
    for (const std::string& c : contenders) {
      if (c == "secbad" || c == "oracle") continue;
      const Summary& other = summary.at(c);
      const double margin = secbad.standard_error() + other.standard_error();
      const bool separated = secbad.mean - other.mean > margin;
      std::printf("secbad - %s: %+.3f (two standard errors combined: %.3f): %s\n", c.c_str(),
                  secbad.mean - other.mean, margin, separated ? "above" : "NOT separated");
      json["separation"][c] = {
          {"difference", secbad.mean - other.mean}, {"margin", margin}, {"above", separated}};
    }
    if (have_oracle) {
      std::printf("secbad / oracle: %.1f%%\n", 100 * secbad.mean / summary.at("oracle").mean);
      json["secbad_over_oracle"] = secbad.mean / summary.at("oracle").mean;
    }
  }
  return absl::OkStatus();
}

// Prints `title` and the table of `scores` (returns), keeps it as
// json[key], and, with SeCBAD and the oracle among them, SeCBAD's share of
// the oracle's as json[key + "_secbad_over_oracle"].
std::map<std::string, Summary> ReportScores(
    const std::string& title, const std::string& key, const std::vector<std::string>& contenders,
    const std::map<std::string, std::vector<double>>& scores, nlohmann::json& json) {
  std::printf("\n%s", title.c_str());
  const std::map<std::string, Summary> summary = PrintScoreTable(contenders, "return", scores);
  json[key] = SummaryJson(summary);
  if (summary.count("secbad") != 0 && summary.count("oracle") != 0) {
    const double share = summary.at("secbad").mean / summary.at("oracle").mean;
    std::printf("%s secbad / %s oracle: %.1f%%\n", key.c_str(), key.c_str(), 100 * share);
    json[key + "_secbad_over_oracle"] = share;
  }
  return summary;
}

// Logs the training return (or efficiency) every tenth of the steps; stops
// the training on Ctrl-C.
std::function<bool(int64_t, double)> TrainingProgress(const SecbadExperimentOptions& o,
                                                      const std::string& contender, int seed) {
  auto next = std::make_shared<int64_t>(o.training_steps / 10);
  return [&o, contender, seed, next](int64_t steps, double training) {
    if (steps >= *next) {
      *next += o.training_steps / 10;
      LogInfo("secbad %s: %s seed %d: %lld steps, training %.3f", o.experiment.c_str(),
              contender.c_str(), seed, static_cast<long long>(steps), training);
    }
    return !Interrupted();
  };
}

std::string PolicyPath(const SecbadExperimentOptions& o, const std::string& contender, int seed) {
  return o.policy_dir.empty() ? "" : absl::StrCat(o.policy_dir, "/", contender, "-", seed, ".bin");
}

absl::Status RunGridworld(const SecbadExperimentOptions& o, nlohmann::json& json) {
  const std::vector<std::string> contenders =
      o.contenders.empty() ? secbad::GridworldContenders() : o.contenders;
  secbad::GridworldExperimentOptions eo;
  if (o.gridworld_rules == "secbad-code") {
    eo.world = secbad::GridworldOptions::SecbadCodeRules();
  } else if (o.gridworld_rules != "strata") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gridworld-rules: unknown rules \"", o.gridworld_rules, "\" (strata or secbad-code)"));
  }
  if (o.step_cost) eo.world.step_cost = *o.step_cost;
  eo.training_steps = o.training_steps;
  eo.observation_model = o.observation_model;
  eo.belief_features = o.belief_features;
  eo.evaluation_episodes = o.evaluation_episodes;
  eo.ppo.learning_rate = static_cast<float>(o.learning_rate);
  secbad::GridworldExperiment experiment(eo);
  for (const std::string& c : contenders) STRATA_RETURN_IF_ERROR(experiment.TrackerFor(c).status());
  json["gridworld_rules"] = o.gridworld_rules;
  json["step_cost"] = eo.world.step_cost;
  json["observation_model"] = o.observation_model;
  json["belief_features"] = o.belief_features;
  json["evaluation_episodes"] = o.evaluation_episodes;
  json["learning_rate"] = o.learning_rate;
  json["learned"] = o.learn;
  if (o.learn) {
    // Each trained policy also acting on its likeliest action, over the
    // same episodes.
    std::map<std::string, std::vector<double>> greedy;
    STRATA_RETURN_IF_ERROR(RunContenderTable(
        o, contenders, "return",
        [&](const std::string& c, int seed) -> absl::StatusOr<double> {
          secbad::GridworldExperimentOptions run_options = eo;
          run_options.policy_out = PolicyPath(o, c, seed);
          run_options.progress = TrainingProgress(o, c, seed);
          secbad::GridworldExperiment run(run_options);
          STRATA_ASSIGN_OR_RETURN(secbad::GridworldRun result,
                                  run.Run(c, static_cast<uint64_t>(seed)));
          greedy[c].push_back(result.greedy_return);
          return result.mean_return;
        },
        json));
    ReportScores("The same policies acting on their likeliest action:", "greedy", contenders,
                 greedy, json);
  }
  // The planner on each contender's belief, over the same evaluation
  // episodes: what each belief is worth with no learning in the way.
  STRATA_ASSIGN_OR_RETURN(const auto planned, PlanScores(experiment, contenders, o.seeds));
  const std::map<std::string, Summary> summary = ReportScores(
      "The value-iteration planner acting on each contender's belief means as the wind:", "planned",
      contenders, planned, json);
  // What knowing each segment's wind sooner is worth: the planner on the
  // known-segments belief until the segment has shown N moves, then on the
  // true wind (means only: beliefs given as distributions leave it out).
  if (o.belief_features != "distribution") {
    std::vector<std::string> revealed;
    for (int moves : {1, 2, 4, 8, 16}) revealed.push_back(secbad::RevealedContender(moves));
    STRATA_ASSIGN_OR_RETURN(auto scores, PlanScores(experiment, revealed, o.seeds));
    json["revealed"] = SummaryJson(SummariseEach(scores));
    std::vector<std::string> rows = revealed;
    if (summary.count("oracle") != 0) {  // the reference row
      scores["oracle"] = planned.at("oracle");
      rows.push_back("oracle");
      for (const std::string& c : revealed) {
        json["revealed_over_oracle"][c] =
            json["revealed"][c]["mean"].get<double>() / summary.at("oracle").mean;
      }
    }
    std::printf("\nThe planner told each segment's wind once the segment has shown N moves:");
    PrintScoreTable(rows, "return", scores);
  }
  if (!o.plot.empty()) {
    STRATA_RETURN_IF_ERROR(DrawReport({{"posterior", PosteriorOf(experiment.TracePosterior(1))}},
                                      o.plot, "posterior"));
  }
  return absl::OkStatus();
}

absl::Status RunRuntime(const SecbadExperimentOptions& o, nlohmann::json& json) {
  STRATA_ASSIGN_OR_RETURN(secbad::RuntimeExperimentOptions eo,
                          SecbadRuntimeOptions(o.segment_mean, o.segment_stddev));
  if (o.cost_model.empty()) {
    return absl::InvalidArgumentError(
        "secbad runtime needs --cost-model FILE (strata_bench train --knob ... --cost-model-out "
        "FILE writes one)");
  }
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json model, ReadJsonFile(o.cost_model));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const secbad::KnobContext> context,
                          secbad::KnobContextFromJson(model, o.cost_model));
  const std::vector<std::string> contenders =
      o.contenders.empty() ? secbad::RuntimeContenders() : o.contenders;
  const std::vector<std::string>& known = secbad::RuntimeContenders();
  for (const std::string& c : contenders) {
    if (std::find(known.begin(), known.end(), c) == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown contender \"", c, "\" (use ", absl::StrJoin(known, ", "), ")"));
    }
  }
  eo.training_steps = o.training_steps;
  eo.env.lag = o.lag;
  eo.policy.decision_margin = o.decision_margin;
  std::printf(
      "strata_research secbad runtime: %s over %s (%s), values %s; lag %d, segments of "
      "%.0f iterations (sd %.0f), episodes of %d, decision margin %.2f\n",
      context->knob().c_str(), context->kind().c_str(), o.cost_model.c_str(),
      absl::StrJoin(context->values(), ", ").c_str(), eo.env.lag, eo.env.segment_mean,
      eo.env.segment_stddev, eo.env.episode_iterations, eo.policy.decision_margin);
  json["cost_model"] = model;
  json["lag"] = eo.env.lag;
  json["segments"] = {{"mean", eo.env.segment_mean},
                      {"stddev", eo.env.segment_stddev},
                      {"episode_iterations", eo.env.episode_iterations},
                      {"window", eo.policy.window}};
  json["decision_margin"] = eo.policy.decision_margin;
  std::map<std::string, std::vector<double>> requests;  // per 1000 iterations, per seed
  STRATA_RETURN_IF_ERROR(RunContenderTable(
      o, contenders, "efficiency",
      [&](const std::string& c, int seed) -> absl::StatusOr<double> {
        secbad::RuntimeExperimentOptions run_options = eo;
        if (c != "changepoint") run_options.policy_out = PolicyPath(o, c, seed);
        run_options.progress = TrainingProgress(o, c, seed);
        secbad::RuntimeExperiment run(context, run_options);
        STRATA_ASSIGN_OR_RETURN(secbad::RuntimeRun result, run.Run(c, static_cast<uint64_t>(seed)));
        requests[c].push_back(result.requests_per_1000);
        return result.efficiency;
      },
      json));
  const std::map<std::string, Summary> asked = SummariseEach(requests);
  std::printf("\nNew values asked for per 1000 evaluation iterations (mean over seeds):");
  for (const auto& [c, s] : asked) std::printf(" %s %.1f;", c.c_str(), s.mean);
  std::printf("\n");
  json["requests_per_1000"] = SummaryJson(asked);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<secbad::RuntimeExperimentOptions> SecbadRuntimeOptions(double segment_mean,
                                                                      double segment_stddev) {
  constexpr int kShortestSegment = 20;
  if (!(segment_mean >= kShortestSegment && segment_mean <= 100'000)) {
    return absl::InvalidArgumentError(absl::StrCat("--segment-mean ", segment_mean, " is not in [",
                                                   kShortestSegment, ", 100000] iterations"));
  }
  if (!(segment_stddev > 0 && segment_stddev <= segment_mean)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segment-stddev ", segment_stddev, " is not in (0, --segment-mean]"));
  }
  secbad::RuntimeExperimentOptions o;
  o.env.segment_mean = segment_mean;
  o.env.segment_stddev = segment_stddev;
  o.env.segment_min = kShortestSegment;
  o.env.episode_iterations = static_cast<int>(std::lround(4 * segment_mean));
  o.policy.window = static_cast<int>(std::lround(2 * segment_mean));
  o.policy.decision_margin = kSecbadDecisionMargin;
  return o;
}

absl::Status RunSecbadExperiment(const SecbadExperimentOptions& o) {
  if (o.experiment != "gridworld" && o.experiment != "runtime") {
    return absl::InvalidArgumentError(
        absl::StrCat("strata_research secbad ", o.experiment,
                     ": the experiments are gridworld, runtime and live"));
  }
  if (o.seeds < 1) return absl::InvalidArgumentError("--seeds must be at least 1");
  if (!o.learn && o.experiment != "gridworld") {
    return absl::InvalidArgumentError(
        "--learn=false is for secbad gridworld (its planner scores beliefs without training)");
  }
  if (o.step_cost && o.experiment != "gridworld") {
    return absl::InvalidArgumentError("--step-cost is for secbad gridworld (a step off its goal)");
  }
  if (!(o.decision_margin >= 0 && o.decision_margin <= secbad::kMaxDecisionMargin)) {
    return absl::InvalidArgumentError(absl::StrCat("--decision-margin ", o.decision_margin,
                                                   " is not in [0, ", secbad::kMaxDecisionMargin,
                                                   "]"));
  }
  if (o.evaluation_episodes < 1) {
    return absl::InvalidArgumentError("--evaluation-episodes must be at least 1");
  }
  if (o.step_cost && !(*o.step_cost >= 0 && *o.step_cost <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--step-cost ", *o.step_cost, " is not in [0, 1] (the goal earns 1)"));
  }
  if (!(o.learning_rate > 0 && o.learning_rate < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--learning-rate ", o.learning_rate, " is not in (0, 1)"));
  }
  if (!o.policy_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(o.policy_dir, error);
    if (error) {
      return absl::InvalidArgumentError(
          absl::StrCat("--policy-dir ", o.policy_dir, ": ", error.message()));
    }
  }
  // The networks are small: a second thread only waits at every layer.
  SetCpuThreads(1);
  nlohmann::json json = {{"experiment", o.experiment}, {"seeds", o.seeds}};
  STRATA_RETURN_IF_ERROR(o.experiment == "gridworld" ? RunGridworld(o, json) : RunRuntime(o, json));
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, json));
  return absl::OkStatus();
}

}  // namespace strata::research
