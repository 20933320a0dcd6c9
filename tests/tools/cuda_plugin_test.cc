// The CUDA backend's plugin as strata_launch loads it (core/ops/cuda_plugin.h):
// the program resolves the plugin's every symbol; cuBLAS and cuDNN come
// from STRATA_CUDA_LIBRARY_PATH or python3's NVIDIA wheels by their full
// paths, and a folder without them, a wheel of another major version, a
// file that is no library and a missing plugin each stop the run before
// training with a message naming what was looked for. Each case is its own
// process: a program loads the plugin once.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/util/scratch_directory.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

#ifdef STRATA_BUILT_CUDNN_VERSION
constexpr bool kBuiltWithCuda = true;
constexpr char kBuiltCudnn[] = STRATA_BUILT_CUDNN_VERSION;
// The folders the build found cuBLAS and cuDNN in.
constexpr char kCublasFolder[] = STRATA_CUBLAS_FOLDER;
constexpr char kCudnnFolder[] = STRATA_CUDNN_FOLDER;
#else
constexpr bool kBuiltWithCuda = false;
constexpr char kBuiltCudnn[] = "";
constexpr char kCublasFolder[] = "";
constexpr char kCudnnFolder[] = "";
#endif

// The major version in "9.19.0".
std::string Major(const std::string& version) { return version.substr(0, version.find('.')); }

class CudaPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kBuiltWithCuda) GTEST_SKIP() << "this build has no CUDA backend (no nvcc at configure)";
    auto dir = ScratchDirectory::Make("strata_cuda_plugin");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
  }

  // strata_launch asked for a GPU for one step, with `environment`
  // ("NAME=value ...") set.
  testing::LaunchResult RunOnGpu(const std::string& environment) {
    return testing::RunLaunch("--config " + std::string(STRATA_SOURCE_DIR) +
                                  "/configs/fashion_mnist.json --mode single --device cuda "
                                  "--max-steps 1 --threads 1 --progress=false --evaluate=false",
                              environment);
  }

  std::string Folder(const std::string& name) {
    const std::string folder = dir_->path() + "/" + name;
    fs::create_directories(folder);
    return folder;
  }

  // Links in `folder` to the cuBLAS and cuDNN files the build was made
  // with (libcudnn.so.N alone with `cudnn_parts` false), as a wheel holds
  // them.
  void LinkBuildLibraries(const std::string& folder, bool cudnn_parts = true) {
    const std::string cublas_major = Major(STRATA_BUILT_CUBLAS_VERSION);
    const std::string cudnn_major = Major(kBuiltCudnn);
    for (const char* from : {kCublasFolder, kCudnnFolder}) {
      for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
        const std::string name = entry.path().filename().string();
        const bool cublas =
            name.rfind("libcublas", 0) == 0 && name.size() > 3 &&
            name.substr(name.size() - cublas_major.size() - 4) == ".so." + cublas_major;
        const bool cudnn =
            name.rfind("libcudnn", 0) == 0 &&
            name.substr(name.size() - cudnn_major.size() - 4) == ".so." + cudnn_major &&
            (cudnn_parts || name == "libcudnn.so." + cudnn_major);
        if ((cublas || cudnn) && !fs::exists(folder + "/" + name)) {
          fs::create_symlink(entry.path(), folder + "/" + name);
        }
      }
    }
  }

  // A python3 in its own folder that answers the wheel probe with
  // `listing`; the PATH setting that puts it first.
  std::string FakePython(const std::string& listing) {
    const std::string bin = Folder("bin");
    const std::string python = bin + "/python3";
    std::ofstream(python) << "#!/bin/sh\ncat <<'LISTING'\n" << listing << "LISTING\n";
    chmod(python.c_str(), 0755);
    return "PATH=" + bin + ":" + std::string(std::getenv("PATH"));
  }

  std::optional<ScratchDirectory> dir_;
};

constexpr char kPrefix[] = "device cuda:0 asked for, but ";

// What a run on this machine ends with once the plugin and its libraries
// loaded: the GPU is used where there is one, and named as absent here.
void ExpectLoaded(const testing::LaunchResult& run) {
  if (run.exit_code == 0) return;  // a GPU trained the step
  EXPECT_NE(run.output.find(std::string(kPrefix) + "no CUDA device is visible to this process ("),
            std::string::npos)
      << run.output;
}

TEST_F(CudaPluginTest, TheProgramResolvesEveryPluginSymbol) { ExpectLoaded(RunOnGpu("")); }

