// Helpers for tests that start real Strata processes: running a command,
// a background process with its log, and a fixture with a scratch directory
// and parameter-file comparisons.
#ifndef STRATA_TESTS_SUPPORT_CLUSTER_FIXTURE_H_
#define STRATA_TESTS_SUPPORT_CLUSTER_FIXTURE_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "core/process/subprocess.h"

namespace strata::testing {

extern const std::string kBin;              // build/bin/
extern const std::string kConfig;           // configs/fashion_mnist.json
extern const std::string kMoeConfig;        // configs/fashion_mnist_moe.json
extern const std::string kBatchNormConfig;  // configs/fashion_mnist_bn.json: BatchNorm in the trunk

std::string ReadFile(const std::string& path);

// The job identity (core/model/job_identity.h) of the config at `config`
// (the default config unless given) run for `max_steps` steps: what a
// hand-made HELLO to its processes presents.
std::string DefaultJobIdentity(int64_t max_steps, const std::string& config = kConfig);

// The config at `path` with `from` replaced by `to` (which must occur).
std::string EditedConfig(const std::string& path, const std::string& from, const std::string& to);
// The same for each {from, to} of `edits`, in order.
std::string EditedConfig(const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& edits);
// The error of parsing `text` as a job config ("job.json") and building its
// model, or "" when both succeed.
std::string ConfigError(const std::string& text);

// Runs a command line to completion; returns (exit code, stdout+stderr).
std::pair<int, std::string> RunCommand(const std::string& command);

// This build's strata_launch run to completion with `args` (shell words),
// with `environment` ("NAME=value ...") set for it.
struct LaunchResult {
  int exit_code;
  std::string output;  // stdout and stderr
};
LaunchResult RunLaunch(const std::string& args, const std::string& environment = "");

// ReadJsonLines (core/util/json_file.h), none for a file that cannot be
// read.
std::vector<nlohmann::json> JsonLines(const std::string& path, const std::string& event = "");

// Runs `strata_ctl ... set NAME=V` (the command line) until the job has
// declared the knob: a set asked before the processes' first lease is
// refused with "no process of this job applies knob". Returns the last
// answer (exit code, output); gives up after about 10 s, scaled.
std::pair<int, std::string> SetWhenDeclared(const std::string& command);

// The sum, over every process's "faults injected: ..." line in `output`,
// of the count after `what` ("dropped ", "duplicated ", ...).
int64_t InjectedFaultCount(const std::string& output, const std::string& what);

// Strata processes whose command line mentions `marker` (a unique temp
// path passed to the run), from /proc.
int CountStrataProcesses(const std::string& marker);
// The pid of the running `binary` (e.g. "strata_server") given "--rank"
// `rank` that is a child of `parent`; 0 when there is none.
pid_t FindStrataChild(pid_t parent, const std::string& binary, int rank);

// How many times longer than usual a test should wait for what it starts:
// STRATA_TEST_TIME_SCALE (at least 1), which sanitized builds set because
// their processes run several times slower (tools/sanitizers/run.sh).
double TimeScale();

// Empty where strata_launch can limit processes' CPU (--cpu-schedule:
// cgroups); else why not.
const std::string& WhyNoCpuLimits();
// `seconds` times TimeScale(), rounded up: for the waits and timeouts a
// test gives the processes it starts.
int ScaledSeconds(int seconds);
// Sleeps `d` times TimeScale(): for a test that gives what it started time
// to get somewhere (prefer waiting for what can be observed).
void SleepScaled(absl::Duration d);

// A background process (core/process/subprocess.h) whose output goes to a log
// file; killed (SIGKILL, with its process group) when destroyed unless it
// was waited for.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // Waits until the log contains `text`; returns the line holding it ("" on
  // timeout). Waits and timeouts below are scaled by TimeScale().
  std::string WaitFor(const std::string& text, int seconds = 30);
  // Waits for the ready file (core/util/ready_file.h) the process was told
  // to write with --ready-file `path`; returns its "address" ("" when the
  // process exits first or `seconds` pass, with a test failure naming why).
  std::string WaitForReady(const std::string& path, int seconds = 30);
  void Interrupt();
  // SIGSTOP and SIGCONT: a process that stalls (a straggler, or a node that
  // looks dead while it is stopped).
  void Pause();
  void Resume();
  void Kill9();
  pid_t pid() const;
  // Waits for exit; returns the exit status (-1 if killed by a signal).
  int Wait();
  // Whether it has exited, without waiting (Wait then returns at once).
  bool Exited();
  std::string log() const;

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string log_;
};

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // `base` (default: the default config) with plain SGD and a constant
  // learning rate, written to the scratch directory.
  std::string PlainSgdConfig(const std::string& base = kConfig);
  // Writes `token` to dir_/token, and an admin token made from it to
  // dir_/admin_token, each readable by the owner alone.
  void WriteTokens(const std::string& token) const;
  // "--job-token-file DIR/token --admin-token-file DIR/admin_token ": what
  // a launcher, and strata_ctl changing knobs, are given after WriteTokens.
  std::string TokenFlags() const;
  // Parameters by name from a checkpoint file.
  static std::map<std::string, std::vector<float>> Parameters(const std::string& path);
  // Largest element difference between two parameter files (same names).
  static float MaxDifference(const std::string& a, const std::string& b);
  static nlohmann::json Summary(const std::string& path);

  std::string dir_;
};

}  // namespace strata::testing

#endif  // STRATA_TESTS_SUPPORT_CLUSTER_FIXTURE_H_
