#include "tools/bench/throughput_plot.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "core/process/subprocess.h"
#include "core/status.h"

namespace strata::bench {
absl::Status WriteThroughputPlot(const BenchReport& report, const std::string& png_path) {
  if (report.sweep_parameter.empty() || report.points.empty()) {
    return absl::InvalidArgumentError("--plot needs a --sweep (throughput against its values)");
  }
  const bool bandwidth = report.sweep_parameter == "bandwidth";
  char tmpl[] = "/tmp/strata_plot_XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string dir = tmpl;
  const std::string data = dir + "/throughput.dat";
  const std::string script = dir + "/throughput.gp";
  {
    std::ofstream out(data);
    for (const SweepPoint& p : report.points) {
      out << (bandwidth ? p.numeric / 1e9 : p.numeric);
      for (const ContenderResult& c : p.contenders) out << ' ' << c.median();
      out << '\n';
    }
  }
  {
    std::ofstream out(script);
    out << "set terminal pngcairo size 900,560 font ',11'\n"
        << "set output " << GnuplotString(png_path) << "\n"
        << "set title "
        << GnuplotString(report.facts.value("title", std::string("strata_bench train")))
        << " noenhanced\n"
        << "set xlabel "
        << GnuplotString(bandwidth ? "link bandwidth per host (Gbit/s)" : "one-way latency (ms)")
        << "\n"
        << "set ylabel 'training images/s (median)'\n"
        << "set key top left noenhanced\nset grid\nset yrange [0:*]\n";
    if (bandwidth) out << "set logscale x\n";
    out << "plot ";
    const auto& contenders = report.points.front().contenders;
    for (size_t i = 0; i < contenders.size(); ++i) {
      out << (i ? ", " : "") << GnuplotString(data) << " using 1:" << i + 2
          << " with linespoints lw 2 pt 7 title " << GnuplotString(contenders[i].label);
    }
    out << "\n";
  }
  return RunGnuplotAndClean(script, dir, png_path);
}

}  // namespace strata::bench
