# Strata wire protocol: the header frame (frame 0) of every message.
#
# A message is multipart: the Header, then one raw data frame per entry of
# `frameBytes` (tensor bytes, sent zero-copy). This schema is a versioned
# interface: add fields at the end with new ordinals, never renumber or
# change a field's type. A peer whose `major` differs is refused.
@0xf70e05aea7a5f14d;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire");

# Major 2: every connection registers with a hello before anything else.
const protocolMajor :UInt16 = 2;
const protocolMinor :UInt16 = 5;  # 1: leave; 2: jobSpec, newJob; 3: dataType; 4: reports;
                                  # 5: adminToken, shared memory as a sealed descriptor,
                                  #    checkpointEpoch, failedCheckpoint

enum Kind {
  error @0;           # reply: errorCode + errorMessage
  register @1;        # node -> coordinator: nodes[0] describes the sender
  clusterMap @2;      # coordinator -> node: every node, with the sender's rank
  barrier @3;         # node -> coordinator: barrierName, iteration as generation
  barrierRelease @4;  # coordinator -> node
  heartbeat @5;       # node -> coordinator; answered (a heartbeat echoing requestId) only when
                      # requestId is not 0: a server's last report before it exits
  push @6;            # worker -> server: gradient slices for `iteration`
  pushAck @7;
  pull @8;            # worker -> server: slices wanted at version >= `iteration`
  pullReply @9;       # server -> worker: slices, one data frame each
  init @10;           # worker 0 -> server: initial parameter values (slices)
  initAck @11;
  shutdown @12;       # launcher/worker -> server: finish and exit
  shutdownAck @13;
  clock @14;          # tool -> server: ask for the per-worker clocks
  clockReply @15;     # clocks in `clocks`
  done @16;           # worker -> server: this worker has finished training
  activations @17;    # conv worker -> FC worker: boundary activations + labels
  activationGrads @18;# FC worker -> conv worker: d(loss)/d(activations)
  expertBlock @19;    # FC worker -> FC worker: an MoE expert-group block (no reply)
  shmAttach @20;      # worker -> server on the same host: share a memory region (shm* fields)
  shmAttachAck @21;   # its answer; errorCode/errorMessage set when the server refuses
  hello @22;          # node -> server, FC worker or expert exchange: the first message of every
                      # connection (socket or lane), binding it to (jobId, senderRole, senderRank);
                      # carries jobToken and jobIdentity (core/net/admission.h)
  helloAck @23;       # its answer; errorCode/errorMessage set when refused
  nodeDead @24;       # coordinator -> servers: nodes[0] stopped sending heartbeats
  # Runtime knobs, agreed through the coordinator (core/control/knobs.h, server/knob_board.h):
  knobLease @25;      # worker -> coordinator: `iteration` it is at; knobs: those it declares
  knobLeaseReply @26; # `iteration`: the lease's end (start no iteration >= it without a new
                      # lease); knobs: every agreed change (name, value, fromIteration)
  knobSet @27;        # tool, launcher or worker -> coordinator: knobs (name, value) to change,
                      # from `iteration` (-1: the earliest iteration no process may have started)
  knobSetReply @28;   # knobs: the changes as scheduled (fromIteration set)
  knobGet @29;        # -> coordinator: the job's knobs
  knobGetReply @30;   # knobs: each knob's value and the iteration it took it at
  leave @31;          # worker -> server: this worker stops on the error in errorMessage; the
                      # pulls that wait for its pushes fail naming it (answered: shutdownAck)
  newJob @32;         # server 0 -> the other servers of a group that learns jobs: serve job
                      # `jobId` of `jobSpec` (server/server_node.h); not answered
  expertBlockAck @33; # FC worker -> FC worker: the expertBlock `exchangeTag` from the receiver
                      # `senderRank` arrived (moe/zmq_expert_exchange.h); not answered
}

enum Role {
  server @0;
  convWorker @1;
  fcWorker @2;
  launcher @3;
  tool @4;
}

# Elements [offset, offset + length) of parameter `key`.
struct Slice {
  key @0 :UInt32;
  offset @1 :UInt64;
  length @2 :UInt64;
}

struct NodeInfo {
  role @0 :Role;
  rank @1 :Int32;
  address @2 :Text;   # where the node serves (servers), "" otherwise
  peerAddress @3 :Text; # FC workers: where the other FC workers reach its expert exchange;
                        # servers: their shared-memory lane (core/net/lane_socket.h)
}

