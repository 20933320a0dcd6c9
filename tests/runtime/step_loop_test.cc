// The StepLoop's contract with a program, a device policy, the knobs and
// the records, driven by a scripted program (no network).
#include "runtime/step_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/time/clock.h"

namespace strata {
namespace {

// Logs what the loop does, as "acquire"/"release"/"iteration ends" and the
// program's events.
class LoggingDevice final : public DevicePolicy {
 public:
  explicit LoggingDevice(std::vector<std::string>& log) : log_(log) {}
  void Acquire() override { log_.push_back("acquire"); }
  void Release() override { log_.push_back("release"); }
  void IterationEnds() override { log_.push_back("iteration ends"); }

 private:
  std::vector<std::string>& log_;
};

class ScriptedProgram final : public StepProgram {
 public:
  ScriptedProgram(std::vector<std::string>& log, WaitObserver*& waits) : log_(log), waits_(waits) {}
  absl::Status Load(StepContext& c) override { return Note("load", c); }
  absl::Status Forward(StepContext& c) override {
    c.loss = 0.5 + static_cast<double>(c.iteration);
    // A wait inside a compute phase (the MoE all-to-all inside a layer).
    log_.push_back("forward");
    ScopedWait wait(waits_);
    log_.push_back("forward-waits");
    return absl::OkStatus();
  }
  absl::Status Exchange(StepContext& c) override { return Note("exchange", c); }
  absl::Status Backward(StepContext& c) override {
    sent_ += 100;
    return Note("backward", c);
  }
  absl::StatusOr<bool> Synchronise(StepContext& c) override {
    log_.push_back("synchronise");
    {
      ScopedWait wait(waits_);  // for the servers' answers
      log_.push_back("synchronise-waits");
    }
    if (rewind_at_ == c.iteration) {
      rewind_at_ = -1;
      c.rewind_to = c.iteration - 1;
      return false;
    }
    if (fail_at_ == c.iteration) return absl::UnavailableError("server gone");
    return true;
  }
  absl::Status Boundary(StepContext& c) override { return Note("boundary", c); }
  TrafficTotals Traffic() const override {
    TrafficTotals t;
    t.sent[0] = sent_;
    return t;
  }
  int64_t rewind_at_ = -1;
  int64_t fail_at_ = -1;

