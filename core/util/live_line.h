// LiveLine: the one way Strata shows progress. On a terminal one line is
// redrawn in place ("\r", cleared first); permanent lines go above it. When
// the stream is not a terminal (a log file, CI) nothing is redrawn: only
// permanent lines are written, whole.
//
//   LiveLine line(stderr);
//   line.Show("epoch 1/3  step 412/937 ...");   // a terminal sees it replace the last
//   line.Print("epoch 1: test_accuracy=0.91");  // stays
//   line.Finish();                               // ends the live line
//
// Thread safety: one thread drives an instance (a redraw thread must hold
// its owner's lock).
#ifndef STRATA_CORE_UTIL_LIVE_LINE_H_
#define STRATA_CORE_UTIL_LIVE_LINE_H_

#include <cstdio>
#include <string>

namespace strata {

class LiveLine {
 public:
  explicit LiveLine(FILE* stream);
  bool terminal() const { return terminal_; }
  // Replaces the live line (terminals only; elsewhere nothing happens).
  void Show(const std::string& text);
  // Writes a permanent line; the live line, if any, is redrawn below it at
  // the next Show.
  void Print(const std::string& text);
  // Ends the live line so that what follows starts on a line of its own.
  void Finish();

 private:
  FILE* stream_;
  bool terminal_;
  bool open_ = false;
};

}  // namespace strata

#endif  // STRATA_CORE_UTIL_LIVE_LINE_H_
