# The knob service: runtime knobs agreed through the coordinator
# (core/control/knobs.h, server/knob_board.h, runtime/knob_lease_client.h),
# and the iteration reports a controller reads. Its messages travel in the
# envelope of core/net/protocol.capnp with service `service`.
@0xe6d6c68b540945cb;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::knob");

using Protocol = import "protocol.capnp";

const service :UInt16 = 4;

enum Kind {
  knobLease @0;       # worker -> coordinator: `iteration` it is at; knobs: those it declares
  knobLeaseReply @1;  # `iteration`: the lease's end (start no iteration >= it without a new
                      # lease); knobs: every agreed change (name, value, fromIteration)
  knobSet @2;         # tool, launcher or worker -> coordinator: knobs (name, value) to change,
                      # from `iteration` (-1: the earliest iteration no process may have started)
  knobSetReply @3;    # knobs: the changes as scheduled (fromIteration set)
  knobGet @4;         # -> coordinator: the job's knobs
  knobGetReply @5;    # knobs: each knob's value and the iteration it took it at
}

# A runtime knob's value; fromIteration: where it takes (or took) effect.
struct KnobSetting {
  name @0 :Text;
  value @1 :Text;
  fromIteration @2 :Int64;
  altersMath @3 :Bool;        # knobGetReply: whether a change can alter what the job computes
}

# What one process did in one iteration, as a controller reads it
# (core/control/iteration_record.h).
struct IterationReport {
  role @0 :Protocol.Role;
  rank @1 :Int32;
  iteration @2 :Int64;
  completed @3 :Bool;
  computeSeconds @4 :Float64;
  communicationSeconds @5 :Float64;
  wallSeconds @6 :Float64;
  rows @7 :Int64;
}

struct Body {
  knobs @0 :List(KnobSetting);
  reports @1 :List(IterationReport); # knobLease: the sender's own iterations since its last
                              # lease request; knobLeaseReply to a sender that wants reports: the
                              # job's other processes' iterations since its last request
  wantsReports @2 :Bool;      # knobLease: the sender runs a controller that reads every process's
                              # iterations; knobLeaseReply: some process of the job does, so renew
                              # the lease (and report) every iteration
}
