# The MoE service: expert-group blocks between FC workers
# (moe/zmq_expert_exchange.h). Its messages travel in the envelope of
# core/net/protocol.capnp with service `service`.
@0x9c59f64e0764ba46;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::moe");

const service :UInt16 = 3;

enum Kind {
  expertBlock @0;     # FC worker -> FC worker: an MoE expert-group block (no reply)
  expertBlockAck @1;  # FC worker -> FC worker: the expertBlock `tag` from the receiver
                      # `senderRank` arrived; not answered
}

# Which exchange of an MoE call a block belongs to (moe/expert_exchange.h).
struct ExchangeTag {
  call @0 :Int64;
  layer @1 :Int32;
  phase @2 :UInt8;
  chunk @3 :Int32;
  chunks @4 :Int32;
}

struct Body {
  tag @0 :ExchangeTag;
  shape @1 :List(Int64);      # [rows, width]
  counts @2 :List(Int64);     # rows per expert (or sizes), summing to shape[0]
}
