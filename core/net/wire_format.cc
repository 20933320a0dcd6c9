#include "core/net/wire_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/control/knobs.h"
#include "core/ops/cpu/bfloat16.h"

namespace strata {

absl::StatusOr<wire::DataType> ParseWireFormat(const std::string& name) {
  if (name == "fp32") return wire::DataType::F32;
  if (name == "bf16") return wire::DataType::BF16;
  return absl::InvalidArgumentError(
      absl::StrCat("wire format \"", name, "\": use fp32 or bf16"));
}

const char* WireFormatName(wire::DataType type) {
  return type == wire::DataType::BF16 ? "bf16" : "fp32";
}

size_t ElementBytes(wire::DataType type) { return type == wire::DataType::BF16 ? 2 : 4; }

Tensor EncodeFloats(const Tensor& floats, wire::DataType type) {
  if (type != wire::DataType::BF16) return floats;
  Tensor narrow = Tensor::Empty(floats.shape(), DType::kBF16);
  ToBfloat16(floats.data(), static_cast<uint16_t*>(narrow.raw_data()), floats.numel());
  return narrow;
}

void DecodeFloats(const IncomingMessage& message, size_t frame, wire::DataType type, float* dst,
                  int64_t n) {
  if (type == wire::DataType::BF16) {
    FromBfloat16(static_cast<const uint16_t*>(message.frame_data(frame)), dst, n);
  } else {
    std::memcpy(dst, message.frame_data(frame), static_cast<size_t>(n) * sizeof(float));
  }
}

void RegisterWireFormatKnob() {
  KnobCatalog::Global().RegisterIfNew(KnobSpec(
      kWireFormatKnob,
      "what pushes, pulls and activations carry on the sockets: fp32, or bf16 (half the bytes)",
      /*alters_math=*/true, [](const std::string& value) {
        return value == "fp32" || value == "bf16"
                   ? absl::OkStatus()
                   : absl::InvalidArgumentError("the wire formats are fp32 and bf16");
      }));
}

}  // namespace strata
