#!/usr/bin/env bash
# Fuzzes every decoder of untrusted input with libFuzzer (tests/fuzz), each
# target for SECONDS, starting from its checked-in corpus and adding to it
# whatever new inputs reach new code. A crash stops the run with the input
# that caused it in BUILD/fuzz-artifacts/; `make test` replays the corpus.
#
#   tools/fuzz.sh BUILD_DIR [SECONDS]    (make fuzz: build-fuzz, 60)
set -euo pipefail

build="${1:?usage: tools/fuzz.sh BUILD_DIR [SECONDS]}"
seconds="${2:-60}"
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
corpus_root="$source_dir/tests/fuzz/corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

status=0
for target in "$corpus_root"/*/; do
  name="$(basename "$target")"
  binary="$build/bin/fuzz_$name"
  [[ -x "$binary" ]] || { echo "fuzz: $binary is missing (build it first)" >&2; exit 1; }
  before="$(find "$target" -type f | wc -l)"
  echo "fuzz: $name for $seconds s ($before inputs)"
  if ! "$binary" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$artifacts/$name-" "$target" > "$artifacts/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; the input is in $artifacts, the end of its log:" >&2
    tail -n 30 "$artifacts/$name.log" >&2
    status=1
    continue
  fi
  after="$(find "$target" -type f | wc -l)"
  echo "fuzz: $name: $((after - before)) new inputs kept in tests/fuzz/corpus/$name"
done
exit "$status"
