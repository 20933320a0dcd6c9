#include "tools/bench/harness/contender_environment.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/process/subprocess.h"

namespace strata::bench {

absl::StatusOr<nlohmann::json> ReadContenderResult(const std::string& path,
                                                   const std::string& field,
                                                   const std::string& label,
                                                   const std::string& log) {
  std::ifstream in(path);
  nlohmann::json result = nlohmann::json::parse(in, nullptr, false);
  if (!result.is_object() || !result.contains(field)) {
    return absl::InternalError(absl::StrCat(label, " wrote no result to ", path,
                                            "; the end of its output:\n", FileTail(log, 2000)));
  }
  return result;
}

const std::vector<std::string>& UnsetForBenchmarks() {
  static const std::vector<std::string> names = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
  return names;
}

std::vector<std::pair<std::string, std::string>> PeerEnvironment(int threads) {
  const std::string t = std::to_string(threads);
  return {{"OMP_NUM_THREADS", t},
          {"OPENBLAS_NUM_THREADS", t},
          {"GLIBC_TUNABLES",
           "glibc.malloc.mmap_threshold=1000000000:glibc.malloc.trim_threshold=4000000000"},
          {"PYTHONUNBUFFERED", "1"}};
}

bool PythonHasTorch(const std::string& python, const std::string& scratch) {
  ProcessSpec probe;
  probe.argv = {python, "-c", "import torch, numpy"};
  probe.output_path = scratch + "/torch_probe.log";
  absl::StatusOr<int> code = RunProcess(probe, absl::Minutes(2));
  return code.ok() && *code == 0;
}

std::string BinaryDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string SourceDir() {
  const std::string installed = BinaryDir() + "/..";
  std::error_code error;
  if (std::filesystem::exists(installed + "/tools/bench/peers", error)) return installed;
  return STRATA_SOURCE_DIR;
}

}  // namespace strata::bench
