#!/usr/bin/env bash
# Builds Strata with sanitizers in a build directory of its own and runs
# the unit and cluster labels there (make test-asan, make test-tsan):
#
#   tools/sanitizers/run.sh asan [CTEST ARGS]   AddressSanitizer + UBSan, in build-asan/
#   tools/sanitizers/run.sh tsan [CTEST ARGS]   ThreadSanitizer, in build-tsan/
#
# Every process a test starts (servers, workers, launchers) is the same
# sanitized build and reads the same options, so a report in any of them
# fails its test. The suppression files beside this script (lsan.supp,
# tsan.supp) say what they hold and why; nothing else is ignored.
#
# ThreadSanitizer sees a lock only where the code that takes it was
# compiled with it. Strata's own locks are absl::Mutex, whose Debian build
# is not instrumented, so the TSan build first builds Abseil from Debian's
# source package (the same version) with -fsanitize=thread into
# build-tsan/abseil (once; tools/setup.sh --tsan adds the source archive).
# Strata's OpenMP loops build without OpenMP there (CMakeLists.txt,
# strata_openmp), and the math libraries run on one thread each
# (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS): their threads meet at barriers
# TSan cannot see.
#
# Sanitized processes run several times slower: STRATA_TEST_TIME_SCALE
# tells the cluster tests to wait that much longer (tests/support), and
# ctest's own timeout grows by the same factor.
set -euo pipefail

kind="${1:-}"
shift || true
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tools/sanitizers"
jobs="$(nproc)"

case "$kind" in
  asan)
    build="$root/build-asan"
    configure=(-DSTRATA_ASAN=ON -DSTRATA_UBSAN=ON)
    scale=3
    # Leaks and UBSan's findings fail the test; lsan.supp holds the one
    # teardown leak inside libzmq's own I/O thread.
    export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export LSAN_OPTIONS="suppressions=$here/lsan.supp"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  tsan)
    build="$root/build-tsan"
    abseil="$build/abseil"
    if [[ ! -f "$abseil/lib/cmake/absl/abslConfig.cmake" ]]; then
      echo "sanitizers: building an instrumented Abseil from Debian's source package into $abseil"
      src="$build/abseil-src"
      rm -rf "$src"
      mkdir -p "$src"
      (cd "$src" && apt-get source --download-only abseil > /dev/null)
      tar -xzf "$src"/abseil_*.orig.tar.gz -C "$src"
      tree="$(find "$src" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
      cmake -S "$tree" -B "$src/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS="-fsanitize=thread -Wno-tsan" -DCMAKE_CXX_STANDARD=17 \
        -DABSL_PROPAGATE_CXX_STD=ON -DABSL_BUILD_TESTING=OFF \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$abseil" > /dev/null
      cmake --build "$src/build" -j "$jobs" > /dev/null
      cmake --install "$src/build" > /dev/null
      rm -rf "$src"
    fi
    configure=(-DSTRATA_TSAN=ON -DCMAKE_PREFIX_PATH="$abseil")
    scale=8
    export TSAN_OPTIONS="suppressions=$here/tsan.supp:second_deadlock_stack=1:halt_on_error=0:exitcode=66:report_signal_unsafe=0"
    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
    ;;
  *)
    echo "usage: tools/sanitizers/run.sh asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_CUDA=OFF \
  -DSTRATA_TEST_TIMEOUT_SCALE="$scale" "${configure[@]}"
cmake --build "$build" -j "$jobs"
export STRATA_TEST_TIME_SCALE="$scale"
cd "$build"
ctest -L 'unit|cluster' --output-on-failure -j "$jobs" "$@"
