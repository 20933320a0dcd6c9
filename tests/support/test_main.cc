// The main() of every test binary: registers the layer types a job config
// may name, as each Strata binary does, then runs the tests.
#include <gtest/gtest.h>

#include "moe/moe_layer_type.h"

int main(int argc, char** argv) {
  strata::moe::RegisterMoe();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
