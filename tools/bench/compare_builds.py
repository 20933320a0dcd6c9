#!/usr/bin/python3
"""Old build against new build, alternated, on the same machine in one run.

Runs each suite's strata_bench command with the old build's binaries and
the new build's in alternated pairs (old-new, then new-old, ...), so that
both see the same moments of a shared, noisy machine, and prints the
median ratio new/old with its min and max. Both builds read the configs
of the source tree this script lives in.

  tools/bench/compare_builds.py --old /tmp/old/build --new build --pairs 5 single ps-stanza moe

Suites (higher is better in each):
  single     strata_bench train, default config, single mode: images/s
  ps-stanza  strata_bench train, FC-heavy config, 4 conv workers: ps and
             stanza images/s
  moe        strata_bench moe (4096 tokens, 8 experts): 1 / (fwd+bwd seconds)

Exit status 1 when a median ratio is below --floor (default 0.97).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def suites(steps):
    cfg = lambda name: os.path.join(SOURCE, "configs", name)
    return {
        "single": (["train", "--config", cfg("fashion_mnist.json"), "--modes", "single",
                    "--steps", str(steps["single"]), "--repeat", "1", "--peer=false"],
                   lambda j: {"single": contender(j, "strata single")}),
        "ps-stanza": (["train", "--config", cfg("fashion_mnist_fcheavy.json"), "--modes",
                       "ps,stanza", "--conv-workers", "4", "--steps", str(steps["cluster"]),
                       "--repeat", "1", "--peer=false"],
                      lambda j: {"ps": contender(j, "strata ps"),
                                 "stanza": contender(j, "strata stanza")}),
        "moe": (["moe", "--repeat", "3", "--peer=false"],
                lambda j: {"moe": 1.0 / j["strata_seconds"]}),
    }


def contender(report, label):
    for point in report["points"]:
        for c in point["contenders"]:
            if c["label"] == label:
                return c["median_images_per_sec"]
    raise KeyError(f"no contender {label!r} in the report")


def run(build, args, scratch):
    out = os.path.join(scratch, "report.json")
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # as on a user's machine, for both builds alike
    env.pop("OPENBLAS_L2_SIZE", None)
    cmd = [os.path.join(build, "bin", "strata_bench")] + args + ["--json", out]
    done = subprocess.run(cmd, env=env, cwd=SOURCE, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True, help="the old build directory (holding bin/)")
    p.add_argument("--new", required=True, help="the new build directory (holding bin/)")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--single-steps", type=int, default=300)
    p.add_argument("--cluster-steps", type=int, default=30)
    p.add_argument("--floor", type=float, default=0.97)
    p.add_argument("--json", help="write every measurement and ratio here")
    p.add_argument("suites", nargs="+", choices=["single", "ps-stanza", "moe"])
    a = p.parse_args()
    table = suites({"single": a.single_steps, "cluster": a.cluster_steps})
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in a.suites:
            args, metric = table[name]
            for i in range(a.pairs):
                order = [("old", a.old), ("new", a.new)]
                if i % 2 == 1:
                    order.reverse()
                values = {}
                for which, build in order:
                    values[which] = metric(run(build, args, scratch))
                for key in values["new"]:
                    r = results.setdefault(key, {"old": [], "new": [], "ratio": []})
                    r["old"].append(values["old"][key])
                    r["new"].append(values["new"][key])
                    r["ratio"].append(values["new"][key] / values["old"][key])
                    print(f"{key:8s} pair {i + 1}: old {values['old'][key]:.4g} "
                          f"new {values['new'][key]:.4g} ratio {r['ratio'][-1]:.3f}", flush=True)
    print(f"\n{'suite':8s} {'old median':>11s} {'new median':>11s} {'ratio median':>13s} "
          f"{'min':>6s} {'max':>6s}")
    failed = False
    for key, r in results.items():
        med = statistics.median(r["ratio"])
        r["median_ratio"] = med
        failed = failed or med < a.floor
        print(f"{key:8s} {statistics.median(r['old']):11.4g} {statistics.median(r['new']):11.4g} "
              f"{med:13.3f} {min(r['ratio']):6.3f} {max(r['ratio']):6.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"old": a.old, "new": a.new, "pairs": a.pairs, "results": results}, f, indent=1)
    if failed:
        print(f"a median ratio is below {a.floor}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
