#include "tests/support/cluster_fixture.h"

#include "absl/time/clock.h"

#include "tools/netem/cpu_schedule.h"

#include "core/util/ready_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/model/job_identity.h"
#include "core/model/model.h"
#include "core/train/checkpoint.h"
#include "core/util/json_file.h"

namespace strata::testing {

const std::string kBin = std::string(STRATA_BINARY_DIR) + "/bin/";
const std::string kConfig = std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json";
const std::string kMoeConfig = std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist_moe.json";
const std::string kBatchNormConfig =
    std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist_bn.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string EditedConfig(const std::string& path, const std::string& from, const std::string& to) {
  return EditedConfig(path, {{from, to}});
}

std::string EditedConfig(const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = ReadFile(path);
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

std::string ConfigError(const std::string& text) {
  auto config = ParseJobConfig(text, "job.json");
  if (!config.ok()) return std::string(config.status().message());
  auto model = Model::Build(config->model, 1);
  return model.ok() ? "" : std::string(model.status().message());
}

std::string DefaultJobIdentity(int64_t max_steps, const std::string& path) {
  auto config = LoadJobConfig(path);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return "";
  config->training.max_steps = max_steps;
  return JobIdentity(*config);
}

std::pair<int, std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

LaunchResult RunLaunch(const std::string& args, const std::string& environment) {
  auto [code, output] = RunCommand("env " + environment + " " + std::string(STRATA_BINARY_DIR) +
                                   "/bin/strata_launch " + args);
  return {code, output};
}

std::vector<nlohmann::json> JsonLines(const std::string& path, const std::string& event) {
  return ReadJsonLines(path, event).value_or(std::vector<nlohmann::json>{});
}

std::pair<int, std::string> SetWhenDeclared(const std::string& command) {
  std::pair<int, std::string> answer = RunCommand(command);
  const int tries = ScaledSeconds(10) * 100;
  for (int t = 0; t < tries && answer.first != 0 &&
                  absl::StrContains(answer.second, "no process of this job applies knob");
       ++t) {
    ::usleep(10000);
    answer = RunCommand(command);
  }
  return answer;
}

int64_t InjectedFaultCount(const std::string& output, const std::string& what) {
  int64_t total = 0;
  for (size_t line = output.find("faults injected: "); line != std::string::npos;
       line = output.find("faults injected: ", line + 1)) {
    const size_t at = output.find(what, line);
    if (at != std::string::npos) total += std::stoll(output.substr(at + what.size()));
  }
  return total;
}

int CountStrataProcesses(const std::string& marker) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = ReadFile(entry.path().string() + "/cmdline");
    if (cmdline.find(marker) != std::string::npos && cmdline.find("strata_") != std::string::npos) {
      ++count;
    }
  }
  return count;
}

pid_t FindStrataChild(pid_t parent, const std::string& binary, int rank) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    // stat: "pid (comm) state ppid ..."; comm may hold spaces, not ')'.
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    const size_t comm_end = stat.rfind(')');
    if (comm_end == std::string::npos) continue;
    std::vector<std::string> fields =
        absl::StrSplit(stat.substr(comm_end + 2), ' ', absl::SkipEmpty());
    if (fields.size() < 2 || fields[1] != std::to_string(parent)) continue;
    const std::string cmdline = ReadFile(entry.path().string() + "/cmdline");
    std::vector<std::string> args = absl::StrSplit(cmdline, '\0');
    if (args.empty() || !absl::EndsWith(args[0], "/" + binary)) continue;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--rank" && args[i + 1] == std::to_string(rank)) {
        return static_cast<pid_t>(std::stol(entry.path().filename().string()));
      }
    }
  }
  return 0;
}

Process::Process(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.output_path = log;
  spec.die_with_parent = true;
  absl::StatusOr<std::unique_ptr<ChildProcess>> started = ChildProcess::Start(spec);
  EXPECT_TRUE(started.ok()) << started.status();
  if (started.ok()) process_ = *std::move(started);
}

Process::~Process() {
  if (process_ != nullptr && !process_->exited()) {
    process_->Signal(SIGKILL);
    process_->Wait();
  }
}

const std::string& WhyNoCpuLimits() {
  static const std::string why = []() -> std::string {
    absl::StatusOr<std::unique_ptr<CpuLimiter>> limiter = CpuLimiter::Create();
    return limiter.ok() ? "" : std::string(limiter.status().message());
  }();
  return why;
}

