// Every shell script of the project passes shellcheck (installed by
// tools/setup.sh): the setup, the fresh-machine check and the cluster
// scripts under tools/cloud.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

// Files under tools/ that are shell scripts: *.sh, *.sbatch, or a bash
// shebang.
std::vector<std::string> ShellScripts() {
  std::vector<std::string> out;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(STRATA_SOURCE_DIR) + "/tools")) {
    if (!entry.is_regular_file()) continue;
    const std::string path = entry.path().string();
    const std::string ext = entry.path().extension().string();
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    if (ext == ".sh" || ext == ".sbatch" || first.rfind("#!/usr/bin/env bash", 0) == 0 ||
        first.rfind("#!/bin/bash", 0) == 0 || first.rfind("#!/bin/sh", 0) == 0) {
      out.push_back(path);
    }
  }
  return out;
}

TEST(ScriptsTest, EveryShellScriptPassesShellcheck) {
  const std::vector<std::string> scripts = ShellScripts();
  ASSERT_GE(scripts.size(), 4u);  // setup, fresh check, the Slurm scripts at least
  for (const std::string& script : scripts) {
    const auto [code, out] = testing::RunCommand("shellcheck --external-sources " + script);
    EXPECT_EQ(code, 0) << script << "\n" << out;
  }
}

}  // namespace
}  // namespace strata
