// The main() of every test binary: registers the layer types a job config
// may name, as each Strata binary does, refuses a STRATA_TEST_REQUIRE that
// names no requirement, then runs the tests.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "startup/program_startup.h"
#include "tests/support/requirements.h"

int main(int argc, char** argv) {
  strata::RegisterModules();
  ::testing::InitGoogleTest(&argc, argv);
  if (const auto unknown = strata::testing::UnknownRequirements(); !unknown.empty()) {
    std::cerr << "STRATA_TEST_REQUIRE names \"" << unknown.front()
              << "\", which is not a requirement; the requirements are:\n";
    for (const auto& r : strata::testing::kTestRequirements) {
      std::cerr << "  " << r.name << ": " << r.meaning << "\n";
    }
    return 2;
  }
  return RUN_ALL_TESTS();
}
