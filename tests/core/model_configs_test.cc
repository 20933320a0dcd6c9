// The model configs in configs/: each loads and builds, splits before its
// first linear layer, and has exactly the parameters of its PyTorch twin
// (sum(p.numel() for p in model.parameters())): torchvision.models' for the
// ImageNet-sized ones, the benchmark peer's modules for the rest.
#include <gtest/gtest.h>

#include "core/model/job_config.h"
#include "core/model/model.h"

namespace strata {
namespace {

struct ModelCase {
  const char* config;
  int64_t parameters;
  Shape boundary;  // per-sample activations at the split
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.config; }

class ModelConfigTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelConfigTest, BuildsWithTheReferenceParametersAndSplitsBeforeTheFirstLinear) {
  const ModelCase c = GetParam();
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/" + c.config + ".json");
  ASSERT_TRUE(config.ok()) << config.status();
  const auto& layers = config->model.layers;
  for (int i = 0; i < static_cast<int>(layers.size()); ++i) {
    if (layers[i].type != "linear") continue;
    EXPECT_GE(i, config->model.split_index)
        << "the first linear layer " << layers[i].name << " is in the trunk";
    break;
  }
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->num_parameter_elements(), c.parameters);
  EXPECT_EQ((*model)->boundary_shape(), c.boundary);
}

INSTANTIATE_TEST_SUITE_P(Configs, ModelConfigTest,
                         ::testing::Values(ModelCase{"alexnet", 61100840, {6, 6, 256}},
                                           ModelCase{"vgg16", 138357544, {7, 7, 512}},
                                           ModelCase{"resnet18", 11689512, {512}},
                                           ModelCase{"resnet50", 25557032, {2048}},
                                           ModelCase{"alexnet_cifar", 23272266, {2, 2, 256}},
                                           ModelCase{"vgg16_cifar", 33638218, {1, 1, 512}},
                                           ModelCase{"resnet18_cifar", 11173962, {512}},
                                           ModelCase{"resnet50_cifar", 23520842, {2048}},
                                           ModelCase{"resnet20_cifar", 272474, {64}},
                                           ModelCase{"resnet20_fmnist", 272186, {64}}),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return std::string(info.param.config);
                         });

}  // namespace
}  // namespace strata
