// The layers of docs/ARCHITECTURE.md, enforced: every CMake target links
// only targets of lower layers (from `cmake --graphviz` of a fresh
// configure), and every source file includes only headers of its own target
// or of lower layers. A new target or source folder must be placed in a
// layer here; an arrow that points up or sideways fails with its name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

// Layers bottom up. A target may link a target of a lower layer only; two
// targets of one layer never link each other.
const std::vector<std::vector<std::string>>& TargetLayers() {
  static const std::vector<std::vector<std::string>> layers = {
      {"strata_base", "strata_openmp"},
      {"strata_tensor", "strata_process", "strata_scheduler"},
      {"strata_layers", "strata_net", "strata_cuda"},
      {"strata_model"},
      {"strata_train", "strata_training_flags", "strata_cluster_flags"},
      {"strata_moe", "strata_secbad"},
      {"strata_moe_cuda", "strata_moe_group", "strata_runtime"},
      {"strata_worker_flags", "strata_server_lib", "strata_conv_workers", "strata_fc_workers"},
      {"strata_server", "strata_conv_worker", "strata_fc_worker", "strata_moe_member",
       "strata_netem", "strata_launch_roles"},
      {"strata_bench_lib", "strata_launch", "strata_ctl", "strata_keygen"},
      {"strata_bench"},
      {"strata_test_support", "strata_fuzz_support"},
      {"strata_test_main"},
  };
  return layers;
}

// The layer of a Strata target; test binaries sit on top. -1: not ours.
int TargetLayer(const std::string& target) {
  const auto& layers = TargetLayers();
  for (size_t l = 0; l < layers.size(); ++l) {
    for (const std::string& t : layers[l]) {
      if (t == target) return static_cast<int>(l);
    }
  }
  if (target.size() > 5 && target.compare(target.size() - 5, 5, "_test") == 0) {
    return static_cast<int>(layers.size());
  }
  return -1;
}

TEST(LayeringTest, EveryTargetLinksOnlyTargetsOfLowerLayers) {
  const std::string dir = ::testing::TempDir() + "/layering_graph";
  fs::remove_all(dir);
  auto [code, out] = testing::RunCommand("cmake -S " + std::string(STRATA_SOURCE_DIR) + " -B " +
                                         dir + " --graphviz=" + dir + "/targets.dot");
  ASSERT_EQ(code, 0) << out;
  std::ifstream dot(dir + "/targets.dot");
  ASSERT_TRUE(dot.good());
  // Each edge line ends in a comment naming both ends: "// from -> to".
  const std::regex edge(R"(// (\S+) -> (\S+)\s*$)");
  std::set<std::string> targets;
  int edges = 0;
  std::string line;
  while (std::getline(dot, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, edge)) continue;
    const std::string from = m[1], to = m[2];
    if (from == to || (from.rfind("strata_", 0) != 0 && TargetLayer(from) < 0)) continue;
    const int from_layer = TargetLayer(from), to_layer = TargetLayer(to);
    if (to.rfind("strata_", 0) != 0 && to_layer < 0) continue;  // a dependency of ours
    targets.insert(from);
    ++edges;
    EXPECT_GE(from_layer, 0) << from << " is in no layer of this test: place it";
    EXPECT_GE(to_layer, 0) << to << " is in no layer of this test: place it";
    EXPECT_LT(to_layer, from_layer)
        << from << " (layer " << from_layer << ") links " << to << " (layer " << to_layer
        << "): the arrow points up or sideways";
  }
  // The graph was read: the layers' targets are there, linking down.
  EXPECT_GT(edges, 30);
  for (const char* t :
       {"strata_net", "strata_model", "strata_moe", "strata_runtime", "strata_scheduler",
        "strata_conv_workers", "strata_fc_workers", "strata_server_lib"}) {
    EXPECT_EQ(targets.count(t), 1u) << t;
  }
  fs::remove_all(dir);
}

// Source folders (or single files) and the layer of their target. The
// longest matching prefix wins.
const std::vector<std::pair<std::string, int>>& SourceLayers() {
  static const std::vector<std::pair<std::string, int>> prefixes = {
      {"core/status.h", 0},
      {"core/util/", 0},
      {"core/util/subprocess.", 1},
      {"core/util/network_namespace.", 1},
      {"core/util/process_setup.", 1},
      {"core/tensor/", 1},
      {"scheduler/", 1},
      {"scheduler/secbad/", 5},
      {"core/ops/cpu/", 1},
      {"core/ops/backend.", 1},
      {"core/layers/", 2},
      {"core/optim/", 2},
      {"core/net/", 2},
      {"core/ops/cuda/", 2},
      {"core/model/", 3},
      {"core/flags/", 4},
      {"core/data/", 4},
      {"core/train/", 4},
      {"moe/", 5},
      {"moe/cuda/", 6},
      {"moe/group/", 6},
      {"moe/group/strata_moe_member.cc", 8},
      {"runtime/", 6},
      {"server/", 7},
      {"conv_workers/", 7},
      {"fc_workers/", 7},
      {"tools/netem/", 8},
      {"tools/launch/", 9},
      {"tools/bench/", 9},
      {"tools/ctl/", 9},
      {"tools/keygen/", 9},
      {"tests/", 14},
  };
  return prefixes;
}

// The matching prefix of `path` (its target's sources), or "".
std::string TargetOf(const std::string& path) {
  std::string best;
  for (const auto& [prefix, layer] : SourceLayers()) {
    if (path.rfind(prefix, 0) == 0 && prefix.size() > best.size()) best = prefix;
  }
  return best;
}

int SourceLayer(const std::string& prefix) {
  for (const auto& [p, layer] : SourceLayers()) {
    if (p == prefix) return layer;
  }
  return -1;
}

// Whether `prefix_a` and `prefix_b` are sources of the same target: the
// folders of one layer that one CMake target builds.
bool SameTarget(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::vector<std::set<std::string>> together = {
      {"core/status.h", "core/util/"},
      {"core/util/subprocess.", "core/util/network_namespace.", "core/util/process_setup."},
      {"core/tensor/", "core/ops/cpu/", "core/ops/backend."},
      {"core/layers/", "core/optim/"},
      {"core/data/", "core/train/"},
  };
  for (const auto& group : together) {
    if (group.count(a) != 0 && group.count(b) != 0) return true;
  }
  return false;
}

TEST(LayeringTest, EveryIncludePointsToItsOwnTargetOrALowerLayer) {
  const fs::path root(STRATA_SOURCE_DIR);
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  int files = 0;
  for (const char* top : {"core", "scheduler", "moe", "runtime", "server", "conv_workers",
                          "fc_workers", "tools", "tests"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cu") continue;
      const std::string path = fs::relative(entry.path(), root).string();
      const std::string own = TargetOf(path);
      ASSERT_FALSE(own.empty()) << path << " is in no layer of this test: place its folder";
      ++files;
      std::ifstream in(entry.path());
      std::string line;
      while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string header = m[1];
        const std::string theirs = TargetOf(header);
        if (theirs.empty()) continue;  // generated, or another project's
        EXPECT_TRUE(SameTarget(own, theirs) || SourceLayer(theirs) < SourceLayer(own))
            << path << " (layer " << SourceLayer(own) << ") includes " << header << " (layer "
            << SourceLayer(theirs) << "): the arrow points up or sideways";
      }
    }
  }
  EXPECT_GT(files, 100);
}

}  // namespace
}  // namespace strata
