#!/usr/bin/env python3
"""Draws a report of strata_bench or strata_research (its JSON) as a PNG.

    tools/bench/plot_report.py REPORT.json OUT.png [--what KIND]

Every plot of both tools is drawn here, with gnuplot (gnuplot-nox), from
the fields a report holds; KIND picks one when a report holds several:

    points     every benchmark over the harness: each contender's median
               figure against the swept value (a log scale for bandwidth),
               or a bar per contender when the report has one point
    timeline   crossover: when each job computed and waited, per policy
    scaling    plan: the predicted speed-ups against the conv workers
    windows    soak: latency p50 and p99, and each server's memory
    posterior  secbad-gridworld: the run-length posterior of one episode
    series     secbad-live: each contender's throughput over the run

Without --what, the first of these the report holds is drawn. Exit status:
0 drawn, 2 bad arguments or a report without anything to draw, 3 gnuplot
is not installed, 1 gnuplot failed.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

KINDS = ["points", "timeline", "scaling", "windows", "posterior", "series"]


def quoted(text):
    """`text` as a gnuplot single-quoted string."""
    return "'" + str(text).replace("'", "''") + "'"


class Drawing:
    """A gnuplot script and its data files in a scratch folder."""

    def __init__(self, folder, png, width=900, height=560):
        self.folder = folder
        self.lines = [
            f"set terminal pngcairo noenhanced size {width},{height} font ',11'",
            f"set output {quoted(png)}",
        ]
        self.files = 0

    def set(self, *settings):
        self.lines.extend(settings)

    def data(self, rows):
        """A data file of `rows` (a row: numbers; None: a blank line)."""
        self.files += 1
        path = os.path.join(self.folder, f"{self.files}.dat")
        with open(path, "w") as out:
            for row in rows:
                out.write("\n" if row is None else " ".join(str(v) for v in row) + "\n")
        return quoted(path)

    def plot(self, curves):
        self.lines.append("plot " + ", ".join(curves))

    def script(self):
        return "\n".join(self.lines) + "\n"


def draw_points(report, d):
    points = report["points"]
    key = next(k for k in points[0]["contenders"][0] if k.startswith("median_"))
    d.set(f"set title {quoted(report.get('title', 'strata_bench ' + report['benchmark']))}",
          f"set ylabel {quoted(report.get('figure_unit', key[len('median_'):]) + ' (median)')}",
          "set key top left", "set grid", "set yrange [0:*]")
    if len(points) == 1:  # no sweep: a bar per contender
        contenders = points[0]["contenders"]
        data = d.data([i, c[key]] for i, c in enumerate(contenders))
        d.set("set style fill solid 0.6", "set boxwidth 0.6",
              f"set xrange [-0.6:{len(contenders) - 0.4}]", "set xtics (" + ", ".join(
                  f"{quoted(c['label'])} {i}" for i, c in enumerate(contenders)) + ")")
        d.plot([f"{data} using 1:2 with boxes notitle"])
        return
    sweep = report["sweep"]
    numeric = all(p.get("numeric") for p in points)
    if sweep == "bandwidth" and numeric:
        d.set("set xlabel 'link bandwidth per host (Gbit/s)'", "set logscale x")
        x = [p["numeric"] / 1e9 for p in points]
    elif numeric:
        d.set(f"set xlabel {quoted(sweep + (' (ms)' if sweep == 'latency' else ''))}")
        x = [p["numeric"] for p in points]
    else:  # values without a number: one tick per value, in order
        d.set(f"set xlabel {quoted(sweep)}", "set xtics (" + ", ".join(
            f"{quoted(p['value'])} {i}" for i, p in enumerate(points)) + ")")
        x = list(range(len(points)))
    labels = [c["label"] for c in points[0]["contenders"]]
    rows = [[x[i]] + [c[key] for c in p["contenders"]] for i, p in enumerate(points)]
    data = d.data(rows)
    d.plot(f"{data} using 1:{i + 2} with linespoints lw 2 pt 7 title {quoted(label)}"
           for i, label in enumerate(labels))


def draw_timeline(report, d):
    timeline = report["timeline"]  # {"window_s", "jobs", "policies": [{"policy", "spans"}]}
    policies = timeline["policies"]
    jobs = timeline["jobs"]
    d.set(f"set multiplot layout {len(policies)},1 title "
          f"{quoted(f'conv worker 0: {jobs} jobs on one device')}",
          f"set xrange [0:{timeline['window_s']}]", f"set yrange [0.4:{jobs + 0.6}]",
          "set ytics 1", "set ylabel 'job'", "set style fill solid 1.0 noborder",
          "set palette defined (0 '#1f77b4', 1 '#d62728', 2 '#dddddd')", "set cbrange [0:2]",
          "unset colorbox")
    for i, policy in enumerate(policies):
        if i == len(policies) - 1:
            d.set("set xlabel 'seconds (blue: compute, red: waiting for the device, "
                  "grey: waiting for peers)'")
        data = d.data(policy["spans"])  # start end job kind
        d.set(f"set title {quoted(policy['policy'])}",
              f"plot {data} using (($1+$2)/2):3:(($2-$1)/2):(0.35):4 "
              "with boxxyerror lc palette notitle")
    d.set("unset multiplot")


def draw_scaling(report, d):
    d.set(f"set title {quoted(report.get('title', 'strata_bench plan'))}",
          "set xlabel 'conv workers N'", "set ylabel 'predicted speed-up'",
          "set logscale x 2", "set grid", "set key top left", "set yrange [0:*]")
    curves = []
    for rate in report["scaling"]:
        data = d.data([r["conv_workers"], r["stanza_over_ps"], r["stanza_over_ddp"]]
                      for r in rate["rows"])
        curves.append(f"{data} using 1:2 with linespoints lw 2 "
                      f"title {quoted('stanza / ps, ' + rate['bandwidth'])}")
        curves.append(f"{data} using 1:3 with linespoints lw 2 dt 2 "
                      f"title {quoted('stanza / ddp, ' + rate['bandwidth'])}")
    d.plot(curves)


def draw_windows(report, d):
    windows = report["windows"]
    servers = len(windows[0]["rss_mib"])
    d.set("set title 'strata_bench soak: round latency and server memory over time'",
          "set xlabel 'seconds'", "set ylabel 'round latency (ms)'", "set y2label 'RSS (MiB)'",
          "set ytics nomirror", "set y2tics", "set yrange [0:*]", "set y2range [0:*]",
          "set key bottom right", "set grid")
    data = d.data([w["end_seconds"], w["p50_ms"], w["p99_ms"]] + w["rss_mib"] for w in windows)
    d.plot([f"{data} using 1:2 with linespoints lw 2 title 'p50'",
            f"{data} using 1:3 with linespoints lw 2 title 'p99'"] +
           [f"{data} using 1:{4 + s} axes x1y2 with lines dt 2 lw 2 "
            f"title {quoted(f'server {s} RSS')}" for s in range(servers)])


def draw_posterior(report, d):
    trace = report["posterior"]  # {"p": [step][run length - 1], "map": [...], "changes": [...]}
    shown = len(trace["p"][0])
    rows = []
    for t, column in enumerate(trace["p"]):
        rows.extend([t + 1, r + 1, math.log10(max(p, 1e-6))] for r, p in enumerate(column))
        rows.append(None)
    d.set("set title 'SeCBAD run-length posterior, one grid-world episode "
          "(log10 p; white: true change points)'",
          "set xlabel 'step'", "set ylabel 'run length'",
          f"set xrange [1:{len(trace['p'])}]", f"set yrange [1:{shown}]",
          "set key top left textcolor rgb 'white'", "set cbrange [-6:0]",
          "set palette defined (-6 'black', -3 'blue', -1 'orange', 0 'yellow')")
    for change in trace["changes"]:
        d.set(f"set arrow from {change},1 to {change},{shown} nohead lc rgb 'white' lw 2 dt 2 front")
    image = d.data(rows)
    curve = d.data([t + 1, m] for t, m in enumerate(trace["map"]))
    d.plot([f"{image} using 1:2:3 with image notitle",
            f"{curve} using 1:2 with lines lc rgb 'red' lw 1.5 title 'MAP run length'"])


def draw_series(report, d):
    series = report["series"]  # {"phases": [{"begin", "conditions"}], "contenders": [...]}
    d.set(f"set title {quoted(report.get('title', 'strata_research secbad-live'))}",
          "set xlabel 'seconds from the launch'", "set ylabel 'images/s (1 s windows)'",
          "set key outside right", "set grid ytics")
    for i, phase in enumerate(series["phases"]):
        d.set(f"set label {i + 1} {quoted(phase['conditions'])} at {phase['begin'] + 0.5}, "
              "graph 0.96 font ',8'")
        if i > 0:
            d.set(f"set arrow from {phase['begin']}, graph 0 to {phase['begin']}, graph 1 "
                  "nohead dt 2 lc rgb 'gray40'")
    curves = []
    for c in series["contenders"]:
        data = d.data([t, v] for t, v in zip(c["t"], c["images_per_sec"]))
        curves.append(f"{data} using 1:2 with lines lw {2.5 if c.get('bold') else 1} "
                      f"title {quoted(c['label'])}")
    d.plot(curves)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report")
    parser.add_argument("png")
    parser.add_argument("--what", choices=KINDS)
    a = parser.parse_args()
    with open(a.report) as f:
        report = json.load(f)
    kind = a.what or next((k for k in KINDS if k in report), None)
    if kind is None or kind not in report:
        print(f"plot_report: {a.report} holds nothing to draw ({kind or ', '.join(KINDS)})",
              file=sys.stderr)
        return 2
    if shutil.which("gnuplot") is None:
        print("plot_report: gnuplot is not installed (apt-get install gnuplot-nox)",
              file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="strata_plot_") as folder:
        size = {"timeline": (1000, 180 + 170 * len(report.get("timeline", {}).get("policies", []))),
                "posterior": (1000, 520), "series": (1100, 560)}.get(kind, (900, 560))
        d = Drawing(folder, os.path.abspath(a.png), *size)
        try:
            globals()["draw_" + kind](report, d)
        except (KeyError, IndexError, TypeError, ValueError, StopIteration) as e:
            print(f"plot_report: {a.report}: cannot draw its {kind}: {e!r}", file=sys.stderr)
            return 2
        script = os.path.join(folder, "plot.gp")
        with open(script, "w") as out:
            out.write(d.script())
        run = subprocess.run(["gnuplot", script], capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(a.png) or os.path.getsize(a.png) == 0:
            print(f"plot_report: gnuplot could not draw {a.png}: {run.stderr[-1000:]}",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
