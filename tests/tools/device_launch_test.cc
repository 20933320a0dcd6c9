// strata_launch --mode single --device: the shipped models train on the
// checking device (every tensor in memory the host may not touch outside
// the backend's ops) exactly as on the host, checkpoints and evaluation
// included; a device that is not there, or not for this mode, is refused
// before training, by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/train/checkpoint.h"
#include "core/util/scratch_directory.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using Result = testing::LaunchResult;
using testing::RunLaunch;

// A shipped config by name, or any config by its path.
std::string Config(const std::string& name) {
  if (name.rfind('/', 0) == 0) return name;
  return std::string(STRATA_SOURCE_DIR) + "/configs/" + name;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every tensor of the checkpoint at `got` within `tolerance` of the one at
// `want`, name by name; returns how many tensors' names start with `prefix`.
int ExpectCheckpointsClose(const std::string& got_path, const std::string& want_path,
                           double tolerance, const std::string& prefix = "") {
  const absl::StatusOr<Checkpoint> want = ReadCheckpoint(want_path);
  const absl::StatusOr<Checkpoint> got = ReadCheckpoint(got_path);
  EXPECT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return 0;
  EXPECT_EQ(got->tensors.size(), want->tensors.size());
  int prefixed = 0;
  for (size_t i = 0; i < std::min(want->tensors.size(), got->tensors.size()); ++i) {
    const NamedTensor& w = want->tensors[i];
    const NamedTensor& g = got->tensors[i];
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.value.shape(), w.value.shape()) << w.name;
    if (g.value.shape() != w.value.shape()) continue;
    double worst = 0;
    for (int64_t j = 0; j < w.value.numel(); ++j) {
      worst = std::max(worst, std::fabs(double{g.value.data()[j]} - w.value.data()[j]));
    }
    EXPECT_LT(worst, tolerance) << w.name;
    prefixed += w.name.rfind(prefix, 0) == 0;
  }
  return prefixed;
}

class DeviceLaunchTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto dir = ScratchDirectory::Make("strata_device_launch");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
  }
  // Trains `config` for `steps` steps in `mode` on `device`, writing its
  // final parameters to <dir>/<tag>.ckpt; extra flags in `more`.
  Result Train(const std::string& config, const std::string& device, int steps,
               const std::string& tag, const std::string& more = "",
               const std::string& mode = "single") {
    return RunLaunch("--config " + Config(config) + " --mode " + mode + " --device " + device +
                     " --max-steps " + std::to_string(steps) +
                     " --threads 2 --progress=false --parameters-out " + path(tag + ".ckpt") +
                     " --summary-out " + path(tag + ".json") + " " + more);
  }
  std::string path(const std::string& name) const { return dir_->path() + "/" + name; }
  std::optional<ScratchDirectory> dir_;
};

TEST_P(DeviceLaunchTest, TheCheckingDeviceTrainsLikeTheHost) {
  const Result host = Train(GetParam(), "cpu", 6, "host", "--evaluate=false");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  const Result check = Train(GetParam(), "check", 6, "check", "--evaluate=false");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(ReadBytes(path("check.ckpt")), ReadBytes(path("host.ckpt")));
  std::ifstream in(path("check.json"));
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["device"], "check");
  EXPECT_EQ(summary["steps"], 6);
  // The device's peak holds at least the parameters, their gradients and
  // the optimizer's state; the host reports none.
  const int64_t parameter_bytes = summary["parameters"].get<int64_t>() * 4;
  EXPECT_GE(summary["device_peak_memory_bytes"].get<int64_t>(), 3 * parameter_bytes);
  std::ifstream host_in(path("host.json"));
  EXPECT_FALSE(nlohmann::json::parse(host_in).contains("device_peak_memory_bytes"));
}

INSTANTIATE_TEST_SUITE_P(ShippedModels, DeviceLaunchTest,
                         ::testing::Values("fashion_mnist.json", "fashion_mnist_bn.json",
                                           "fashion_mnist_fcheavy.json", "resnet20_fmnist.json"));