 private:
  absl::Status Note(const char* what, StepContext&) {
    log_.push_back(what);
    return absl::OkStatus();
  }
  std::vector<std::string>& log_;
  WaitObserver*& waits_;
  uint64_t sent_ = 0;
};

std::vector<nlohmann::json> ReadLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

// One iteration of `program` with `device`; `waits` is set to the loop's
// observer, which the program's components are given.
absl::StatusOr<int64_t> RunOneIteration(DevicePolicy& device, StepProgram& program,
                                        WaitObserver*& waits) {
  StepLoopOptions o;
  o.process = "test";
  o.total_iterations = 1;
  o.device = &device;
  StepLoop loop(o);
  waits = loop.waits();
  return loop.Run(program);
}

TEST(StepLoopTest, RunsThePhasesInOrderAndLetsTheDeviceGoAtEveryWaitAndAtTheEnd) {
  std::vector<std::string> log;
  LoggingDevice device(log);
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  ASSERT_EQ(RunOneIteration(device, program, waits).value(), 1);
  // Held from load on; a wait inside forward lets it go and takes it back;
  // exchange did not wait, so backward needs no new acquire; the wait in
  // synchronise lets it go until the boundary's compute.
  const std::vector<std::string> expected = {
      "acquire",           "load",     "forward",  "release",     "forward-waits",
      "acquire",           "exchange", "backward", "synchronise", "release",
      "synchronise-waits", "acquire",  "boundary", "release",     "iteration ends"};
  EXPECT_EQ(log, expected);
}

TEST(StepLoopTest, RecordsEveryIterationWithItsBytesLossAndKnobs) {
  const std::string path = ::testing::TempDir() + "/step_loop_records.jsonl";
  std::vector<std::string> log;
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  JobKnobs knobs;
  std::vector<std::string> applied;
  knobs.Declare("moe.pipeline_chunks", "1", [&](const std::string& v) {
    applied.push_back(v);
    return absl::OkStatus();
  });
  knobs.Schedule({{"moe.pipeline_chunks", "4", 2}});
  {
    absl::StatusOr<MetricsWriter> records = MetricsWriter::Open(path);
    ASSERT_TRUE(records.ok());
    StepLoopOptions o;
    o.process = "conv worker 3";
    o.first_iteration = 0;
    o.total_iterations = 4;
    o.knobs = &knobs;
    o.records = &*records;
    StepLoop loop(o);
    waits = loop.waits();
    ASSERT_EQ(loop.Run(program).value(), 4);
    EXPECT_EQ(loop.times().iterations, 3);  // the first is start-up
  }
  EXPECT_EQ(applied, std::vector<std::string>{"4"});
  const std::vector<nlohmann::json> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(lines[i]["event"], "iteration");
    EXPECT_EQ(lines[i]["process"], "conv worker 3");
    EXPECT_EQ(lines[i]["iteration"], i);
    EXPECT_EQ(lines[i]["completed"], true);
    EXPECT_DOUBLE_EQ(lines[i]["loss"].get<double>(), 0.5 + i);
    EXPECT_EQ(lines[i]["bytes_sent"]["server"], 100);
    EXPECT_EQ(lines[i]["knobs"]["moe.pipeline_chunks"], i < 2 ? "1" : "4");
    for (const char* phase : {"load", "forward", "exchange", "backward", "synchronise", "boundary"})
      EXPECT_GE(lines[i]["phases"][phase].get<double>(), 0.0) << phase;
    // The split adds up to the iteration (boundary excluded).
    EXPECT_NEAR(lines[i]["compute"].get<double>() + lines[i]["communication"].get<double>() +
                    lines[i]["waiting"].get<double>(),
                lines[i]["wall"].get<double>(), 1e-9);
  }
}

// A device another job holds for 10 ms whenever this one asks for it.
class BusyDevice final : public DevicePolicy {
 public:
  void Acquire() override { absl::SleepFor(absl::Milliseconds(10)); }
  void Release() override {}
};

TEST(StepLoopTest, WaitsForTheDeviceAreRecordedApartFromComputeWithEachIterationsStart) {
  const std::string path = ::testing::TempDir() + "/step_loop_device_waits.jsonl";
  std::vector<std::string> log;
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  BusyDevice device;
  {
    absl::StatusOr<MetricsWriter> records = MetricsWriter::Open(path);
    ASSERT_TRUE(records.ok());
    StepLoopOptions o;
    o.process = "conv worker 0";
    o.total_iterations = 2;
    o.device = &device;
    o.records = &*records;
    StepLoop loop(o);
    waits = loop.waits();
    ASSERT_EQ(loop.Run(program).value(), 2);
  }
  const std::vector<nlohmann::json> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 2u);
  for (const nlohmann::json& line : lines) {
    const nlohmann::json& device_waits = line["device_waits"];
    // Asked for at load, again after forward's wait on peers, and at the
    // boundary after synchronise's; backward still held it.
    EXPECT_GE(device_waits["load"].get<double>(), 0.010);
    EXPECT_GE(device_waits["forward"].get<double>(), 0.010);
    EXPECT_EQ(device_waits["backward"].get<double>(), 0.0);
    EXPECT_GE(device_waits["boundary"].get<double>(), 0.010);
    EXPECT_EQ(device_waits["exchange"].get<double>(), 0.0);     // not a compute phase
    EXPECT_EQ(device_waits["synchronise"].get<double>(), 0.0);  // nor this
    // Waiting for the device is neither compute nor communication.
    const double waited =
        device_waits["load"].get<double>() + device_waits["forward"].get<double>();
    EXPECT_GE(line["waiting"].get<double>(), waited - 1e-9);
    EXPECT_LT(line["compute"].get<double>(), waited);
    EXPECT_NEAR(line["compute"].get<double>() + line["communication"].get<double>() +
                    line["waiting"].get<double>(),
                line["wall"].get<double>(), 1e-9);
  }
  // Starts on the monotonic clock, one iteration after the other.
  EXPECT_GE(lines[1]["start"].get<double>() - lines[0]["start"].get<double>(),
            lines[0]["wall"].get<double>());
}

// Logs like LoggingDevice and asks its holder to yield at the
// `yield_on`th question (1-based; 0: never).
class YieldingDevice final : public DevicePolicy {
 public:
  explicit YieldingDevice(std::vector<std::string>& log) : log_(log) {}
  void Acquire() override { log_.push_back("acquire"); }
  void Release() override { log_.push_back("release"); }
  bool ShouldYield() override { return ++asked == yield_on; }
  int yield_on = 0;
  int asked = 0;

 private:
  std::vector<std::string>& log_;
};

// A backward of two layers, offering the point between them, and a wait
// inside it that offers one too (where nothing may change hands).
class LayeredProgram final : public StepProgram {
 public:
  LayeredProgram(std::vector<std::string>& log, WaitObserver*& waits) : log_(log), waits_(waits) {}
  absl::Status Backward(StepContext&) override {
    log_.push_back("layer 2");
    waits_->MayYield();
    log_.push_back("layer 1");
    ScopedWait wait(waits_);
    waits_->MayYield();
    log_.push_back("waits");
    return absl::OkStatus();
  }

 private:
  std::vector<std::string>& log_;
  WaitObserver*& waits_;
};

