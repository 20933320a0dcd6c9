#!/usr/bin/env bash
# Checks an unpacked bundle (tools/bundle.sh) on the machine it is meant
# for, from the bundle's own tools/ folder:
#   1. every program, op table and plugin finds the libraries it needs;
#   2. the default job (Fashion-MNIST, configs/fashion_mnist.json) trains
#      --steps steps in single mode on the CPU;
#   3. asked for a GPU, strata_launch trains there where the machine has
#      one and cuBLAS and cuDNN are found, and otherwise stops before
#      training naming what it lacked (the line is printed).
#
#   strata-VERSION-linux-x86_64/tools/check_bundle.sh [--data DIR] [--steps N]
#       [--expect-gpu]
#
#   --data DIR     Fashion-MNIST's four idx .gz files (default: where
#                  Debian's dataset-fashion-mnist puts them)
#   --steps N      training steps of check 2 (default 20)
#   --expect-gpu   fail unless check 3 trains on the GPU
set -euo pipefail

data=/usr/share/datasets/fashion-mnist
steps=20
expect_gpu=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) data="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --expect-gpu) expect_gpu=1 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "check-bundle: $*"; }
fail() { echo "check-bundle: FAILED: $*" >&2; exit 1; }

bundle="$(cd "$(dirname "$0")/.." && pwd)"
[[ -x "$bundle/bin/strata_launch" ]] || fail "$bundle is not an unpacked bundle (no bin/strata_launch)"
[[ -f "$data/train-images-idx3-ubyte.gz" ]] ||
  fail "no Fashion-MNIST in $data (train-images-idx3-ubyte.gz); name its folder with --data"
say "$(head -1 "$bundle/BUNDLE.txt")"

# 1. Libraries. The plugin's cuBLAS and cuDNN are found when it is loaded
# (check 3), not by the dynamic loader.
for elf in "$bundle"/bin/* "$bundle"/tests/*; do
  missing="$(ldd "$elf" | grep 'not found' || true)"
  [[ -z "$missing" ]] || fail "$(basename "$elf") lacks libraries: $missing"
done
say "libraries: every program finds what it needs"

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
sed "s#/usr/share/datasets/fashion-mnist#$data#" "$bundle/configs/fashion_mnist.json" > "$work/job.json"

# 2. The default job on the CPU.
"$bundle/bin/strata_launch" --config "$work/job.json" --mode single --max-steps "$steps" \
  --evaluate=false --progress=false --summary-out "$work/cpu.json" > "$work/cpu.log" 2>&1 ||
  { tail -20 "$work/cpu.log" >&2; fail "the default job did not train on the CPU"; }
grep -q "\"steps\": *$steps\b" "$work/cpu.json" ||
  fail "the default job's summary does not count $steps steps: $(cat "$work/cpu.json")"
say "cpu: the default job trained $steps steps ($(grep -o '"images_per_sec": *[0-9.]*' "$work/cpu.json"))"

# 3. A GPU.
if "$bundle/bin/strata_launch" --config "$work/job.json" --mode single --device cuda \
  --max-steps "$steps" --evaluate=false --progress=false --summary-out "$work/gpu.json" \
  > "$work/gpu.log" 2>&1; then
  say "gpu: the default job trained $steps steps on $(grep -o '"device": *"[^"]*"' "$work/gpu.json")"
else
  reason="$(grep -o 'device cuda:0 asked for, but .*' "$work/gpu.log" || true)"
  [[ -n "$reason" ]] || { tail -20 "$work/gpu.log" >&2; fail "asked for a GPU, strata_launch failed without naming why"; }
  [[ $expect_gpu -eq 0 ]] || fail "no GPU training: $reason"
  say "gpu: refused before training, as it must be here: $reason"
fi
say "PASSED"
