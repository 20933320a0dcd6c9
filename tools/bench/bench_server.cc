#include "tools/bench/bench_server.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/ready_file.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {

absl::StatusOr<std::unique_ptr<BenchServer>> BenchServer::Start(
    const std::vector<std::string>& flags) {
  STRATA_ASSIGN_OR_RETURN(ScratchDirectory dir, ScratchDirectory::Make("strata_bench_server"));
  auto server = std::unique_ptr<BenchServer>(new BenchServer(std::move(dir)));
  const std::string ready = server->dir_.path() + "/ready.json";
  ProcessSpec spec;
  spec.argv = {BinaryDir() + "/strata_server"};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.insert(spec.argv.end(), {"--ready-file", ready});
  spec.output_path = server->dir_.path() + "/server.log";
  spec.die_with_parent = true;
  STRATA_ASSIGN_OR_RETURN(server->process_, ChildProcess::Start(spec));
  absl::StatusOr<nlohmann::json> serving = AwaitReadyFile(
      ready, "the benchmark server", absl::Seconds(10), [&]() -> std::optional<std::string> {
        if (!server->process_->Poll().has_value()) return std::nullopt;
        return absl::StrCat("exited: ", server->log());
      });
  STRATA_RETURN_IF_ERROR(serving.status());
  server->address_ = (*serving)["address"].get<std::string>();
  return server;
}

BenchServer::~BenchServer() = default;

std::string BenchServer::log() const {
  std::ifstream in(dir_.path() + "/server.log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace strata::bench
