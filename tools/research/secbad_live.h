// `strata_research secbad live`: one job under a schedule of changing
// conditions (a straggler that comes and goes, a link whose rate changes),
// run with every static value of a knob and with each controller, side by
// side, alternated (A B C A B C) so drift on a shared machine hits all:
//
//   strata_research secbad live --config configs/fashion_mnist.json --mode ps --conv-workers 2
//       --cost-model shares.json [--policy-file secbad.bin | --training-steps N]
//       --cpu-schedule conv1=25%@25s,conv1=none@50s,conv0=25%@75s,conv0=none@100s
//       [--cpu-pin conv0=0,conv1=1] [--threads 1]
//       [--bandwidth-schedule 1gbit@0,100mbit@60s] --seconds 125 [--warmup 5]
//       [--repeat 2] [--knob-lead 2] [--contenders static,changepoint,secbad]
//       [--json out.json] [--plot out.png] [--records-dir DIR]
//
// The knob and its values are the cost model's (strata_bench train --knob
// ... --cost-model-out). "static" runs the job once per value, starting
// there and never changing; "changepoint" and "secbad" start from the
// config's value and re-tune it (strata_launch --controller). Without
// --policy-file, SeCBAD's policy is first trained in the cost model's
// runtime environment (scheduler/secbad/runtime_environment.h). Each run
// is stopped `seconds` after its launch.
//
// From conv worker 0's iteration records it reports, per phase of the
// schedule (between its changes; the first `warmup` seconds left out):
// each contender's images/s (the global batch over the seconds, for every
// iteration that began in the phase), the best static value there (and
// every static value about as fast, within the margin a phase is judged by),
// and each controller's ratio to it; over the whole run, each controller
// against every static value; and after each change, how many iterations
// each controller's run took until one of the phase's best values was in
// force.
// The JSON holds all of it and every controller event; the plot draws each
// contender's throughput over time with the phases.
#ifndef STRATA_TOOLS_RESEARCH_SECBAD_LIVE_H_
#define STRATA_TOOLS_RESEARCH_SECBAD_LIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/launch/launch_spec.h"
#include "tools/research/secbad_experiments.h"

namespace strata::research {

struct SecbadLiveOptions {
  std::string config;
  // The cluster every run starts: its mode (ps or stanza), layout, the
  // conditions that change (cpu_schedule, bandwidth_schedule), pinned CPUs
  // and knob lead; each run adds its config, controller and outputs.
  LaunchSpec cluster;
  int threads = 2;
  std::string cost_model;
  std::string policy_file;               // "" = train one first
  int64_t training_steps = 3'000'000;    // when training one
  double decision_margin = kSecbadDecisionMargin;  // of the policy trained
  double segment_mean = kSecbadSegmentMean;        // the prior it trains under
  double segment_stddev = kSecbadSegmentStddev;
  double seconds = 125;                  // each run's length from its launch
  double warmup = 5;                     // left out of every figure
  int repeat = 3;
  std::vector<std::string> contenders = {"static", "changepoint", "secbad"};
  std::string json_out;
  std::string plot;
  // Keeps each run's records and log in DIR/<contender>_<repeat> ("" = not kept).
  std::string records_dir;
};

absl::Status RunSecbadLive(const SecbadLiveOptions& options);

}  // namespace strata::research

#endif  // STRATA_TOOLS_RESEARCH_SECBAD_LIVE_H_