// 8 steps, a checkpoint, and a restored run to step 16 that evaluates: on
// the checking device the checkpoint carries the device's parameters and
// optimizer state out and back in, and evaluation runs there, exactly as
// on the host.
TEST_F(DeviceLaunchTest, CheckpointsAndEvaluationOnTheCheckingDeviceMatchTheHost) {
  const std::string config = "fashion_mnist.json";
  for (const std::string device : {"cpu", "check"}) {
    const std::string checkpoint = " --checkpoint " + path(device + "_state.ckpt");
    const Result first =
        Train(config, device, 8, device + "_first", "--evaluate=false" + checkpoint);
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const Result resumed =
        Train(config, device, 16, device, "--evaluate=true --restore" + checkpoint);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  }
  EXPECT_EQ(ReadBytes(path("check_state.ckpt")), ReadBytes(path("cpu_state.ckpt")));
  EXPECT_EQ(ReadBytes(path("check.ckpt")), ReadBytes(path("cpu.ckpt")));
  std::ifstream host_in(path("cpu.json")), check_in(path("check.json"));
  const nlohmann::json host = nlohmann::json::parse(host_in),
                       check = nlohmann::json::parse(check_in);
  EXPECT_GT(host["test_accuracy"].get<double>(), 0.3);  // 16 steps learn something
  EXPECT_EQ(check["test_accuracy"], host["test_accuracy"]);
  EXPECT_EQ(check["test_loss"], host["test_loss"]);
}

// The MoE model on the checking device: its gate, routing and experts stay
// on the device. With the shipped padded capacity the device's experts
// compute every slot (the host's only the used ones), so the two agree to
// rounding rather than to the bit.
TEST_F(DeviceLaunchTest, TheMoeModelTrainsOnTheCheckingDeviceLikeTheHost) {
  const std::string config = "fashion_mnist_moe.json";
  const Result host = Train(config, "cpu", 6, "host", "--evaluate=false");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  const Result check = Train(config, "check", 6, "check", "--evaluate=false");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  // The gate and the experts' w1, b1, w2, b2.
  EXPECT_EQ(ExpectCheckpointsClose(path("check.ckpt"), path("host.ckpt"), 1e-6, "moe."), 5);
  std::ifstream host_in(path("host.json")), check_in(path("check.json"));
  EXPECT_NEAR(nlohmann::json::parse(check_in)["train_loss"].get<double>(),
              nlohmann::json::parse(host_in)["train_loss"].get<double>(), 1e-5);
}

// The ps mode with both conv workers on the checking device: every
// gradient and state push copies down from the device, every pull lands on
// the host and is copied up before the next forward; a missing copy
// crashes a worker. With BatchNorm (its state pushed, pulled back to
// evaluate) and evaluation at the end, the run matches the host's to the
// bit.
TEST_F(DeviceLaunchTest, ThePsModeTrainsOnTheCheckingDeviceLikeTheHost) {
  const std::string config = "fashion_mnist_bn.json";
  const std::string layout = "--conv-workers 2 --servers 1 --evaluate=true";
  const Result host = Train(config, "cpu", 8, "host", layout, "ps");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  const Result check = Train(config, "check", 8, "check", layout, "ps");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(ReadBytes(path("check.ckpt")), ReadBytes(path("host.ckpt")));
  std::ifstream host_in(path("host.json")), check_in(path("check.json"));
  const nlohmann::json host_summary = nlohmann::json::parse(host_in),
                       check_summary = nlohmann::json::parse(check_in);
  EXPECT_EQ(check_summary["mode"], "ps");
  EXPECT_EQ(check_summary["device"], "check");
  EXPECT_GT(host_summary["test_accuracy"].get<double>(), 0.3);  // 8 steps learn something
  EXPECT_EQ(check_summary["test_accuracy"], host_summary["test_accuracy"]);
  EXPECT_GT(check_summary["device_peak_memory_bytes"].get<int64_t>(), 0);
}

