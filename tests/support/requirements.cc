#include "tests/support/requirements.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace strata::testing {

const std::vector<TestRequirement> kTestRequirements = {
    {"root", "running as root (Slurm daemons, lanes of another user)"},
    {"netns", "network namespaces with emulated links can be made"},
    {"cpu-limits", "strata_launch can limit processes' CPU (cgroups)"},
    {"torch", "/usr/bin/python3 imports torch and torchvision (the peers)"},
    {"ipv6", "an IPv6 loopback to listen on"},
    {"cuda", "a CUDA device"},
};

namespace {

std::vector<std::string> ListedRequirements() {
  const char* listed = std::getenv("STRATA_TEST_REQUIRE");
  std::vector<std::string> names;
  if (listed == nullptr) return names;
  for (absl::string_view name : absl::StrSplit(listed, ',', absl::SkipWhitespace())) {
    names.emplace_back(absl::StripAsciiWhitespace(name));
  }
  return names;
}

bool IsKnown(std::string_view name) {
  return std::any_of(kTestRequirements.begin(), kTestRequirements.end(),
                     [&](const TestRequirement& r) { return r.name == name; });
}

}  // namespace

bool IsRequired(std::string_view requirement) {
  const std::vector<std::string> listed = ListedRequirements();
  return std::find(listed.begin(), listed.end(), requirement) != listed.end();
}

std::vector<std::string> UnknownRequirements() {
  std::vector<std::string> unknown;
  for (const std::string& name : ListedRequirements()) {
    if (!IsKnown(name)) unknown.push_back(name);
  }
  return unknown;
}

::testing::TestPartResult::Type OutcomeWithout(std::string_view requirement) {
  return IsKnown(requirement) && !IsRequired(requirement)
             ? ::testing::TestPartResult::kSkip
             : ::testing::TestPartResult::kFatalFailure;
}

std::string MissingRequirementMessage(std::string_view requirement) {
  if (!IsKnown(requirement)) {
    return "the test names an unknown requirement \"" + std::string(requirement) + "\"";
  }
  if (IsRequired(requirement)) {
    return "STRATA_TEST_REQUIRE lists \"" + std::string(requirement) +
           "\" but this machine lacks it";
  }
  return "skipped: this machine lacks \"" + std::string(requirement) + "\"";
}

}  // namespace strata::testing
