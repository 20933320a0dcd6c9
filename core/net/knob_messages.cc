#include "core/net/knob_messages.h"

namespace strata {
namespace {

std::string Text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

}  // namespace

void SetKnobChanges(wire::Header::Builder header, const std::vector<KnobChange>& changes) {
  auto list = header.initKnobs(static_cast<unsigned>(changes.size()));
  for (unsigned i = 0; i < changes.size(); ++i) {
    list[i].setName(changes[i].name);
    list[i].setValue(changes[i].value);
    list[i].setFromIteration(changes[i].from_iteration);
  }
}

std::vector<KnobChange> KnobChangesOf(wire::Header::Reader header) {
  std::vector<KnobChange> out;
  for (const auto k : header.getKnobs()) {
    out.push_back({Text(k.getName()), Text(k.getValue()), k.getFromIteration()});
  }
  return out;
}

void SetDeclaredKnobs(wire::Header::Builder header,
                      const std::map<std::string, std::string>& declared) {
  std::vector<KnobChange> changes;
  for (const auto& [name, value] : declared) changes.push_back({name, value, 0});
  SetKnobChanges(header, changes);
}

std::map<std::string, std::string> DeclaredKnobsOf(wire::Header::Reader header) {
  std::map<std::string, std::string> out;
  for (const KnobChange& c : KnobChangesOf(header)) out[c.name] = c.value;
  return out;
}

void SetKnobProposals(wire::Header::Builder header, const std::vector<KnobProposal>& proposals) {
  std::vector<KnobChange> changes;
  for (const KnobProposal& p : proposals) changes.push_back({p.name, p.value, 0});
  SetKnobChanges(header, changes);
}

std::vector<KnobProposal> KnobProposalsOf(wire::Header::Reader header) {
  std::vector<KnobProposal> out;
  for (const KnobChange& c : KnobChangesOf(header)) out.push_back({c.name, c.value});
  return out;
}

void SetKnobStates(wire::Header::Builder header, const std::vector<KnobState>& states) {
  auto list = header.initKnobs(static_cast<unsigned>(states.size()));
  for (unsigned i = 0; i < states.size(); ++i) {
    list[i].setName(states[i].name);
    list[i].setValue(states[i].value);
    list[i].setFromIteration(states[i].since);
    list[i].setAltersMath(states[i].alters_math);
  }
}

std::vector<KnobState> KnobStatesOf(wire::Header::Reader header) {
  std::vector<KnobState> out;
  for (const auto k : header.getKnobs()) {
    out.push_back({Text(k.getName()), Text(k.getValue()), k.getFromIteration(), k.getAltersMath()});
  }
  return out;
}

}  // namespace strata