// Two jobs sharing each worker process (ps mode, crossover sharing), every
// worker's models on the checking device: each job's checkpoint matches the
// host run's to the byte.
TEST_F(DeviceLaunchTest, TwoJobsSharingTheirWorkersTrainOnTheCheckingDeviceLikeTheHost) {
  for (const std::string device : {"cpu", "check"}) {
    const Result run = RunLaunch("--jobs " + Config("fashion_mnist.json") + "," +
                                 Config("fashion_mnist_bn.json") + " --mode ps --device " + device +
                                 " --max-steps 6 --threads 2 --progress=false --evaluate=false "
                                 "--parameters-out " +
                                 path(device + ".ckpt"));
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }
  for (const std::string job : {"job1", "job2"}) {
    const std::string host = ReadBytes(path("cpu." + job + ".ckpt"));
    EXPECT_FALSE(host.empty()) << job;
    EXPECT_EQ(ReadBytes(path("check." + job + ".ckpt")), host) << job;
  }
}

// The stanza mode with every worker on the checking device: the conv
// workers send their boundary activations from the host and take the
// gradients up, the FC worker takes the activations up and answers from the
// host, and the trunk's exchanges with the servers go through host copies.
// Gathered, the run matches the host's to the bit; arrival sums the head's
// gradients (on the device) in the order the conv workers' rows arrive,
// which varies from run to run on the host too, so it matches to rounding.
class StanzaOnDeviceTest : public DeviceLaunchTest {};  // the FC batching as the parameter

TEST_P(StanzaOnDeviceTest, TheStanzaModeTrainsOnTheCheckingDeviceLikeTheHost) {
  const std::string config = path("job.json");
  {
    std::ofstream out(config);
    out << testing::EditedConfig(testing::kConfig, R"("mode": "single")",
                                 R"("mode": "single", "fc_batching": ")" + GetParam() + R"(")");
  }
  const std::string layout = "--conv-workers 2 --fc-workers 1 --servers 1 --evaluate=true";
  const Result host = Train(config, "cpu", 8, "host", layout, "stanza");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  const Result check = Train(config, "check", 8, "check", layout, "stanza");
  ASSERT_EQ(check.exit_code, 0) << check.output;
  const bool exact = GetParam() == "gathered";
  if (exact) {
    EXPECT_EQ(ReadBytes(path("check.ckpt")), ReadBytes(path("host.ckpt")));
  } else {
    ExpectCheckpointsClose(path("check.ckpt"), path("host.ckpt"), 1e-5);
  }
  std::ifstream host_in(path("host.json")), check_in(path("check.json"));
  const nlohmann::json host_summary = nlohmann::json::parse(host_in),
                       check_summary = nlohmann::json::parse(check_in);
  EXPECT_EQ(check_summary["mode"], "stanza");
  EXPECT_EQ(check_summary["device"], "check");
  EXPECT_GT(host_summary["test_accuracy"].get<double>(), 0.3);
  EXPECT_NEAR(check_summary["test_accuracy"].get<double>(),
              host_summary["test_accuracy"].get<double>(), exact ? 0.0 : 0.01);
}

INSTANTIATE_TEST_SUITE_P(FcBatchings, StanzaOnDeviceTest, ::testing::Values("gathered", "arrival"));

TEST_F(DeviceLaunchTest, ADeviceThatIsNotThereOrCannotServeTheRoleIsRefusedByName) {
  const Result gpu = Train("fashion_mnist.json", "cuda:7", 5, "gpu");
  EXPECT_EQ(gpu.exit_code, 1) << gpu.output;
  // Without a GPU: "no CUDA device is visible to this process"; without
  // CUDA in the build: "this build of Strata has no CUDA backend".
  EXPECT_NE(gpu.output.find("device cuda:7 asked for, but "), std::string::npos) << gpu.output;
  EXPECT_EQ(gpu.output.find("step"), std::string::npos) << gpu.output;

  const Result unknown = Train("fashion_mnist.json", "tpu", 5, "tpu");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find(
                "--device: unknown device \"tpu\" (cpu, cuda, cuda:N for the N-th GPU, or check)"),
            std::string::npos)
      << unknown.output;

  // MoE experts split over FC workers exchange them from the host; a head
  // on another device is refused by name.
  const Result split = RunLaunch("--config " + Config("fashion_mnist_moe.json") +
                                 " --mode stanza --conv-workers 2 --fc-workers 2 --device check "
                                 "--max-steps 3 --progress=false");
  EXPECT_NE(split.exit_code, 0);
  EXPECT_NE(split.output.find("an expert group computes on the host (cpu), this layer on check"),
            std::string::npos)
      << split.output;
}

}  // namespace
}  // namespace strata
