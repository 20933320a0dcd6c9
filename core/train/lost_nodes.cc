#include "core/train/lost_nodes.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/json_file.h"

namespace strata {

absl::Status RecordLostNode(const std::string& path, const LostNode& node) {
  STRATA_ASSIGN_OR_RETURN(std::vector<LostNode> nodes, ReadLostNodes(path));
  nodes.push_back(node);
  nlohmann::json lost = nlohmann::json::array();
  for (const LostNode& n : nodes) {
    lost.push_back({{"job", n.job}, {"role", n.role}, {"rank", n.rank}, {"why", n.why}});
  }
  return WriteJsonFile(path, {{"lost", lost}});
}

absl::StatusOr<std::vector<LostNode>> ReadLostNodes(const std::string& path) {
  std::vector<LostNode> nodes;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return nodes;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  const auto bad = [&path](const std::string& what) {
    return absl::DataLossError(absl::StrCat(path, ": not a record of lost nodes (", what, ")"));
  };
  if (!j.is_object() || !j.contains("lost") || !j["lost"].is_array()) {
    return bad("no \"lost\" list");
  }
  for (const nlohmann::json& e : j["lost"]) {
    if (!e.is_object() || !e.contains("job") || !e["job"].is_number_unsigned() ||
        !e.contains("role") || !e["role"].is_string() || !e.contains("rank") ||
        !e["rank"].is_number_integer() || !e.contains("why") || !e["why"].is_string()) {
      return bad(absl::StrCat("entry ", nodes.size(), " lacks job, role, rank or why"));
    }
    nodes.push_back({e["job"].get<uint64_t>(), e["role"].get<std::string>(),
                     e["rank"].get<int>(), e["why"].get<std::string>()});
  }
  return nodes;
}

}  // namespace strata