TEST_F(CudaPluginTest, AMissingPluginIsNamed) {
  const auto run = RunOnGpu("STRATA_CUDA_PLUGIN=/nonexistent/libstrata_cuda.so");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find(std::string(kPrefix) +
                            "the CUDA backend's plugin /nonexistent/libstrata_cuda.so is missing"),
            std::string::npos)
      << run.output;
}

TEST_F(CudaPluginTest, TheLibraryPathIsUsedAndAFolderWithoutTheLibrariesIsNamed) {
  const std::string empty = Folder("empty");
  const auto missing = RunOnGpu("STRATA_CUDA_LIBRARY_PATH=" + empty);
  EXPECT_EQ(missing.exit_code, 1);
  const std::string cublas_major = Major(STRATA_BUILT_CUBLAS_VERSION);
  EXPECT_NE(
      missing.output.find(std::string(kPrefix) + "cuBLAS " + cublas_major + " (libcublasLt.so." +
                          cublas_major + ") is not in STRATA_CUDA_LIBRARY_PATH (" + empty + ")"),
      std::string::npos)
      << missing.output;

  const std::string libraries = Folder("libraries");
  LinkBuildLibraries(libraries);
  ExpectLoaded(RunOnGpu("STRATA_CUDA_LIBRARY_PATH=" + empty + ":" + libraries));

  // cuDNN without its parts beside it: named, before cuDNN could abort.
  const std::string lone = Folder("lone_cudnn");
  LinkBuildLibraries(lone, /*cudnn_parts=*/false);
  const auto partless = RunOnGpu("STRATA_CUDA_LIBRARY_PATH=" + lone);
  EXPECT_EQ(partless.exit_code, 1);
  const std::string cudnn_major = Major(kBuiltCudnn);
  EXPECT_NE(
      partless.output.find(std::string(kPrefix) + "cuDNN " + cudnn_major + " at " + lone +
                           "/libcudnn.so." + cudnn_major + " (STRATA_CUDA_LIBRARY_PATH's " + lone +
                           ") lacks libcudnn_graph.so." + cudnn_major + ", libcudnn_ops.so." +
                           cudnn_major + ", libcudnn_cnn.so." + cudnn_major + " beside it"),
      std::string::npos)
      << partless.output;
}

TEST_F(CudaPluginTest, AWheelOfAnotherMajorVersionIsRefusedNamingBoth) {
  const std::string wheels = Folder("wheels");
  LinkBuildLibraries(wheels);
  const std::string old_cudnn = wheels + "/libcudnn.so.8";
  std::ofstream(old_cudnn) << "not loaded";
  const std::string cublas = STRATA_BUILT_CUBLAS_VERSION;
  const std::string listing = "nvidia-cublas " + cublas + " " + wheels + "/libcublasLt.so." +
                              Major(cublas) + "\n" + "nvidia-cublas " + cublas + " " + wheels +
                              "/libcublas.so." + Major(cublas) + "\n" +
                              "nvidia-cudnn-cu12 8.9.7.29 " + old_cudnn + "\n";
  const auto run = RunOnGpu(FakePython(listing));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find(std::string(kPrefix) + "cuDNN: python3's nvidia-cudnn-cu12 8.9.7.29 (" +
                            old_cudnn +
                            ") has major version 8, but Strata's CUDA backend was built with "
                            "cuDNN " +
                            kBuiltCudnn + " and needs libcudnn.so." + Major(kBuiltCudnn)),
            std::string::npos)
      << run.output;
}

TEST_F(CudaPluginTest, TheWheelsLibrariesAreLoadedByTheirPaths) {
  const std::string wheels = Folder("wheels");
  LinkBuildLibraries(wheels);
  const std::string cublas = STRATA_BUILT_CUBLAS_VERSION;
  const std::string cudnn = wheels + "/libcudnn.so." + Major(kBuiltCudnn);
  const std::string listing = "nvidia-cublas " + cublas + " " + wheels + "/libcublasLt.so." +
                              Major(cublas) + "\n" + "nvidia-cublas " + cublas + " " + wheels +
                              "/libcublas.so." + Major(cublas) + "\n" + "nvidia-cudnn-cu13 " +
                              kBuiltCudnn + ".1 " + cudnn + "\n";
  ExpectLoaded(RunOnGpu(FakePython(listing)));

  // The same listing with a cuDNN that is no library: the file the wheel
  // named is the one loaded.
  fs::remove(cudnn);
  std::ofstream(cudnn) << "not a library";
  const auto run = RunOnGpu(FakePython(listing));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find(std::string(kPrefix) + "could not load " + cudnn +
                            " (python3's nvidia-cudnn-cu13 " + kBuiltCudnn + ".1): "),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace strata