TEST(StepLoopTest, AHolderAskedToYieldBetweenLayersLetsTheDeviceGoAndTakesItBack) {
  // The holder is asked at the start of forward, backward and boundary
  // (load's start finds the device not yet taken), and between the layers,
  // the third question; the point inside the wait is not asked.
  for (const int yield_on : {0, 3}) {
    std::vector<std::string> log;
    YieldingDevice device(log);
    device.yield_on = yield_on;
    WaitObserver* waits = nullptr;
    LayeredProgram program(log, waits);
    ASSERT_EQ(RunOneIteration(device, program, waits).value(), 1);
    std::vector<std::string> expected = {"acquire", "layer 2", "layer 1", "release",
                                         "waits",   "acquire", "release"};
    if (yield_on == 3) {
      expected = {"acquire", "layer 2", "release", "acquire", "layer 1",
                  "release", "waits",   "acquire", "release"};
    }
    EXPECT_EQ(log, expected) << "yield on question " << yield_on;
    EXPECT_EQ(device.asked, 4);
  }
}

TEST(StepLoopTest, ARewoundIterationIsRecordedAndRedone) {
  const std::string path = ::testing::TempDir() + "/step_loop_rewind.jsonl";
  std::vector<std::string> log;
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  program.rewind_at_ = 2;
  std::vector<std::string> device_log;
  LoggingDevice device(device_log);
  {
    absl::StatusOr<MetricsWriter> records = MetricsWriter::Open(path);
    ASSERT_TRUE(records.ok());
    StepLoopOptions o;
    o.total_iterations = 3;
    o.records = &*records;
    o.device = &device;
    StepLoop loop(o);
    ASSERT_EQ(loop.Run(program).value(), 3);
  }
  std::vector<std::pair<int64_t, bool>> seen;
  for (const auto& l : ReadLines(path)) seen.emplace_back(l["iteration"], l["completed"]);
  const std::vector<std::pair<int64_t, bool>> expected = {
      {0, true}, {1, true}, {2, false}, {1, true}, {2, true}};
  EXPECT_EQ(seen, expected);
  // The device policy hears of every iteration's end, the rewound one's too.
  EXPECT_EQ(std::count(device_log.begin(), device_log.end(), "iteration ends"), 5);
}

TEST(StepLoopTest, AnErrorNamesTheIterationAndPhase) {
  std::vector<std::string> log;
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  program.fail_at_ = 1;
  std::vector<std::string> device_log;
  LoggingDevice device(device_log);
  StepLoopOptions o;
  o.total_iterations = 5;
  o.device = &device;
  StepLoop loop(o);
  waits = loop.waits();
  absl::StatusOr<int64_t> r = loop.Run(program);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(), "iteration 1, synchronise: server gone");
  // A failed job does not keep the device from the process's other jobs.
  ASSERT_FALSE(device_log.empty());
  EXPECT_EQ(device_log.back(), "release");
  EXPECT_EQ(std::count(device_log.begin(), device_log.end(), "acquire"),
            std::count(device_log.begin(), device_log.end(), "release"));
}

// A schedule that waits for the coordinator and passes on proposals.
class RecordingSchedule final : public KnobSchedule {
 public:
  absl::Status Before(int64_t iteration, JobKnobs& knobs, WaitObserver* waits) override {
    ScopedWait wait(waits);
    asked.push_back(iteration);
    if (iteration == 1) knobs.Schedule({{"moe.pipeline_chunks", "2", 1}});
    return absl::OkStatus();
  }
  void Propose(const std::vector<KnobProposal>& p) override {
    for (const auto& x : p) proposed.push_back(x.name + "=" + x.value);
  }
  std::vector<int64_t> asked;
  std::vector<std::string> proposed;
};

class ProposeOnce final : public Controller {
 public:
  std::vector<KnobProposal> Observe(const IterationRecord& r) override {
    seen.push_back(r.iteration);
    if (r.iteration == 0) return {{"moe.pipeline_chunks", "2"}};
    return {};
  }
  std::vector<int64_t> seen;
};

TEST(StepLoopTest, TheControllerSeesEveryRecordAndItsProposalsGoToTheSchedule) {
  std::vector<std::string> log;
  WaitObserver* waits = nullptr;
  ScriptedProgram program(log, waits);
  JobKnobs knobs;
  knobs.Declare("moe.pipeline_chunks", "1", nullptr);
  RecordingSchedule schedule;
  ProposeOnce controller;
  StepLoopOptions o;
  o.total_iterations = 3;
  o.knobs = &knobs;
  o.schedule = &schedule;
  o.controller = &controller;
  StepLoop loop(o);
  waits = loop.waits();
  ASSERT_TRUE(loop.Run(program).ok());
  EXPECT_EQ(schedule.asked, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(schedule.proposed, std::vector<std::string>{"moe.pipeline_chunks=2"});
  EXPECT_EQ(controller.seen, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(knobs.values().at("moe.pipeline_chunks"), "2");
}

}  // namespace
}  // namespace strata
