# Strata wire protocol: the envelope, the header frame (frame 0) of every
# message.
#
# A message is multipart: the Header, then one raw data frame per entry of
# `frameBytes` (tensor bytes, sent zero-copy). The envelope knows no module:
# it carries the control vocabulary below (service 0: joining a job, being
# alive, refusing, finishing, stopping) and, for every other message, the id of the
# service it belongs to, that service's own kind, and its payload (`body`),
# whose schema lives with the module that owns the service
# (core/net/message_type.h lists where). This schema is a versioned
# interface: add fields at the end with new ordinals, never renumber or
# change a field's type. A peer whose `major` differs is refused.
@0xf70e05aea7a5f14d;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire");

# Major 3: the envelope (a service id, its kind and its body) replaces one
# kind enum holding every module's messages.
const protocolMajor :UInt16 = 3;
const protocolMinor :UInt16 = 0;

# The control vocabulary: the kinds of service 0.
enum Kind {
  error @0;           # reply: errorCode + errorMessage
  register @1;        # node -> coordinator: nodes[0] describes the sender
  clusterMap @2;      # coordinator -> node: every node, with the sender's rank
  barrier @3;         # node -> coordinator: barrierName, iteration as generation
  barrierRelease @4;  # coordinator -> node
  heartbeat @5;       # node -> coordinator; answered (a heartbeat echoing requestId) only when
                      # requestId is not 0: a server's last report before it exits
  hello @6;           # node -> server, FC worker or expert exchange: the first message of every
                      # connection (socket or lane), binding it to (jobId, senderRole, senderRank);
                      # carries jobToken and jobIdentity (core/net/admission.h)
  helloAck @7;        # its answer; errorCode/errorMessage set when refused
  nodeDead @8;        # coordinator -> servers: nodes[0] stopped sending heartbeats
  shutdown @9;        # launcher/worker -> server: finish and exit
  shutdownAck @10;
  newJob @11;         # server 0 -> the other servers of a group that learns jobs: serve job
                      # `jobId` of `jobSpec` (server/server_node.h); not answered
  done @12;           # worker -> server or FC worker: this worker has finished training;
                      # to a server, `iteration`: the newest checkpoint part it wrote, and
                      # failedCheckpoint one it could not
  leave @13;          # worker -> server: this worker stops on the error in errorMessage; the
                      # pulls that wait for its pushes fail naming it (answered: shutdownAck)
}

enum Role {
  server @0;
  convWorker @1;
  fcWorker @2;
  launcher @3;
  tool @4;
}

# The element type of float data frames (the wire.format knob).
enum DataType {
  f32 @0;
  bf16 @1;
}

struct NodeInfo {
  role @0 :Role;
  rank @1 :Int32;
  address @2 :Text;   # where the node serves (servers), "" otherwise
  peerAddress @3 :Text; # FC workers: where the other FC workers reach its expert exchange;
                        # servers: their shared-memory lane (core/net/lane_socket.h)
}

struct Header {
  major @0 :UInt16;
  minor @1 :UInt16;
  service @2 :UInt16;         # 0: control (Kind); any other: the service `body` belongs to
  kind @3 :UInt16;            # service 0: a Kind; any other: that service's own kind
  jobId @4 :UInt64;
  iteration @5 :Int64;
  senderRole @6 :Role;
  senderRank @7 :Int32;
  requestId @8 :UInt64;       # echoed in the reply
  frameBytes @9 :List(UInt64);# size of each data frame that follows
  dataType @10 :DataType;     # what each element of the float data frames is; a request for data
                              # (pull): what the reply should carry (shared-memory slots: f32)
  errorCode @11 :UInt32;      # absl::StatusCode of an error reply
  errorMessage @12 :Text;
  body @13 :AnyPointer;       # the service's payload: a struct of its module's schema, or null
  # The control vocabulary's fields.
  nodes @14 :List(NodeInfo);  # register, clusterMap
  expectedNodes @15 :List(UInt32); # cluster map: servers, conv workers, FC workers
  barrierName @16 :Text;
  jobToken @17 :Text;         # hello: the job's secret ("" in an open cluster)
  jobIdentity @18 :Text;      # hello: the job config's identity fields (core/model/job_identity.h)
  jobSpec @19 :Text;          # hello, newJob: the job's config and mode (core/model/job_spec.h),
                              # for servers that learn jobs ("" = not offered)
  adminToken @20 :Text;       # hello from a tool or launcher: the admin token, which shutdown and
                              # knob changes take ("" = none presented)
  checkpointEpoch @21 :Int64 = -1; # helloAck from a job's coordinator, clusterMap: the checkpoint
                              # epoch every restoring process restores (-1: the job starts afresh)
  failedCheckpoint @22 :Int64 = -1; # heartbeat, done: an epoch whose
                              # checkpoint part the sender could not write (errorMessage says
                              # why); -1: none
}
