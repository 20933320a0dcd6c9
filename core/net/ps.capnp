# The parameter-server service: workers' pushes, pulls and initial values,
# the servers' answers, and shared memory with a server on the same host
# (core/net/kv_client.h, server/job_server.h). Its messages travel in the
# envelope of core/net/protocol.capnp with service `service`.
@0xc25ff7de9d1bba25;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::ps");

const service :UInt16 = 1;

enum Kind {
  push @0;            # worker -> server: gradient slices for `iteration`
  pushAck @1;
  pull @2;            # worker -> server: slices wanted at version >= `iteration`
  pullReply @3;       # server -> worker: slices, one data frame each
  init @4;            # worker 0 -> server: initial parameter values (slices)
  initAck @5;
  clock @6;           # tool -> server: ask for the per-worker clocks
  clockReply @7;      # clocks in `clocks`
  shmAttach @8;       # worker -> server on the same host: share a memory region (shm* fields)
  shmAttachAck @9;    # its answer; errorCode/errorMessage set when the server refuses
}

# Elements [offset, offset + length) of parameter `key`.
struct Slice {
  key @0 :UInt32;
  offset @1 :UInt64;
  length @2 :UInt64;
}

struct Body {
  slices @0 :List(Slice);     # push, pull, pullReply, init
  shmSlots @1 :List(UInt32);  # push/init/pull, pullReply: per slice, the slot that holds its
                              # floats instead of a data frame (empty: frames)
  clocks @2 :List(Int64);     # clockReply: last iteration pushed, per worker rank
  # shmAttach (core/net/shm_region.h; the region's descriptor comes with the packet on its lane):
  shmSlotCount @3 :UInt32;    # slots in the region
  shmSlotBytes @4 :UInt64;    # bytes per slot
  shmHost @5 :Text;           # the sender's host and network namespace
}
