// The knob service's messages (core/net/knob.capnp): their message types, and
// the knob lists and iteration reports of their bodies, read and written in
// one place for the coordinator, the workers and strata_ctl.
#ifndef STRATA_CORE_NET_KNOB_MESSAGES_H_
#define STRATA_CORE_NET_KNOB_MESSAGES_H_

#include <map>
#include <string>
#include <vector>

#include "core/control/controller.h"
#include "core/control/iteration_record.h"
#include "core/control/knobs.h"
#include "core/net/knob.capnp.h"
#include "core/net/message_type.h"
#include "core/net/protocol.capnp.h"

namespace strata {

template <>
struct ServiceOf<wire::knob::Kind> {
  static constexpr uint16_t kId = wire::knob::SERVICE;
};

// The request ids of a worker's knob requests, so that a refusal (an
// ERROR echoing the id) is told from other answers.
inline constexpr uint64_t kKnobLeaseRequest = ~uint64_t{0};
inline constexpr uint64_t kKnobSetRequest = ~uint64_t{0} - 1;

void SetKnobChanges(wire::Header::Builder header, const std::vector<KnobChange>& changes);
std::vector<KnobChange> KnobChangesOf(wire::Header::Reader header);

// A lease request's declared knobs (fromIteration 0).
void SetDeclaredKnobs(wire::Header::Builder header,
                      const std::map<std::string, std::string>& declared);
std::map<std::string, std::string> DeclaredKnobsOf(wire::Header::Reader header);

void SetKnobProposals(wire::Header::Builder header, const std::vector<KnobProposal>& proposals);
std::vector<KnobProposal> KnobProposalsOf(wire::Header::Reader header);

void SetKnobStates(wire::Header::Builder header, const std::vector<KnobState>& states);
std::vector<KnobState> KnobStatesOf(wire::Header::Reader header);

// A process's iterations as the coordinator relays them to a controller:
// who (role and rank) and the record's timings and rows.
struct IterationReport {
  wire::Role role = wire::Role::CONV_WORKER;
  int rank = 0;
  IterationRecord record;  // process, iteration, completed, compute, communication, wall, rows
};
// The most reports one message carries (older ones are dropped first).
inline constexpr size_t kMaxReportsPerMessage = 1024;
void SetIterationReports(wire::Header::Builder header, const std::vector<IterationReport>& reports);
// The reports of a header; ones with a negative or non-finite time or a
// negative row count are left out (the input is untrusted).
std::vector<IterationReport> IterationReportsOf(wire::Header::Reader header);
// "conv worker 0", "fc worker 1": a record's process name for a role and rank.
std::string ProcessName(wire::Role role, int rank);

}  // namespace strata

#endif  // STRATA_CORE_NET_KNOB_MESSAGES_H_
