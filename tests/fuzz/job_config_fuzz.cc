// The job config parser (core/model/job_config.h) and the job spec a
// worker's hello offers a server that learns jobs (core/model/job_spec.h),
// on arbitrary text: refused with an error or accepted, never a crash.
// Models are not built: a config may ask for any size of model.
#include <cstdint>
#include <string>

#include "core/model/job_config.h"
#include "core/model/job_identity.h"
#include "core/model/job_spec.h"
#include "moe/moe_layer_type.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const bool registered = (moe::RegisterMoe(), true);
  (void)registered;
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<JobConfig> config = ParseJobConfig(text, "fuzz.json");
  if (config.ok()) (void)JobIdentity(*config);
  (void)ParseJobSpec(text);
  return 0;
}
