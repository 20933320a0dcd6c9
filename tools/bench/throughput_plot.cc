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
std::string GnuplotString(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "''"}}), "'");
}

absl::Status RunGnuplotAndClean(const std::string& script, const std::string& dir,
                                const std::string& png_path) {
  ProcessSpec spec;
  spec.argv = {"gnuplot", script};
  spec.output_path = dir + "/gnuplot.log";
  absl::StatusOr<int> code = RunProcess(spec, absl::Minutes(1));
  const std::string log = FileTail(spec.output_path, 1000);
  std::filesystem::remove_all(dir);
  if (absl::IsNotFound(code.status())) {
    return absl::NotFoundError("gnuplot is not installed (apt-get install gnuplot-nox)");
  }
  STRATA_RETURN_IF_ERROR(code.status());
  if (*code != 0 || !std::filesystem::exists(png_path) ||
      std::filesystem::file_size(png_path) == 0) {
    return absl::InternalError(absl::StrCat("gnuplot could not draw ", png_path, ": ", log));
  }
  return absl::OkStatus();
}

absl::Status WriteThroughputPlot(const TrainReport& report, const std::string& png_path) {
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
