# Thin wrapper over CMake/CTest. Each target does its own setup, so on a
# fresh Debian machine `make demo` and `make test` work with nothing
# installed by hand.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
STRATA_CUDA ?= AUTO
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all setup setup-bench configure build bundle test test-unit test-accuracy test-asan test-tsan chaos fresh-check demo bench fuzz format tidy clean

all: build

setup:
	bash tools/setup.sh

setup-bench:
	bash tools/setup.sh --bench

configure: setup
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSTRATA_CUDA=$(STRATA_CUDA) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The portable bundle (tools/bundle.sh): a Release build for x86-64-v3 in
# build-bundle/, its programs, plugin, op tables and the Debian libraries
# they need in one xz archive there, for machines without Strata's packages
# (a GPU machine: tools/gpu_check.sh inside it).
bundle: setup
	cmake -S . -B build-bundle -DCMAKE_BUILD_TYPE=Release -DSTRATA_PORTABLE=ON \
	  -DSTRATA_CUDA=$(STRATA_CUDA) $(CMAKE_ARGS)
	cmake --build build-bundle -j $(JOBS) --target strata_installed
	bash tools/bundle.sh --build-dir build-bundle

# The whole suite: ctest labels unit (in-process, seconds), cluster (real
# multi-process runs) and accuracy (whole epochs, minutes). The chaos label
# is `make chaos`'s.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE chaos

test-unit: build
	cd $(BUILD_DIR) && ctest -L unit --output-on-failure -j $(JOBS)

# What `make test` holds beyond `make fresh-check`'s unit and cluster labels:
# the accuracy label, and the checks against the PyTorch peers (which the
# pristine root of a plain fresh-check lacks; `--all` there has both).
test-accuracy: setup-bench build
	cd $(BUILD_DIR) && ctest -L accuracy --output-on-failure -j $(JOBS) && \
	  ctest -R PeerCheck --output-on-failure

# The unit and cluster labels under sanitizers, each in a build of its own
# (tools/sanitizers/run.sh says how, and its suppression files what they
# hold and why): AddressSanitizer with UBSan in build-asan/, ThreadSanitizer
# in build-tsan/ (which first builds an instrumented Abseil from Debian's
# source package).
test-asan: setup
	bash tools/sanitizers/run.sh asan

test-tsan:
	bash tools/setup.sh --tsan
	bash tools/sanitizers/run.sh tsan

# Seeded faults on local clusters (tests/tools/chaos_test.cc): kill -9 and
# SIGSTOP of a role, message loss, duplication, delay and reordering, and a
# crash in each step of a checkpoint's life; thirteen seeds (more:
# STRATA_CHAOS_SEEDS=N build/bin/chaos_test).
chaos: build
	cd $(BUILD_DIR) && ctest -L chaos --output-on-failure

# Setup, build, unit and cluster tests inside a pristine Debian root made from
# this machine's apt sources: proves a fresh machine needs nothing by hand.
# FRESH_CHECK_ARGS="--all --require-cuda" runs everything `make test` runs
# there, with the CUDA backend built (CI does; tools/fresh_check.sh --help).
FRESH_CHECK_ARGS ?=
fresh-check:
	bash tools/fresh_check.sh $(FRESH_CHECK_ARGS)

# The default job on a local cluster in stanza mode: 1 server, 2 conv workers
# and 1 FC worker as separate processes; Fashion-MNIST, 3 epochs.
demo: build
	$(BUILD_DIR)/bin/strata_launch --config configs/fashion_mnist.json --mode stanza \
	  --servers 1 --conv-workers 2 --fc-workers 1 \
	  --metrics-out $(BUILD_DIR)/demo_metrics.jsonl --summary-out $(BUILD_DIR)/demo_summary.json

# Throughput against the PyTorch peer, side by side.
bench: setup-bench build
	$(BUILD_DIR)/bin/strata_bench train --mode single --config configs/fashion_mnist.json

# libFuzzer on every decoder of untrusted input (tests/fuzz), FUZZ_SECONDS
# each, in a clang build of its own; new inputs join the checked-in corpus.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = fuzz_message_header fuzz_expert_block fuzz_activations fuzz_job_config \
  fuzz_idx_reader fuzz_cifar_reader fuzz_checkpoint_reader
fuzz:
	bash tools/setup.sh --fuzz
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSTRATA_CUDA=OFF -DSTRATA_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	bash tools/fuzz.sh build-fuzz $(FUZZ_SECONDS)

# Every folder of sources (docs/ARCHITECTURE.md's layers).
SOURCE_DIRS = core scheduler moe experiments runtime server conv_workers fc_workers flags startup programs tools

format:
	find $(SOURCE_DIRS) tests -name '*.h' -o -name '*.cc' -o -name '*.cu' | xargs clang-format -i

tidy: configure
	find $(SOURCE_DIRS) -name '*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR)
