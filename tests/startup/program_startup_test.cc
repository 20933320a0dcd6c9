// RegisterModules (startup/program_startup.h): every module's knobs and
// layer types are known after it, and a second call changes nothing.
#include "startup/program_startup.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/control/knobs.h"
#include "core/model/layer_registry.h"

namespace strata {
namespace {

TEST(ProgramStartupTest, EveryModuleRegistersItsKnobsOnce) {
  RegisterModules();  // the test main has called it already: nothing changes
  EXPECT_EQ(KnobCatalog::Global().names(),
            (std::vector<std::string>{"batch.shares", "device.sharing", "fc.batching",
                                      "moe.parallelism", "moe.pipeline_chunks", "wire.format"}));
  // Each keeps its own validator.
  EXPECT_TRUE(KnobCatalog::Global().Validate("wire.format", "bf16").ok());
  EXPECT_EQ(KnobCatalog::Global().Validate("wire.format", "fp16").message(),
            "wire.format=fp16: the wire formats are fp32 and bf16");
  EXPECT_EQ(KnobCatalog::Global().Validate("device.sharing", "turns").message(),
            "device.sharing=turns: device sharing is crossover or naive");
  EXPECT_FALSE(KnobCatalog::Global().Validate("fc.batching", "sometimes").ok());
  EXPECT_TRUE(KnobCatalog::Global().ValidateForJob("batch.shares", "1:1", "3:1").ok());
  EXPECT_EQ(KnobCatalog::Global().ValidateForJob("batch.shares", "1:1", "3:1:1").message(),
            "batch.shares=3:1:1: the job has 2 conv workers; give one weight each");
}

TEST(ProgramStartupTest, TheMoeLayerTypeIsRegistered) {
  EXPECT_NE(LayerRegistry::Global().Find("moe"), nullptr);
}

}  // namespace
}  // namespace strata
