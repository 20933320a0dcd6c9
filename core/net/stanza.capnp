# The Stanza service: a conv worker's boundary activations to its FC worker
# and their gradients back (core/net/fc_link.h, fc_workers/fc_server.h).
# Its messages travel in the envelope of core/net/protocol.capnp with
# service `service`.
@0xc19aa5b1bd8fa073;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("strata::wire::stanza");

const service :UInt16 = 2;

enum Kind {
  activations @0;     # conv worker -> FC worker: boundary activations + labels
  activationGrads @1; # FC worker -> conv worker: d(loss)/d(activations)
}

struct Body {
  shape @0 :List(Int64);      # the activations' (and their gradients') tensor shape
}
