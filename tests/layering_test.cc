// The layers of docs/ARCHITECTURE.md, enforced. Every source folder is one
// layer: its CMakeLists.txt says which with strata_layer(N), and a folder
// without a CMakeLists.txt of its own belongs to the nearest one above it
// that has (together they are one unit). A file includes only headers of
// its own unit or of units of lower layers; a target depends only on
// targets of its own folder or of lower layers (from `cmake --graphviz` of a
// fresh configure: links, and a tool's build-order dependency on a program
// it starts); nothing in core/ names anything outside it. A new folder
// declares its layer where its targets are defined; no table here changes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Skipped(const std::string& name) {
  return name.empty() || name[0] == '.' || name.rfind("build", 0) == 0;
}

// The source tree's units: each folder that declares its layer, and the
// targets its CMakeLists.txt defines.
class Units {
 public:
  explicit Units(const fs::path& root) {
    const std::regex layer(R"(^\s*strata_layer\((\d+)\))");
    const std::regex target(
        R"(^\s*(?:add_library|add_executable|strata_test)\(\s*([A-Za-z0-9_]+)(\$\{)?)");
    for (auto it = fs::recursive_directory_iterator(root); it != fs::end(it); ++it) {
      if (it->is_directory() && Skipped(it->path().filename().string())) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->path().filename() != "CMakeLists.txt") continue;
      const std::string folder = fs::relative(it->path().parent_path(), root).string();
      std::istringstream text(ReadAll(it->path()));
      std::string line;
      std::vector<std::string> targets;
      while (std::getline(text, line)) {
        std::smatch m;
        if (std::regex_search(line, m, layer)) layers_[folder] = std::stoi(m[1]);
        // "fuzz_${name}": every target whose name begins "fuzz_".
        if (std::regex_search(line, m, target)) {
          targets.push_back(m[1].str() + (m[2].matched ? "*" : ""));
        }
      }
      for (const std::string& t : targets) target_folders_[t] = folder;
    }
  }

  const std::map<std::string, int>& layers() const { return layers_; }

  // The unit (declaring folder) a repository path belongs to; "" for none.
  std::string UnitOf(const std::string& path) const {
    for (fs::path folder = fs::path(path).parent_path(); !folder.empty();
         folder = folder.parent_path()) {
      if (layers_.count(folder.string()) != 0) return folder.string();
    }
    return "";
  }
  int Layer(const std::string& unit) const { return layers_.at(unit); }

  // The unit whose CMakeLists.txt defines `target`; "" for none of ours.
  std::string UnitOfTarget(const std::string& target) const {
    for (const auto& [name, folder] : target_folders_) {
      const bool pattern = name.back() == '*';
      if (pattern ? target.rfind(name.substr(0, name.size() - 1), 0) == 0 : target == name) {
        return layers_.count(folder) != 0 ? folder : UnitOf(folder + "/CMakeLists.txt");
      }
    }
    return "";
  }

 private:
  std::map<std::string, int> layers_;
  std::map<std::string, std::string> target_folders_;
};

const Units& TheUnits() {
  static const Units units{fs::path(STRATA_SOURCE_DIR)};
  return units;
}

TEST(LayeringTest, TheFoldersDeclareTheirLayers) {
  const Units& units = TheUnits();
  EXPECT_GT(units.layers().size(), 20u);
  // Spot checks of the order docs/ARCHITECTURE.md draws.
  for (const auto& [lower, higher] :
       std::vector<std::pair<std::string, std::string>>{{"core/util", "core/tensor"},
                                                        {"core/control", "core/net"},
                                                        {"core/ops/cpu", "core/ops"},
                                                        {"core/layers", "core/optim"},
                                                        {"core/data", "core/train"},
                                                        {"core/net", "runtime"},
                                                        {"scheduler", "runtime"},
                                                        {"moe", "fc_workers"},
                                                        {"runtime", "flags"},
                                                        {"flags", "programs"}}) {
    ASSERT_EQ(units.layers().count(lower), 1u) << lower;
    ASSERT_EQ(units.layers().count(higher), 1u) << higher;
    EXPECT_LT(units.Layer(lower), units.Layer(higher)) << lower << " below " << higher;
  }
}

