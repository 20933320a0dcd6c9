#include "core/net/traffic.h"

#include <cstdio>

namespace strata {

PeerKind PeerKindOf(wire::Role role) {
  switch (role) {
    case wire::Role::SERVER:
      return PeerKind::kServer;
    case wire::Role::FC_WORKER:
      return PeerKind::kFc;
    default:
      return PeerKind::kConv;
  }
}

const char* PeerKindName(PeerKind kind) {
  switch (kind) {
    case PeerKind::kServer:
      return "server";
    case PeerKind::kConv:
      return "conv";
    case PeerKind::kFc:
      return "fc";
  }
  return "?";
}

nlohmann::json TrafficReport::ToJson() const {
  nlohmann::json j = {{"process", process}, {"steps", steps}};
  for (int k = 0; k < 3; ++k) {
    const char* name = PeerKindName(static_cast<PeerKind>(k));
    j["sent"][name] = sent[k];
    j["received"][name] = received[k];
  }
  if (times.iterations > 0) {
    j["times"] = {{"iterations", times.iterations},
                  {"compute", times.compute},
                  {"network", times.network},
                  {"wall", times.wall}};
  }
  return j;
}

void TrafficReport::Print() const {
  std::printf("%s%s\n", kTrafficLinePrefix, ToJson().dump().c_str());
  std::fflush(stdout);
}

}  // namespace strata
