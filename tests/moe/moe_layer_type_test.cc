// The "moe" layer type that moe/ registers with core's layer registry: the
// MoE config builds an MoE layer, its fields are checked by name, and its
// identity names its fields. Without the registration (RegisterMoe,
// called by every binary and by the tests' main) every test here fails.
#include "moe/moe_layer_type.h"

#include <gtest/gtest.h>

#include "core/model/job_identity.h"
#include "core/model/layer_registry.h"
#include "core/model/model.h"
#include "core/model/server_keys.h"
#include "tests/support/cluster_fixture.h"

namespace strata::moe {
namespace {

std::string Edited(const std::string& from, const std::string& to) {
  return strata::testing::EditedConfig(strata::testing::kConfig, from, to);
}

std::string ErrorOf(const std::string& text) { return strata::testing::ConfigError(text); }

TEST(MoeLayerTypeTest, IsRegistered) {
  ASSERT_NE(LayerRegistry::Global().Find("moe"), nullptr);
  RegisterMoe();  // a second call does nothing
  EXPECT_NE(LayerRegistry::Global().Find("moe"), nullptr);
}

TEST(MoeLayerTypeTest, TheMoeConfigBuildsAnMoeLayer) {
  auto config = LoadJobConfig(strata::testing::kMoeConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  const LayerSpec& moe = config->model.layers[8];
  EXPECT_EQ(moe.type, "moe");
  const MoeSpec& spec = MoeSpecOf(moe);
  EXPECT_EQ(spec.experts, 8);
  EXPECT_EQ(spec.top_k, 2);
  EXPECT_EQ(spec.hidden, 1024);
  EXPECT_FLOAT_EQ(spec.capacity_factor, 1.25f);
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

TEST(MoeLayerTypeTest, MoeFieldsAreCheckedByName) {
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

TEST(MoeLayerTypeTest, TheIdentityNamesTheMoeFields) {
  auto config = LoadJobConfig(strata::testing::kMoeConfig);
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string identity = JobIdentity(*config);
  JobConfig other = *config;
  std::any_cast<MoeSpec&>(other.model.layers[8].options).top_k = 1;
  EXPECT_NE(JobIdentity(other), identity);
  // The pipelining degree is a knob, not part of what the job computes.
  JobConfig chunks = *config;
  std::any_cast<MoeSpec&>(chunks.model.layers[8].options).pipeline_chunks = 4;
  EXPECT_EQ(JobIdentity(chunks), identity);
}

}  // namespace
}  // namespace strata::moe