TEST(LayeringTest, EveryIncludePointsToItsOwnUnitOrALowerLayer) {
  const fs::path root(STRATA_SOURCE_DIR);
  const Units& units = TheUnits();
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::end(it); ++it) {
    if (it->is_directory() && Skipped(it->path().filename().string())) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (ext != ".h" && ext != ".cc" && ext != ".cu") continue;
    const std::string path = fs::relative(it->path(), root).string();
    const std::string own = units.UnitOf(path);
    ASSERT_FALSE(own.empty()) << path << " is in no folder that declares its layer";
    ++files;
    std::istringstream text(ReadAll(it->path()));
    std::string line;
    while (std::getline(text, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string header = m[1];
      // Another project's ("absl/...", "gtest/..."): its first folder is none of ours.
      const std::string top = header.substr(0, header.find('/'));
      if (header.find('/') == std::string::npos || !fs::is_directory(root / top)) continue;
      const std::string theirs = units.UnitOf(header);
      ASSERT_FALSE(theirs.empty()) << path << " includes " << header << ", in no declared folder";
      if (own.rfind("core", 0) == 0) {
        EXPECT_EQ(theirs.rfind("core", 0), 0u)
            << path << " includes " << header << ": core names nothing outside core";
      }
      EXPECT_TRUE(theirs == own || units.Layer(theirs) < units.Layer(own))
          << path << " (" << own << ", layer " << units.Layer(own) << ") includes " << header
          << " (" << theirs << ", layer " << units.Layer(theirs)
          << "): the arrow points up or sideways";
    }
  }
  EXPECT_GT(files, 300);
}

TEST(LayeringTest, EveryTargetLinksOnlyTargetsOfItsFolderOrLowerLayers) {
  const Units& units = TheUnits();
  const std::string dir = ::testing::TempDir() + "/layering_graph";
  fs::remove_all(dir);
  auto [code, out] = testing::RunCommand("cmake -S " + std::string(STRATA_SOURCE_DIR) + " -B " +
                                         dir + " --graphviz=" + dir + "/targets.dot");
  ASSERT_EQ(code, 0) << out;
  std::ifstream dot(dir + "/targets.dot");
  ASSERT_TRUE(dot.good());
  // Each edge line ends in a comment naming both ends: "// from -> to".
  const std::regex edge(R"(// (\S+) -> (\S+)\s*$)");
  std::set<std::string> linking;
  int edges = 0;
  std::string line;
  while (std::getline(dot, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, edge)) continue;
    const std::string from = m[1], to = m[2];
    const std::string from_unit = units.UnitOfTarget(from), to_unit = units.UnitOfTarget(to);
    if (from == to || to_unit.empty()) continue;  // a dependency of ours
    ASSERT_FALSE(from_unit.empty()) << from << " links " << to << " but is defined nowhere";
    linking.insert(from);
    ++edges;
    EXPECT_TRUE(from_unit == to_unit || units.Layer(to_unit) < units.Layer(from_unit))
        << from << " (" << from_unit << ", layer " << units.Layer(from_unit) << ") links " << to
        << " (" << to_unit << ", layer " << units.Layer(to_unit)
        << "): the arrow points up or sideways";
  }
  // The graph was read: the layers' targets are there, linking down.
  EXPECT_GT(edges, 30);
  for (const char* t :
       {"strata_net", "strata_model", "strata_moe", "strata_runtime", "strata_scheduler",
        "strata_conv_workers", "strata_fc_workers", "strata_server_lib", "strata_flags"}) {
    EXPECT_EQ(linking.count(t), 1u) << t;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace strata
