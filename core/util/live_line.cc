#include "core/util/live_line.h"

#include <unistd.h>

namespace strata {

LiveLine::LiveLine(FILE* stream) : stream_(stream), terminal_(::isatty(::fileno(stream)) != 0) {}

void LiveLine::Show(const std::string& text) {
  if (!terminal_) return;
  std::fprintf(stream_, "\r\033[K%s", text.c_str());
  std::fflush(stream_);
  open_ = true;
}

void LiveLine::Print(const std::string& text) {
  if (open_) std::fputs("\r\033[K", stream_);
  open_ = false;
  std::fprintf(stream_, "%s\n", text.c_str());
  std::fflush(stream_);
}

void LiveLine::Finish() {
  if (open_) std::fputc('\n', stream_);
  open_ = false;
  std::fflush(stream_);
}

}  // namespace strata
