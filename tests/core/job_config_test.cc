// Job config parsing and model building: errors name the field's path.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/model/server_keys.h"

namespace strata {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kDefaultConfig = std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json";

// The default config with `from` replaced by `to` (which must occur).
std::string Edited(const std::string& from, const std::string& to) {
  std::string text = ReadFile(kDefaultConfig);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string ErrorOf(const std::string& text) {
  auto config = ParseJobConfig(text, "job.json");
  if (!config.ok()) return std::string(config.status().message());
  auto model = Model::Build(config->model, 1);
  return model.ok() ? "" : std::string(model.status().message());
}

TEST(JobConfigTest, DefaultConfigLoadsAndBuilds) {
  auto config = LoadJobConfig(kDefaultConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model.layers.size(), 10u);
  EXPECT_EQ(config->model.split_index, 6);
  EXPECT_EQ(config->training.batch_size, 64);
  EXPECT_EQ(config->optimizer.type, "sgd");
  EXPECT_FLOAT_EQ(config->optimizer.momentum, 0.9f);
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->boundary_shape(), Shape({7, 7, 64}));
  // conv1 320 + conv2 18496 + fc1 1606144 + fc2 5130
  EXPECT_EQ((*model)->num_parameter_elements(), 1630090);
  EXPECT_EQ((*model)->parameters(0, 6).size(), 4u);
  EXPECT_EQ((*model)->parameters()[0]->name, "conv1.weight");
  EXPECT_EQ((*model)->parameters().back()->name, "fc2.bias");
}

TEST(JobConfigTest, UnknownLayerType) {
  EXPECT_EQ(ErrorOf(Edited(R"("type": "relu", "name": "relu2")", R"("type": "gelu")")),
            "job.json: model.layers[4].type: unknown layer type \"gelu\" (known: conv2d, relu, "
            "maxpool2d, avgpool2d, global_avgpool, batchnorm2d, flatten, linear, dropout, moe)");
}

TEST(JobConfigTest, MissingField) {
  EXPECT_EQ(ErrorOf(Edited(R"("name": "fc1", "out_features": 512)", R"("name": "fc1")")),
            "job.json: model.layers[7].out_features: missing field");
  EXPECT_EQ(ErrorOf(Edited(R"("type": "sgd", "lr": 0.05,)", R"("type": "sgd",)")),
            "job.json: optimizer.lr: missing field");
}

TEST(JobConfigTest, WrongTypeAndUnknownField) {
  EXPECT_EQ(ErrorOf(Edited(R"("batch_size": 64)", R"("batch_size": "64")")),
            "job.json: training.batch_size: expected an integer, got string \"64\"");
  EXPECT_EQ(ErrorOf(Edited(R"("batch_size": 64)", R"("batchsize": 64)")),
            "job.json: training.batchsize: unknown field");
}

TEST(JobConfigTest, ShapesThatDoNotChain) {
  // Without flatten, fc1 gets an image.
  EXPECT_EQ(ErrorOf(Edited(R"({"type": "flatten", "name": "flatten"},)", "")),
            "model.layers[6] (linear \"fc1\"): linear needs a vector input [F], got [7, 7, 64] "
            "(put a flatten layer before it)");
  // A head that does not end in `classes` outputs.
  EXPECT_EQ(ErrorOf(Edited(R"("name": "fc2", "out_features": 10)",
                           R"("name": "fc2", "out_features": 12)")),
            "model.layers: the last layer outputs [12] per sample, but the model has 10 classes "
            "(end with a linear layer of out_features 10)");
}

TEST(JobConfigTest, SplitMustNameALayer) {
  EXPECT_EQ(ErrorOf(Edited(R"("split_after": "pool2")", R"("split_after": "pool9")")),
            "job.json: model.split_after: no layer is named \"pool9\"");
}

TEST(JobConfigTest, InvalidJsonNamesLineAndSource) {
  const std::string error = ErrorOf("{\"data\": }");
  EXPECT_NE(error.find("job.json: invalid JSON"), std::string::npos) << error;
}

TEST(JobConfigTest, MoeHeadConfigBuildsAnMoeLayer) {
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist_moe.json");
  ASSERT_TRUE(config.ok()) << config.status();
  const LayerSpec& moe = config->model.layers[8];
  EXPECT_EQ(moe.type, "moe");
  EXPECT_EQ(moe.moe.experts, 8);
  EXPECT_EQ(moe.moe.top_k, 2);
  EXPECT_EQ(moe.moe.hidden, 1024);
  EXPECT_FLOAT_EQ(moe.moe.capacity_factor, 1.25f);
  auto model = Model::Build(config->model, 1);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_STREQ((*model)->layer(8).kind(), "moe");
  // 8 experts of 512 -> 1024 -> 512, and the 8 x 512 gate.
  EXPECT_EQ((*model)->layer(8).parameters().size(), 5u);
  int64_t moe_parameters = 0;
  for (const Parameter* p : (*model)->layer(8).parameters()) moe_parameters += p->value.numel();
  EXPECT_EQ(moe_parameters, 8 * 512 + 8 * (512 * 1024 + 1024 + 1024 * 512 + 512));
  // Split over FC workers, only the gate of the MoE layer stays replicated:
  // the servers hold the head's fc1, gate and fc2 after the trunk.
  auto layout = KeyLayoutFor(**model, "stanza", 2);
  ASSERT_TRUE(layout.ok()) << layout.status();
  std::vector<std::string> head;
  for (const ServerKey& k : ServerKeys(**model, *layout)) {
    if (k.owner == KeyOwner::kFcWorkers) head.push_back(k.name);
  }
  EXPECT_EQ(head, std::vector<std::string>(
                      {"fc1.weight", "fc1.bias", "moe.gate", "fc2.weight", "fc2.bias"}));
}

TEST(JobConfigTest, MoeFieldsAreChecked) {
  const std::string fc1 = R"({"type": "linear", "name": "fc1", "out_features": 512},)";
  EXPECT_EQ(
      ErrorOf(Edited(fc1, fc1 + R"({"type": "moe", "experts": 4, "hidden": 8, "top_k": 5},)")),
      "job.json: model.layers[8].top_k: must be in [1, experts = 4], got 5");
  EXPECT_EQ(ErrorOf(Edited(fc1, fc1 + R"({"type": "moe", "hidden": 8},)")),
            "job.json: model.layers[8].experts: missing field");
  EXPECT_EQ(ErrorOf(Edited(fc1, fc1 + R"({"type": "moe", "experts": 4, "hidden": 8, "topk": 2},)")),
            "job.json: model.layers[8].topk: unknown field");
  EXPECT_EQ(ErrorOf(Edited(fc1, fc1 + R"({"type": "moe", "experts": 4, "hidden": 8,
                                           "parallelism": "model"},)")),
            "job.json: model.layers[8].parallelism: \"model\" is not expert or data");
  EXPECT_EQ(ErrorOf(Edited(fc1, fc1 + R"({"type": "moe", "experts": 4, "hidden": 8,
                                           "pipeline_chunks": 0},)")),
            "job.json: model.layers[8].pipeline_chunks: must be > 0, got 0");
}

TEST(JobConfigTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadJobConfig("/nonexistent/job.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace strata
