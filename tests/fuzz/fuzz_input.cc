#include "tests/fuzz/fuzz_input.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace strata::fuzz {

WireLimits SmallLimits() {
  WireLimits limits;
  limits.max_message_bytes = 1 << 20;
  limits.traversal_limit_words = 1 << 14;
  limits.max_frames = 16;
  return limits;
}

RawMessage FramesOf(const uint8_t* data, size_t size) {
  RawMessage raw;
  raw.identity = "fuzz";
  if (size == 0) return raw;
  const size_t k = data[0] % 4;
  size_t at = 1;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < k; ++i) {
    size_t length = 0;
    if (at + 2 <= size) length = data[at] | (size_t{data[at + 1]} << 8);
    at = std::min(size, at + 2);
    lengths.push_back(length);
  }
  size_t frame_bytes = 0;
  for (size_t& length : lengths) {
    length = std::min(length, size - at - frame_bytes);
    frame_bytes += length;
  }
  const size_t header = size - at - frame_bytes;
  raw.frames.emplace_back(data + at, header);
  at += header;
  for (size_t length : lengths) {
    raw.frames.emplace_back(data + at, length);
    at += length;
  }
  return raw;
}

std::string EncodeFrames(const std::string& header, const std::vector<std::string>& frames) {
  std::string out(1, static_cast<char>(frames.size()));
  for (const std::string& f : frames) {
    out += static_cast<char>(f.size() & 0xff);
    out += static_cast<char>((f.size() >> 8) & 0xff);
  }
  out += header;
  for (const std::string& f : frames) out += f;
  return out;
}

InputFile::InputFile(const uint8_t* data, size_t size) {
  fd_ = memfd_create("strata-fuzz", 0);
  if (fd_ < 0) return;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd_, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

InputFile::~InputFile() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace strata::fuzz
