// What every benchmark's contenders share: the environment each runs in,
// its result file, and where the tool's files are.
#ifndef STRATA_TOOLS_BENCH_HARNESS_CONTENDER_ENVIRONMENT_H_
#define STRATA_TOOLS_BENCH_HARNESS_CONTENDER_ENVIRONMENT_H_

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace strata::bench {

// Variables unset for every contender: on these machines they force slow
// OpenBLAS kernels that a user's machine would not have.
const std::vector<std::string>& UnsetForBenchmarks();

// The environment that gives a PyTorch/NumPy peer its best speed with
// `threads` threads (one thread pool each, no thread oversubscription).
std::vector<std::pair<std::string, std::string>> PeerEnvironment(int threads);

// Whether `python` can import torch and numpy (the PyTorch peers' needs);
// `scratch` is a directory for the probe's output.
bool PythonHasTorch(const std::string& python, const std::string& scratch);

// How long one run of a contender (a process, or a launch of a cluster)
// may take before it counts as hung and is stopped.
inline constexpr absl::Duration kContenderRunTimeout = absl::Minutes(30);

// The JSON object a contender wrote to `path`, which must hold `field`;
// else Internal naming `label`, the path, and the end of its log `log`.
absl::StatusOr<nlohmann::json> ReadContenderResult(const std::string& path,
                                                   const std::string& field,
                                                   const std::string& label,
                                                   const std::string& log);

// Directory of the running strata_bench binary (to find strata_launch).
std::string BinaryDir();
// Where Strata's shipped files are (configs/, tools/bench/peers/): the
// folder above bin/ in an installation or a bundle, which holds them;
// otherwise the source directory of the build.
std::string SourceDir();

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_CONTENDER_ENVIRONMENT_H_
