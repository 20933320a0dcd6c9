// Wire formats of float data: what each element of a push's, pull
// reply's or activation message's data frames is (the header's dataType).
// fp32 is the floats themselves, sent zero-copy; bf16 their upper halves
// (core/ops/cpu/bfloat16.h), half the bytes, converted on send and widened
// on receipt, so every tensor a process computes with is fp32 either way.
//
//   Tensor frame = EncodeFloats(gradient.Slice(a, b), wire::DataType::BF16);
//   message.AddFrame(frame);  message.header().setDataType(wire::DataType::BF16);
//   ...
//   DecodeFloats(reply, i, reply.header().getDataType(), dst, n);
#ifndef STRATA_CORE_NET_WIRE_FORMAT_H_
#define STRATA_CORE_NET_WIRE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/net/protocol.capnp.h"
#include "core/net/transport.h"
#include "core/tensor/tensor.h"

namespace strata {

// "fp32" or "bf16" (the config's cluster.wire_format and the wire.format
// knob's values); InvalidArgument naming both otherwise.
absl::StatusOr<wire::DataType> ParseWireFormat(const std::string& name);
const char* WireFormatName(wire::DataType type);

// Bytes of one element.
size_t ElementBytes(wire::DataType type);

// `floats` (a float32 tensor) as a frame of `type`: the same tensor for
// f32 (sent zero-copy), a new bfloat16 tensor for bf16.
Tensor EncodeFloats(const Tensor& floats, wire::DataType type);

// Frame `frame` of `message`, `n` elements of `type`, into `n` floats.
// The caller has checked the frame's size (n * ElementBytes(type)).
void DecodeFloats(const IncomingMessage& message, size_t frame, wire::DataType type, float* dst,
                  int64_t n);

// The wire.format knob: what the cluster's float data travels as, "fp32"
// or "bf16"; declared by every worker through runtime/cluster_hooks.h.
inline constexpr char kWireFormatKnob[] = "wire.format";
// Registers wire.format with KnobCatalog::Global(); a second call does nothing.
void RegisterWireFormatKnob();

}  // namespace strata

#endif  // STRATA_CORE_NET_WIRE_FORMAT_H_
