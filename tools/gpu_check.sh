#!/usr/bin/env bash
# The GPU check: run from an unpacked bundle (tools/bundle.sh) on a machine
# with one NVIDIA GPU, an NVIDIA driver and PyTorch's CUDA build as
# `python3` (whose wheels give Strata cuBLAS and cuDNN). It needs no package
# registry and takes a few minutes. Each stage writes its JSON into --out as
# it finishes, correctness first:
#   environment.json  the GPU, its driver, PyTorch, the bundle's build
#   ops.json          the CUDA rows of the op tables (backend_ops_test,
#                     layer_kernels_test) and the MoE layer's training step
#                     (moe_layer_test) against the host, gtest's JSON
#                     beside it; STRATA_TEST_REQUIRE=cuda, so a CUDA backend
#                     that does not load fails them
#   accuracy.json     one epoch of the default job (Fashion-MNIST) in single
#                     mode on the CPU and on the GPU: test accuracies within
#                     --max-accuracy-gap points
#   bench_<model>.json  strata_bench train --mode single --device cuda
#                     against PyTorch on the same GPU: the default CNN
#                     (batch 64) and ResNet-20 at CIFAR size (batch 128),
#                     images/s of each side and their ratio, TF32 as set
# A failed stage ends the check (exit 1) after writing its JSON.
#
#   strata-VERSION-linux-x86_64/tools/gpu_check.sh --data DIR [--out DIR]
#       [--tf32] [--steps N] [--max-accuracy-gap P]
#
#   --data DIR   Fashion-MNIST's four idx .gz files
#   --out DIR    where the JSON goes (default gpu_check/ here)
#   --tf32       TensorFloat-32 for Strata and PyTorch alike (default off)
#   --steps N    timed steps per benchmark run (default 200)
set -euo pipefail

data=""
out="gpu_check"
tf32=0
steps=200
max_gap=0.5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) data="$2"; shift ;;
    --out) out="$2"; shift ;;
    --tf32) tf32=1 ;;
    --steps) steps="$2"; shift ;;
    --max-accuracy-gap) max_gap="$2"; shift ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "gpu-check: $(date +%H:%M:%S) $*"; }
fail() { echo "gpu-check: FAILED: $*" >&2; exit 1; }

bundle="$(cd "$(dirname "$0")/.." && pwd)"
[[ -x "$bundle/bin/strata_launch" ]] || fail "$bundle is not an unpacked bundle (no bin/strata_launch)"
[[ -n "$data" && -f "$data/train-images-idx3-ubyte.gz" ]] ||
  fail "--data must name a folder with Fashion-MNIST's idx .gz files"
command -v python3 > /dev/null || fail "no python3 on PATH (PyTorch's CUDA build is the peer)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/strata-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tf32_flag=()
[[ $tf32 -eq 1 ]] && tf32_flag=(--tf32)

# A JSON value from a file: json FILE EXPRESSION (Python over `d`).
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# --- environment ------------------------------------------------------------
say "environment"
python3 - "$out/environment.json" "$bundle/BUNDLE.txt" << 'PYTHON'
import json, subprocess, sys
import torch
result = {"bundle": open(sys.argv[2]).read().splitlines(),
          "torch": torch.__version__, "torch_cuda": torch.version.cuda,
          "cudnn": torch.backends.cudnn.version(),
          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
try:
    result["nvidia_smi"] = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
        capture_output=True, text=True, timeout=30).stdout.strip()
except OSError as error:
    result["nvidia_smi"] = str(error)
json.dump(result, open(sys.argv[1], "w"), indent=2)
print(json.dumps(result))
PYTHON
[[ "$(json "$out/environment.json" 'd["gpu"] is not None')" == True ]] ||
  fail "PyTorch sees no GPU here (environment.json)"

# --- ops --------------------------------------------------------------------
say "ops: the op tables' CUDA rows"
ops_passed=true
for table in backend_ops_test layer_kernels_test moe_layer_test; do
  if ! STRATA_TEST_REQUIRE=cuda "$bundle/tests/$table" --gtest_output="json:$out/ops_$table.json" \
    > "$out/ops_$table.log" 2>&1; then
    ops_passed=false
  fi
done
python3 - "$out" "$ops_passed" << 'PYTHON'
import json, sys
out, passed = sys.argv[1], sys.argv[2] == "true"
tables = {}
for table in ("backend_ops_test", "layer_kernels_test", "moe_layer_test"):
    try:
        report = json.load(open(f"{out}/ops_{table}.json"))
    except (OSError, ValueError):
        tables[table] = {"error": "no gtest JSON (see the log)"}
        continue
    failures = [f"{suite['name']}.{test['name']}" for suite in report["testsuites"]
                for test in suite["testsuite"] if test.get("failures")]
    tables[table] = {"tests": report["tests"], "failures": failures}
json.dump({"passed": passed, "tables": tables}, open(f"{out}/ops.json", "w"), indent=2)
PYTHON
[[ $ops_passed == true ]] || fail "the op tables' CUDA rows failed (ops.json, ops_*.log)"

# --- accuracy ---------------------------------------------------------------
config="$work/fashion_mnist.json"
sed "s#/usr/share/datasets/fashion-mnist#$data#" "$bundle/configs/fashion_mnist.json" > "$config"
for device in cpu cuda; do
  say "accuracy: one epoch of the default job on $device"
  "$bundle/bin/strata_launch" --config "$config" --mode single --device "$device" \
    "${tf32_flag[@]}" --epochs 1 --threads "$(nproc)" --progress=false \
    --summary-out "$work/accuracy_$device.json" > "$out/accuracy_$device.log" 2>&1 ||
    fail "the epoch on $device failed (accuracy_$device.log)"
done
python3 - "$work" "$out/accuracy.json" "$max_gap" << 'PYTHON'
import json, sys
work, path, max_gap = sys.argv[1], sys.argv[2], float(sys.argv[3])
runs = {d: json.load(open(f"{work}/accuracy_{d}.json")) for d in ("cpu", "cuda")}
gap = abs(runs["cuda"]["test_accuracy"] - runs["cpu"]["test_accuracy"]) * 100
result = {"runs": {d: {k: r.get(k) for k in ("device", "test_accuracy", "test_loss",
                                              "images_per_sec", "steps")}
                   for d, r in runs.items()},
          "gap_points": gap, "max_gap_points": max_gap, "passed": gap <= max_gap}
json.dump(result, open(path, "w"), indent=2)
print(json.dumps(result))
PYTHON
[[ "$(json "$out/accuracy.json" 'd["passed"]')" == True ]] ||
  fail "the GPU's accuracy differs from the CPU's by more than $max_gap points (accuracy.json)"

# --- benchmarks -------------------------------------------------------------
bench() {
  local name="$1" config="$2" batch="$3"
  say "bench: $name, batch $batch, against PyTorch on the same GPU"
  "$bundle/bin/strata_bench" train --config "$config" --mode single --device cuda \
    "${tf32_flag[@]}" --batch-size "$batch" --steps "$steps" --repeat 3 --threads "$(nproc)" \
    --python "$(command -v python3)" --json "$out/bench_$name.json" \
    > "$out/bench_$name.log" 2>&1 || fail "strata_bench on $name failed (bench_$name.log)"
  grep -E 'images/s|ratio|x PyTorch|pytorch' "$out/bench_$name.log" | tail -5 || true
}
bench cnn "$config" 64
bench resnet20_cifar "$bundle/configs/resnet20_cifar.json" 128
say "PASSED: figures in $out"
