#include "core/net/knob_messages.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/net/admission.h"

namespace strata {
namespace {

std::string Text(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

}  // namespace

void SetKnobChanges(wire::Header::Builder header, const std::vector<KnobChange>& changes) {
  auto list = BodyOf<wire::knob::Body>(header).initKnobs(static_cast<unsigned>(changes.size()));
  for (unsigned i = 0; i < changes.size(); ++i) {
    list[i].setName(changes[i].name);
    list[i].setValue(changes[i].value);
    list[i].setFromIteration(changes[i].from_iteration);
  }
}

std::vector<KnobChange> KnobChangesOf(wire::Header::Reader header) {
  std::vector<KnobChange> out;
  for (const auto k : BodyOf<wire::knob::Body>(header).getKnobs()) {
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
  auto list = BodyOf<wire::knob::Body>(header).initKnobs(static_cast<unsigned>(states.size()));
  for (unsigned i = 0; i < states.size(); ++i) {
    list[i].setName(states[i].name);
    list[i].setValue(states[i].value);
    list[i].setFromIteration(states[i].since);
    list[i].setAltersMath(states[i].alters_math);
  }
}

std::vector<KnobState> KnobStatesOf(wire::Header::Reader header) {
  std::vector<KnobState> out;
  for (const auto k : BodyOf<wire::knob::Body>(header).getKnobs()) {
    out.push_back({Text(k.getName()), Text(k.getValue()), k.getFromIteration(), k.getAltersMath()});
  }
  return out;
}

std::string ProcessName(wire::Role role, int rank) {
  switch (role) {
    case wire::Role::CONV_WORKER:
      return absl::StrCat("conv worker ", rank);
    case wire::Role::FC_WORKER:
      return absl::StrCat("fc worker ", rank);
    default:
      return DescribePeer(role, rank);
  }
}

void SetIterationReports(wire::Header::Builder header, const std::vector<IterationReport>& reports) {
  const size_t first = reports.size() > kMaxReportsPerMessage ? reports.size() - kMaxReportsPerMessage : 0;
  auto list =
      BodyOf<wire::knob::Body>(header).initReports(static_cast<unsigned>(reports.size() - first));
  for (size_t i = first; i < reports.size(); ++i) {
    const IterationReport& r = reports[i];
    auto out = list[static_cast<unsigned>(i - first)];
    out.setRole(r.role);
    out.setRank(r.rank);
    out.setIteration(r.record.iteration);
    out.setCompleted(r.record.completed);
    out.setComputeSeconds(r.record.compute_seconds);
    out.setCommunicationSeconds(r.record.communication_seconds);
    out.setWallSeconds(r.record.wall_seconds);
    out.setRows(r.record.rows);
  }
}

std::vector<IterationReport> IterationReportsOf(wire::Header::Reader header) {
  std::vector<IterationReport> out;
  for (const auto r : BodyOf<wire::knob::Body>(header).getReports()) {
    const double seconds[] = {r.getComputeSeconds(), r.getCommunicationSeconds(),
                              r.getWallSeconds()};
    const bool sane = std::all_of(std::begin(seconds), std::end(seconds),
                                  [](double s) { return std::isfinite(s) && s >= 0; }) &&
                      r.getRows() >= 0 && r.getIteration() >= 0;
    if (!sane || out.size() >= kMaxReportsPerMessage) continue;
    IterationReport report;
    report.role = r.getRole();
    report.rank = r.getRank();
    report.record.process = ProcessName(report.role, report.rank);
    report.record.iteration = r.getIteration();
    report.record.completed = r.getCompleted();
    report.record.compute_seconds = r.getComputeSeconds();
    report.record.communication_seconds = r.getCommunicationSeconds();
    report.record.wall_seconds = r.getWallSeconds();
    report.record.rows = r.getRows();
    out.push_back(std::move(report));
  }
  return out;
}

}  // namespace strata