# Which exchange of an MoE call an expertBlock belongs to (moe/expert_exchange.h).
struct ExchangeTag {
  call @0 :Int64;
  layer @1 :Int32;
  phase @2 :UInt8;
  chunk @3 :Int32;
  chunks @4 :Int32;
}

# A runtime knob's value; fromIteration: where it takes (or took) effect.
struct KnobSetting {
  name @0 :Text;
  value @1 :Text;
  fromIteration @2 :Int64;
  altersMath @3 :Bool;        # knobGetReply: whether a change can alter what the job computes
}

struct Header {
  major @0 :UInt16;
  minor @1 :UInt16;
  kind @2 :Kind;
  jobId @3 :UInt64;
  iteration @4 :Int64;
  senderRole @5 :Role;
  senderRank @6 :Int32;
  requestId @7 :UInt64;       # echoed in the reply
  slices @8 :List(Slice);     # push, pull, pullReply, init
  frameBytes @9 :List(UInt64);# size of each data frame that follows
  errorCode @10 :UInt32;      # absl::StatusCode of an error reply
  errorMessage @11 :Text;
  nodes @12 :List(NodeInfo);  # register, clusterMap
  barrierName @13 :Text;
  clocks @14 :List(Int64);    # clockReply: last iteration pushed, per worker rank
  expectedNodes @15 :List(UInt32); # cluster map: servers, conv workers, FC workers
  shape @16 :List(Int64);     # activations, activationGrads: tensor shape; expertBlock: [rows, width]
  exchangeTag @17 :ExchangeTag; # expertBlock
  counts @18 :List(Int64);    # expertBlock: rows per expert (or sizes), summing to shape[0]
  # Shared memory between a worker and a server on one host (core/net/shm_region.h).
  shmRegion @19 :Text;        # unused since 2.5 (regions were named; now their descriptor comes
  shmToken @20 :UInt64;       # with the shmAttach packet on its lane)
  shmSlotCount @21 :UInt32;   # shmAttach: slots in the region
  shmSlotBytes @22 :UInt64;   # shmAttach: bytes per slot
  shmHost @23 :Text;          # shmAttach: the sender's host and network namespace
  shmSlots @24 :List(UInt32); # push/init/pull, pullReply: per slice, the slot that holds its
                              # floats instead of a data frame (empty: frames)
  jobToken @25 :Text;         # hello: the job's secret ("" in an open cluster)
  jobIdentity @26 :Text;      # hello: the job config's identity fields (core/model/job_identity.h)
  knobs @27 :List(KnobSetting); # knob* kinds
  jobSpec @28 :Text;          # hello, newJob: the job's config and mode (core/model/job_spec.h),
                              # for servers that learn jobs ("" = not offered)
  dataType @29 :DataType;     # push, pullReply, activations, activationGrads: what each element of
                              # the float data frames is; pull: what the reply should carry
                              # (init, shared-memory slots and expert blocks: always f32)
  reports @30 :List(IterationReport); # knobLease: the sender's own iterations since its last
                              # lease request; knobLeaseReply to a sender that wants reports: the
                              # job's other processes' iterations since its last request
  wantsReports @31 :Bool;     # knobLease: the sender runs a controller that reads every process's
                              # iterations; knobLeaseReply: some process of the job does, so renew
                              # the lease (and report) every iteration
  adminToken @32 :Text;       # hello from a tool or launcher: the admin token, which shutdown and
                              # knob changes take ("" = none presented)
  checkpointEpoch @33 :Int64 = -1; # helloAck from a job's coordinator, clusterMap: the checkpoint
                              # epoch every restoring process restores (-1: the job starts afresh)
  failedCheckpoint @34 :Int64 = -1; # heartbeat: an epoch whose checkpoint part the sender could not
                              # write (errorMessage says why); -1: none
}

# What one process did in one iteration, as a controller reads it
# (core/control/iteration_record.h).
struct IterationReport {
  role @0 :Role;
  rank @1 :Int32;
  iteration @2 :Int64;
  completed @3 :Bool;
  computeSeconds @4 :Float64;
  communicationSeconds @5 :Float64;
  wallSeconds @6 :Float64;
  rows @7 :Int64;
}

# The element type of float data frames (the wire.format knob).
enum DataType {
  f32 @0;
  bf16 @1;
}
