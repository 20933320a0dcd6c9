// What the fuzz targets share: the input cut into a protocol message's
// frames, and the input as a file (the readers of data sets and
// checkpoints take paths).
#ifndef STRATA_TESTS_FUZZ_FUZZ_INPUT_H_
#define STRATA_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/net/transport.h"

namespace strata::fuzz {

// Limits well under the defaults, so that a target explores the refusals
// at sizes a fuzzer reaches.
WireLimits SmallLimits();

// A message of a header and 0 to 3 data frames, from
//   [k: 1 byte, mod 4] [k lengths: u16 little-endian] [header] [frame 1] ... [frame k]
// where the header is what the frames leave (lengths past the end of the
// input are cut short). EncodeFrames writes the same layout.
RawMessage FramesOf(const uint8_t* data, size_t size);
std::string EncodeFrames(const std::string& header, const std::vector<std::string>& frames);

// The input in an in-memory file, removed when this goes away; path() is a
// name the file readers can open.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace strata::fuzz

#endif  // STRATA_TESTS_FUZZ_FUZZ_INPUT_H_