double TimeScale() {
  const char* scale = std::getenv("STRATA_TEST_TIME_SCALE");
  const double value = scale == nullptr ? 1.0 : std::atof(scale);
  return value >= 1.0 ? value : 1.0;
}

int ScaledSeconds(int seconds) {
  return static_cast<int>(std::ceil(static_cast<double>(seconds) * TimeScale()));
}

void SleepScaled(absl::Duration d) { absl::SleepFor(d * TimeScale()); }

std::string Process::WaitForReady(const std::string& path, int seconds) {
  seconds = ScaledSeconds(seconds);
  if (process_ == nullptr) return "";
  absl::StatusOr<nlohmann::json> ready = AwaitReadyFile(path, "the process", absl::Seconds(seconds),
                                                        [this]() -> std::optional<std::string> {
                                                          if (!process_->Poll().has_value())
                                                            return std::nullopt;
                                                          return std::string("exited");
                                                        });
  EXPECT_TRUE(ready.ok()) << ready.status() << "\n" << log();
  if (!ready.ok()) return "";
  return ready->value("address", "");
}

std::string Process::WaitFor(const std::string& text, int seconds) {
  seconds = ScaledSeconds(seconds);
  for (int i = 0; i < seconds * 20; ++i) {
    std::istringstream lines(ReadFile(log_));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find(text) != std::string::npos) return line;
    }
    usleep(50000);
  }
  return "";
}

void Process::Interrupt() { process_->Signal(SIGINT); }
void Process::Pause() { process_->Signal(SIGSTOP); }
void Process::Resume() { process_->Signal(SIGCONT); }

void Process::Kill9() {
  process_->Signal(SIGKILL);
  process_->Wait();
}

pid_t Process::pid() const { return process_ != nullptr ? process_->pid() : 0; }

int Process::Wait() {
  process_->Wait();
  const int status = process_->wait_status();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool Process::Exited() { return process_->Poll().has_value(); }

std::string Process::log() const { return ReadFile(log_); }

void ClusterTest::SetUp() {
  char tmpl[] = "/tmp/strata_cluster_test_XXXXXX";
  dir_ = mkdtemp(tmpl);
}

void ClusterTest::TearDown() { std::filesystem::remove_all(dir_); }

void ClusterTest::WriteTokens(const std::string& token) const {
  for (const auto& [file, text] :
       {std::pair<std::string, std::string>{"/token", token}, {"/admin_token", token + "-admin"}}) {
    std::ofstream(dir_ + file) << text << "\n";
    ::chmod((dir_ + file).c_str(), 0600);
  }
}

std::string ClusterTest::TokenFlags() const {
  return "--job-token-file " + dir_ + "/token --admin-token-file " + dir_ + "/admin_token ";
}

std::string ClusterTest::PlainSgdConfig(const std::string& base) {
  std::string text = EditedConfig(
      base, {{R"("momentum": 0.9)", R"("momentum": 0.0)"},
             {R"("schedule": {"type": "cosine"})", R"("schedule": {"type": "constant"})"}});
  // Where the config has them: Nesterov needs momentum, and no weight decay.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"("nesterov": true)", R"("nesterov": false)"},
           {R"("weight_decay": 0.0005)", R"("weight_decay": 0.0)"}}) {
    const size_t at = text.find(from);
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  const std::string path = dir_ + "/plain_sgd_" + std::filesystem::path(base).filename().string();
  std::ofstream(path) << text;
  return path;
}

std::map<std::string, std::vector<float>> ClusterTest::Parameters(const std::string& path) {
  auto c = ReadCheckpoint(path);
  EXPECT_TRUE(c.ok()) << c.status();
  std::map<std::string, std::vector<float>> out;
  if (!c.ok()) return out;
  for (const auto& t : c->tensors) out[t.name] = t.value.ToVector();
  return out;
}

float ClusterTest::MaxDifference(const std::string& a, const std::string& b) {
  auto pa = Parameters(a), pb = Parameters(b);
  EXPECT_EQ(pa.size(), pb.size());
  float worst = 0;
  for (const auto& [name, values] : pa) {
    const auto& other = pb[name];
    EXPECT_EQ(values.size(), other.size()) << name;
    for (size_t i = 0; i < values.size() && i < other.size(); ++i) {
      worst = std::max(worst, std::fabs(values[i] - other[i]));
    }
  }
  return worst;
}

nlohmann::json ClusterTest::Summary(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

}  // namespace strata::testing
