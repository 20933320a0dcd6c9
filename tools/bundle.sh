#!/usr/bin/env bash
# Makes Strata's portable bundle: one xz-compressed archive holding the
# programs (stripped, built for x86-64-v3), the CUDA backend's plugin, the
# Debian runtime libraries they need (all but the C library's own, which
# every Linux machine has), the configs, the PyTorch peers, the op tables
# and the GPU check, so that a machine without Strata's packages (a GPU
# machine, a cluster node) runs it where it is unpacked:
#
#   tar -xJf strata-0.1.0-linux-x86_64.tar.xz
#   strata-0.1.0-linux-x86_64/bin/strata_launch --config ... --device cuda
#
# cuBLAS and cuDNN do not travel (hundreds of MiB): on a GPU machine the
# plugin takes them from python3's NVIDIA wheels, which PyTorch's CUDA
# build installs, or from STRATA_CUDA_LIBRARY_PATH (BUNDLE.txt in the
# archive names the versions it was built with).
#
#   tools/bundle.sh [--build-dir DIR] [--out FILE] [--max-mib N]
#
#   --build-dir DIR  a portable Release build (STRATA_PORTABLE=ON), built;
#                    default build-bundle (what `make bundle` makes)
#   --out FILE       the archive; default DIR/strata-VERSION-linux-x86_64.tar.xz
#   --max-mib N      fail when the archive is larger (default 40)
#
# Needs cmake, ldd, strip, xz and tar. tools/check_bundle.sh checks an
# unpacked bundle on the machine it is meant for.
set -euo pipefail

build_dir=build-bundle
out=""
max_mib=40
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift ;;
    --out) out="$2"; shift ;;
    --max-mib) max_mib="$2"; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "bundle: $*"; }
fail() { echo "bundle: FAILED: $*" >&2; exit 1; }

source_dir="$(cd "$(dirname "$0")/.." && pwd)"
cache="$build_dir/CMakeCache.txt"
[[ -f "$cache" ]] || fail "$build_dir is not a configured build folder (no CMakeCache.txt); \`make bundle\` makes one"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
[[ "$(cache_value STRATA_PORTABLE)" == ON ]] ||
  fail "$build_dir is not a portable build: configure it with -DSTRATA_PORTABLE=ON (its programs would need this machine's processor)"
[[ "$(cache_value CMAKE_BUILD_TYPE)" == Release ]] || fail "$build_dir is not a Release build"
[[ -x "$build_dir/bin/strata_launch" ]] || fail "$build_dir is not built (no bin/strata_launch)"

version="$(cache_value CMAKE_PROJECT_VERSION)"
[[ -n "$version" ]] || version="$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' "$source_dir/CMakeLists.txt")"
commit="$(git -c safe.directory="$source_dir" -C "$source_dir" rev-parse --short HEAD 2> /dev/null || echo unknown)"
name="strata-$version-linux-x86_64"
[[ -n "$out" ]] || out="$build_dir/$name.tar.xz"

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-bundle.XXXXXX")"
trap 'rm -rf "$work"' EXIT
stage="$work/$name"

say "installing $build_dir into $stage"
cmake --install "$build_dir" --prefix "$stage" --strip > "$work/install.log" ||
  { tail -20 "$work/install.log" >&2; fail "cmake --install failed"; }
install -m 0755 "$source_dir/tools/gpu_check.sh" "$source_dir/tools/check_bundle.sh" "$stage/tools/"

# Every ELF file of the bundle, programs and plugin.
mapfile -t elves < <(find "$stage/bin" "$stage/tests" "$stage/lib" -type f -exec sh -c \
  'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \; 2> /dev/null | sort)
[[ ${#elves[@]} -gt 0 ]] || fail "no programs were installed"

# The C library's own files: every Linux machine has them, matched to its
# kernel. NVIDIA's libraries come from the GPU machine (see the header).
kept_out='^(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*)\.so'

say "collecting the runtime libraries of ${#elves[@]} programs and plugins"
declare -A libraries=()
for elf in "${elves[@]}"; do
  while read -r soname arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    [[ "$soname" =~ $kept_out ]] && continue
    [[ "$path" == not ]] && fail "$(basename "$elf") needs $soname, which this machine does not have"
    libraries["$soname"]="$path"
  done < <(ldd "$elf")
done
for soname in "${!libraries[@]}"; do
  cp -L "${libraries[$soname]}" "$stage/lib/$soname"
  chmod 0644 "$stage/lib/$soname"
  strip --strip-unneeded "$stage/lib/$soname"
done

# The newest C library version any file asks for: the oldest machine it runs on.
glibc="$(for elf in "${elves[@]}" "$stage"/lib/*.so*; do objdump -T "$elf"; done 2> /dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"

{
  echo "Strata $version ($commit), portable build for x86-64-v3 (AVX2) Linux"
  # shellcheck source=/dev/null
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "needs: the C library ${glibc#GLIBC_} or newer"
  if [[ -f "$stage/lib/libstrata_cuda.so" ]]; then
    echo "CUDA backend: lib/libstrata_cuda.so, CUDA runtime $(cache_value STRATA_CUDA_VERSION) linked in;"
    echo "  needs cuBLAS $(cache_value STRATA_CUBLAS_VERSION | cut -d. -f1) and cuDNN $(cache_value STRATA_CUDNN_VERSION | cut -d. -f1) (built with $(cache_value STRATA_CUBLAS_VERSION) and $(cache_value STRATA_CUDNN_VERSION)),"
    echo "  from python3's NVIDIA wheels (nvidia-cublas, nvidia-cudnn-cu13) or STRATA_CUDA_LIBRARY_PATH,"
    echo "  and an NVIDIA driver"
  else
    echo "CUDA backend: none (built without nvcc)"
  fi
  echo "libraries shipped in lib/: ${#libraries[@]}"
} > "$stage/BUNDLE.txt"

say "compressing"
mkdir -p "$(dirname "$out")"
tar -C "$work" -cf - "$name" | xz -9 -T0 > "$out.partial"
mv "$out.partial" "$out"
bytes=$(stat -c %s "$out")
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
say "$out: $mib MiB ($(du -sh "$stage" | cut -f1) unpacked, ${#elves[@]} programs and plugins, ${#libraries[@]} libraries; needs glibc ${glibc#GLIBC_})"
[[ $bytes -le $((max_mib * 1048576)) ]] || fail "$out is $mib MiB, over the $max_mib MiB allowed"
