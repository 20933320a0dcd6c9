#include "core/net/message_type.h"

#include <cctype>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace strata {

namespace {

struct Service {
  std::string name;
  std::vector<std::string> kinds;  // by kind number
};

// "pullReply" -> "pull-reply".
std::string Words(absl::string_view camel) {
  std::string out;
  for (char c : camel) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      out += '-';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

Service ServiceFrom(absl::string_view name, capnp::EnumSchema kinds) {
  Service s{std::string(name), {}};
  for (auto e : kinds.getEnumerants()) {
    const uint16_t kind = e.getOrdinal();
    if (s.kinds.size() <= kind) s.kinds.resize(kind + 1);
    s.kinds[kind] = Words(e.getProto().getName().cStr());
  }
  return s;
}

class ServiceTable {
 public:
  static ServiceTable& Get() {
    static ServiceTable* table = new ServiceTable();
    return *table;
  }
  absl::Status Add(uint16_t id, absl::string_view name, capnp::EnumSchema kinds) {
    absl::MutexLock lock(&mu_);
    if (id == 0) return absl::InvalidArgumentError("service 0 is the envelope's control");
    auto it = services_.find(id);
    if (it != services_.end() && it->second.name != name) {
      return absl::InvalidArgumentError(absl::StrCat("service ", id, " is ", it->second.name,
                                                     "'s; ", name, " needs an id of its own"));
    }
    services_[id] = ServiceFrom(name, kinds);
    return absl::OkStatus();
  }
  // The name of `type`'s kind, or "" (and *service the service's name, or "").
  std::string Name(MessageType type, std::string* service) const {
    absl::MutexLock lock(&mu_);
    auto it = services_.find(type.service());
    if (it == services_.end()) return "";
    *service = it->second.name;
    return type.kind() < it->second.kinds.size() ? it->second.kinds[type.kind()] : "";
  }
  std::optional<MessageType> Named(absl::string_view name) const {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, service] : services_) {
      for (size_t k = 0; k < service.kinds.size(); ++k) {
        if (!service.kinds[k].empty() && service.kinds[k] == name) {
          return MessageType(id, static_cast<uint16_t>(k));
        }
      }
    }
    return std::nullopt;
  }

 private:
  ServiceTable() { services_[0] = ServiceFrom("control", capnp::Schema::from<wire::Kind>()); }
  mutable absl::Mutex mu_;
  std::map<uint16_t, Service> services_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

MessageType TypeOf(wire::Header::Reader header) {
  return MessageType(header.getService(), header.getKind());
}

void SetType(wire::Header::Builder header, MessageType type) {
  header.setService(type.service());
  header.setKind(type.kind());
}

absl::Status RegisterService(uint16_t id, absl::string_view name, capnp::EnumSchema kinds) {
  return ServiceTable::Get().Add(id, name, kinds);
}

std::string KindName(MessageType type) {
  std::string service;
  std::string name = ServiceTable::Get().Name(type, &service);
  if (!name.empty()) return name;
  if (service.empty()) return absl::StrCat("service ", type.service(), " kind ", type.kind());
  return absl::StrCat(service, " kind ", type.kind());
}

std::optional<MessageType> KindNamed(absl::string_view name) {
  return ServiceTable::Get().Named(name);
}

std::ostream& operator<<(std::ostream& out, MessageType type) { return out << KindName(type); }

}  // namespace strata
