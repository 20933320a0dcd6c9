#include "tools/bench/secbad_bench.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/log.h"
#include "scheduler/secbad/gridworld_experiment.h"
#include "tools/bench/throughput_plot.h"

namespace strata::bench {

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
  s.std = s.per_seed.size() > 1 ? std::sqrt(squares / static_cast<double>(s.per_seed.size() - 1))
                                : 0.0;
  return s;
}

// The run-length posterior as an image (time across, run length up), the
// true change points as vertical lines, the MAP run length as a curve.
absl::Status PlotPosterior(const secbad::PosteriorTrace& trace, const std::string& png) {
  char tmpl[] = "/tmp/strata_secbad_plot_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string dir = tmpl;
  const int shown = 160;  // run lengths drawn
  {
    std::ofstream matrix(dir + "/posterior.dat");
    for (size_t t = 0; t < trace.posterior.size(); ++t) {
      for (int r = 1; r <= shown; ++r) {
        matrix << t + 1 << " " << r << " " << std::log10(std::max(trace.posterior[t][r - 1], 1e-6))
               << "\n";
      }
      matrix << "\n";
    }
    std::ofstream map(dir + "/map.dat");
    for (size_t t = 0; t < trace.map.size(); ++t) map << t + 1 << " " << trace.map[t] << "\n";
  }
  std::ofstream script(dir + "/plot.gp");
  script << "set terminal pngcairo size 1000,520\n"
         << "set output " << GnuplotString(png) << "\n"
         << "set title 'SeCBAD run-length posterior, one grid-world episode (log10 p; white: "
            "true change points)'\n"
         << "set xlabel 'step'\nset ylabel 'run length'\n"
         << "set xrange [1:" << trace.posterior.size() << "]\nset yrange [1:" << shown << "]\n"
         << "set cbrange [-6:0]\nset palette defined (-6 'black', -3 'blue', -1 'orange', 0 "
            "'yellow')\n";
  for (int change : trace.changes) {
    script << "set arrow from " << change << ",1 to " << change << "," << shown
           << " nohead lc rgb 'white' lw 2 dt 2 front\n";
  }
  script << "plot " << GnuplotString(dir + "/posterior.dat") << " using 1:2:3 with image notitle, "
         << GnuplotString(dir + "/map.dat")
         << " using 1:2 with lines lc rgb 'red' lw 1.5 title 'MAP run length'\n";
  script.close();
  return RunGnuplotAndClean(dir + "/plot.gp", dir, png);
}

}  // namespace

absl::Status RunSecbadBench(const SecbadBenchOptions& o) {
  if (o.experiment != "gridworld") {
    return absl::InvalidArgumentError(
        absl::StrCat("strata_bench secbad ", o.experiment, ": the experiments are gridworld"));
  }
  if (o.seeds < 1) return absl::InvalidArgumentError("--seeds must be at least 1");
  const std::vector<std::string> contenders =
      o.contenders.empty() ? secbad::GridworldContenders() : o.contenders;
  secbad::GridworldExperimentOptions eo;
  eo.training_steps = o.training_steps;
  eo.observation_model = o.observation_model;
  secbad::GridworldExperiment experiment(eo);
  for (const std::string& c : contenders) STRATA_RETURN_IF_ERROR(experiment.TrackerFor(c).status());
  if (!o.policy_dir.empty()) std::filesystem::create_directories(o.policy_dir);

  std::map<std::string, std::vector<double>> returns;
  for (int seed = 1; seed <= o.seeds; ++seed) {
    for (const std::string& c : contenders) {
      secbad::GridworldExperimentOptions run_options = eo;
      if (!o.policy_dir.empty()) {
        run_options.policy_out = absl::StrCat(o.policy_dir, "/", c, "-", seed, ".bin");
      }
      int64_t next_report = o.training_steps / 10;
      run_options.progress = [&, c, seed](int64_t steps, double training_return) {
        if (steps < next_report) return;
        next_report += o.training_steps / 10;
        LogInfo("secbad gridworld: %s seed %d: %lld steps, training return %.2f", c.c_str(), seed,
                static_cast<long long>(steps), training_return);
      };
      secbad::GridworldExperiment run(run_options);
      STRATA_ASSIGN_OR_RETURN(secbad::GridworldRun result, run.Run(c, static_cast<uint64_t>(seed)));
      LogInfo("secbad gridworld: %s seed %d: evaluation return %.2f (training, last update %.2f)",
              c.c_str(), seed, result.mean_return, result.curve.empty() ? 0.0 : result.curve.back());
      returns[c].push_back(result.mean_return);
    }
  }
  std::map<std::string, Summary> summary;
  for (const auto& [c, values] : returns) summary[c] = Summarise(values);
  const bool have_oracle = summary.count("oracle") != 0;
  std::printf("\n| contender | mean return | std | per seed | of the oracle |\n|---|---|---|---|---|\n");
  for (const std::string& c : contenders) {
    const Summary& s = summary[c];
    std::vector<std::string> seeds;
    for (double v : s.per_seed) seeds.push_back(absl::StrFormat("%.2f", v));
    std::printf("| %s | %.2f | %.2f | %s | %s |\n", c.c_str(), s.mean, s.std,
                absl::StrJoin(seeds, ", ").c_str(),
                have_oracle && summary["oracle"].mean != 0
                    ? absl::StrFormat("%.1f%%", 100 * s.mean / summary["oracle"].mean).c_str()
                    : "-");
  }
  nlohmann::json json;
  json["experiment"] = o.experiment;
  json["seeds"] = o.seeds;
  json["training_steps"] = o.training_steps;
  json["observation_model"] = o.observation_model;
  for (const auto& [c, s] : summary) {
    json["results"][c] = {{"mean", s.mean}, {"std", s.std}, {"per_seed", s.per_seed}};
  }
  if (summary.count("secbad") != 0) {
    const Summary& secbad = summary["secbad"];
    for (const std::string& c : contenders) {
      if (c == "secbad" || c == "oracle") continue;
      const Summary& other = summary[c];
      const double margin = secbad.standard_error() + other.standard_error();
      const bool separated = secbad.mean - other.mean > margin;
      std::printf("secbad - %s: %+.2f (two standard errors combined: %.2f): %s\n", c.c_str(),
                  secbad.mean - other.mean, margin, separated ? "above" : "NOT separated");
      json["separation"][c] = {
          {"difference", secbad.mean - other.mean}, {"margin", margin}, {"above", separated}};
    }
    if (have_oracle) {
      std::printf("secbad / oracle: %.1f%%\n", 100 * secbad.mean / summary["oracle"].mean);
      json["secbad_over_oracle"] = secbad.mean / summary["oracle"].mean;
    }
  }
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, json));
  if (!o.plot.empty()) STRATA_RETURN_IF_ERROR(PlotPosterior(experiment.TracePosterior(1), o.plot));
  return absl::OkStatus();
}

}  // namespace strata::bench
