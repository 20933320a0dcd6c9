// Whole models trained on the checking device (core/ops/checking_backend.h)
// against the same models on the host: every parameter, gradient and
// activation lives in memory the host may not touch, so a layer, the loss
// or the optimizer reading a device tensor on the host crashes this test;
// and the device computes with the host's kernels, so both runs must agree
// to the last bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/layers/softmax_cross_entropy.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/ops/backend.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/parameter_optimizer.h"
#include "tests/core/gradient_check.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

struct TrainingRun {
  std::vector<double> losses;
  std::vector<std::vector<float>> parameters;  // after the last step, on the host
};

// `steps` SGD steps of `config`'s model on `backend`, from seed 1, on fixed
// random images and labels.
TrainingRun Train(const JobConfig& config, const Backend& backend, int steps) {
  TrainingRun run;
  auto model = Model::Build(config.model, 1, backend);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return run;
  auto optimizer = Optimizer::Create(config.optimizer);
  EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  ParameterOptimizer step(*std::move(optimizer),
                          LrSchedule(config.schedule, config.optimizer.lr, steps),
                          (*model)->parameters());
  const int64_t batch = 8;
  std::vector<int64_t> dims = {batch};
  for (int64_t d : (*model)->input_shape().dims()) dims.push_back(d);
  std::vector<int32_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>((3 * i + 1) % 10);
  for (int s = 0; s < steps; ++s) {
    absl::StatusOr<Tensor> images = backend.Upload(testing::RandomTensor(Shape(dims), 100 + s));
    EXPECT_TRUE(images.ok()) << images.status();
    Tensor logits = (*model)->Forward(*images, /*training=*/true);
    absl::StatusOr<LossResult> loss = SoftmaxCrossEntropy(logits, labels, /*want_grad=*/true);
    EXPECT_TRUE(loss.ok()) << loss.status();
    if (!loss.ok()) return run;
    const absl::StatusOr<double>& value = loss->loss.Get();
    EXPECT_TRUE(value.ok()) << value.status();
    run.losses.push_back(value.ok() ? *value : 0.0);
    (*model)->Backward(loss->grad_logits);
    step.Step();
  }
  for (Parameter* p : (*model)->parameters()) {
    absl::StatusOr<Tensor> host = backend.Download(p->value);
    EXPECT_TRUE(host.ok()) << host.status();
    run.parameters.push_back(host.ok() ? host->ToVector() : std::vector<float>());
  }
  return run;
}

class DeviceTrainingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceTrainingTest, TheCheckingDeviceTrainsTheModelExactlyAsTheHost) {
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/" + GetParam());
  ASSERT_TRUE(config.ok()) << config.status();
  const Backend& check = **BackendRegistry::Global().Find("check");
  const TrainingRun host = Train(*config, HostBackend(), 3);
  const TrainingRun device = Train(*config, check, 3);
  ASSERT_EQ(host.losses.size(), 3u);
  EXPECT_EQ(device.losses, host.losses);
  ASSERT_EQ(device.parameters.size(), host.parameters.size());
  for (size_t i = 0; i < host.parameters.size(); ++i) {
    EXPECT_EQ(device.parameters[i], host.parameters[i]) << "parameter " << i;
  }
  // The steps moved the parameters (a run that never updated would agree too).
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok());
  EXPECT_NE((*model)->parameters()[0]->value.ToVector(), host.parameters[0]);
}

// The shipped models that train in one process on the host: plain, with
// BatchNorm, residual.
INSTANTIATE_TEST_SUITE_P(ShippedModels, DeviceTrainingTest,
                         ::testing::Values("fashion_mnist.json", "fashion_mnist_bn.json",
                                           "resnet20_fmnist.json"));

}  // namespace
}  // namespace strata
