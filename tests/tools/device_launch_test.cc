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

std::string Config(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/configs/" + name;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
  const absl::StatusOr<Checkpoint> want = ReadCheckpoint(path("host.ckpt"));
  const absl::StatusOr<Checkpoint> got = ReadCheckpoint(path("check.ckpt"));
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->tensors.size(), want->tensors.size());
  int moe_tensors = 0;
  for (size_t i = 0; i < want->tensors.size(); ++i) {
    const NamedTensor& w = want->tensors[i];
    const NamedTensor& g = got->tensors[i];
    ASSERT_EQ(g.name, w.name);
    ASSERT_EQ(g.value.shape(), w.value.shape()) << w.name;
    double worst = 0;
    for (int64_t j = 0; j < w.value.numel(); ++j) {
      worst = std::max(worst, std::fabs(double{g.value.data()[j]} - w.value.data()[j]));
    }
    EXPECT_LT(worst, 1e-6) << w.name;
    moe_tensors += w.name.rfind("moe.", 0) == 0;
  }
  EXPECT_EQ(moe_tensors, 5);  // the gate and the experts' w1, b1, w2, b2
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

TEST_F(DeviceLaunchTest, ADeviceThatIsNotThereOrNotForTheModeIsRefusedBeforeTraining) {
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

  const Result cluster = RunLaunch("--config " + Config("fashion_mnist.json") +
                                   " --mode stanza --device check --max-steps 5");
  EXPECT_EQ(cluster.exit_code, 1);
  EXPECT_NE(cluster.output.find("training.device \"check\" applies to the single and ps modes; "
                                "the stanza mode's processes compute on the cpu"),
            std::string::npos)
      << cluster.output;
}

}  // namespace
}  // namespace strata
