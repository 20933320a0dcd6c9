#!/usr/bin/env bash
# Installs every Debian package that Strata's build, tests and demo need.
# Idempotent: installs only what is missing, runs `apt-get update` at most
# once, and says what it does.
#
#   tools/setup.sh           build, test and demo dependencies
#   tools/setup.sh --bench   also the benchmark peers (python3-torch, python3-torchvision)
#   tools/setup.sh --fuzz    also clang and libFuzzer (make fuzz)
#   tools/setup.sh --tsan    also Debian's source archive (make test-tsan builds an
#                            Abseil of its own, instrumented, from Debian's source)
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  # oneDNN's CMake config (dnnl-config.cmake) calls find_package(OpenCL);
  # libdnnl-dev only recommends the package that provides it.
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev zlib1g-dev
  libzmq3-dev cppzmq-dev capnproto libcapnp-dev libsodium-dev
  libabsl-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist
  iproute2 procps gnuplot-nox
  # Cluster scripts: a local Slurm for their end-to-end test, their linter,
  # and the cloud files' checker (tools/cloud/check_cloud_configs.py).
  slurm-wlm munge shellcheck python3-yaml
  # make bundle (tools/bundle.sh): the archive's compressor.
  xz-utils
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch python3-torchvision python3-numpy)
fi
if [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang libclang-rt-14-dev)
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi

# Source packages come from the same mirrors as the binary ones: a deb-src
# twin of every deb entry, in a file of our own.
if [[ "${1:-}" == "--tsan" ]] && ! apt-get source --print-uris abseil > /dev/null 2>&1; then
  echo "setup: adding Debian's source archive (deb-src) for the instrumented Abseil"
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed 's/^Types:.*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      $SUDO tee /etc/apt/sources.list.d/strata-deb-src.sources > /dev/null
  else
    grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2> /dev/null |
      sed 's/^deb /deb-src /' | $SUDO tee /etc/apt/sources.list.d/strata-deb-src.list > /dev/null
  fi
  $SUDO apt-get update -qq
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} required packages are installed"
  exit 0
fi

echo "setup: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
