#!/usr/bin/env bash
# Proves that a fresh Debian 12 machine can build and test Strata with
# nothing installed by hand: bootstraps a pristine Debian root in a temporary
# folder from the package sources this machine's apt uses, copies the
# checkout in (tracked and untracked files, not ignored ones such as build/),
# and inside that root runs tools/setup.sh, configure, build, and the unit and
# cluster tests. Every step prints its time; a failed step ends the check with
# the last lines of its log. The root is removed at the end, also on failure,
# Ctrl-C or SIGTERM.
#
# A CUDA toolkit in /usr/local/cuda on this machine is mounted read-only at
# the same place in the root, as a user's machine with CUDA installed has it,
# so the CUDA backend is built there too (STRATA_CUDA=AUTO).
#
#   tools/fresh_check.sh [--all] [--require-cuda] [--bundle] [--keep]
#                        [--log-lines N]
#
#   --all           also the accuracy label, and the peers' packages
#                   (tools/setup.sh --bench) in the root, so that the checks
#                   against PyTorch run: everything `make test` runs
#   --require-cuda  fail unless the CUDA backend is built (STRATA_CUDA=ON)
#   --bundle        build portably (STRATA_PORTABLE=ON: the tests then run
#                   what a bundle ships), make the bundle (tools/bundle.sh,
#                   at most 40 MiB) and check it (tools/check_bundle.sh) in
#                   a second root as bootstrapped, without Strata's
#                   packages or CUDA: its programs find every library and
#                   train the default job, and asked for a GPU they stop
#                   naming what is missing
#   --keep          leave the root (and the step logs) in place and print where
#   --log-lines N   lines of a failed step's log to print (default 40)
#
# Needs root (chroot, mounts, namespaces) and apt; installs mmdebstrap when it
# is missing. Each step runs in its own mount and PID namespaces: /proc, /sys,
# /dev and a fresh /dev/shm are mounted only there, and every process a step
# starts dies with it, so nothing is left mounted or running on the host.
# The test steps also get a network namespace of their own.
set -euo pipefail

keep=0
log_lines=40
all=0
bundle=0
cuda_option=AUTO
while [[ $# -gt 0 ]]; do
  case "$1" in
    --all) all=1 ;;
    --require-cuda) cuda_option=ON ;;
    --bundle) bundle=1 ;;
    --keep) keep=1 ;;
    --log-lines) log_lines="$2"; shift ;;
    -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fresh-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "fresh-check: $*"; }
fail() { echo "fresh-check: FAILED: $*" >&2; exit 1; }

source_dir="$(cd "$(dirname "$0")/.." && pwd)"
[[ $(id -u) -eq 0 ]] || fail "needs root (it bootstraps a Debian root and mounts into it); run it with sudo"
command -v apt-config > /dev/null || fail "needs apt: the root is bootstrapped from this machine's apt sources"
# shellcheck source=/dev/null
. /etc/os-release
[[ "${ID:-}" == debian && -n "${VERSION_CODENAME:-}" ]] ||
  fail "this machine is ${PRETTY_NAME:-unknown}; the check bootstraps the Debian release this machine's apt sources serve, so it runs on Debian"
suite="$VERSION_CODENAME"

if ! command -v mmdebstrap > /dev/null; then
  say "installing mmdebstrap (needed on this machine only, not in the root)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null; } ||
    fail "could not install mmdebstrap"
fi

# The CUDA toolkit to mount into the root: /usr/local/cuda is usually a link
# to a versioned folder, and the root gets the folder itself.
cuda_dir=""
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_dir="$(readlink -f /usr/local/cuda)"
elif [[ "$cuda_option" == ON ]]; then
  fail "--require-cuda: this machine has no CUDA toolkit in /usr/local/cuda (no /usr/local/cuda/bin/nvcc)"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-fresh.XXXXXX")"
root="$work/root"
logs="$work/logs"
mkdir -p "$logs"
step_pid=""

# Removes the temporary folder once nothing is mounted below it. Steps mount
# only inside their own namespaces, so a mount still visible here means
# something outside this script used the root: leave it rather than delete
# through a mount.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n "$step_pid" ]] && kill -0 "$step_pid" 2> /dev/null; then
    kill -KILL "$step_pid" 2> /dev/null || true
    wait "$step_pid" 2> /dev/null || true
  fi
  if [[ $keep -eq 1 ]]; then
    say "kept the root at $root and the step logs in $logs"
  elif findmnt -rn -o TARGET | grep -qF "$work"; then
    echo "fresh-check: not removing $work: something is still mounted below it:" >&2
    findmnt -rn -o TARGET | grep -F "$work" >&2
    status=1
  else
    # A step's processes die with its namespace; one still exiting may hold
    # a directory for a moment.
    rm -rf --one-file-system "$work" 2> /dev/null || { sleep 1; rm -rf --one-file-system "$work"; }
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# The package sources and the settings apt uses to reach them, read from this
# machine's apt configuration.
apt_sources=()
source_list=""
source_parts=""
eval "$(apt-config shell source_list Dir::Etc::sourcelist/f source_parts Dir::Etc::sourceparts/d)"
if [[ -s "$source_list" ]] && grep -qE '^[[:space:]]*deb[[:space:]]' "$source_list"; then
  apt_sources+=("$source_list")
fi
for f in "${source_parts%/}"/*.list "${source_parts%/}"/*.sources; do
  [[ -s "$f" ]] && apt_sources+=("$f")
done
[[ ${#apt_sources[@]} -gt 0 ]] || fail "this machine's apt configuration names no package sources ($source_list, $source_parts)"
# Proxies, retries and the validity checks of Release files: how this
# machine's apt reaches its mirrors (a mirror serving a snapshot needs
# Check-Valid-Until off, for instance).
apt_options=()
while IFS= read -r line; do
  apt_options+=(--aptopt="$line")
done < <(apt-config dump | grep -E '^Acquire::((https?|ftp)::Proxy[^ ]*|Check-Valid-Until|Check-Date|Retries|ForceIPv4|ForceIPv6|(https?)::Timeout) ')
# The keyrings those sources name (Signed-By): the root needs them too when
# no Debian package of the root provides them.
source_keyrings=()
while IFS= read -r keyring; do
  [[ -f "$keyring" ]] && source_keyrings+=("$keyring")
done < <(grep -hoE '([Ss]igned-[Bb]y:[[:space:]]*|signed-by=)/[^][:space:]]+' "${apt_sources[@]}" |
  sed -E 's/^[Ss]igned-[Bb]y:[[:space:]]*//; s/^signed-by=//' | sort -u)

# run_step NAME COMMAND...: runs COMMAND with its output in $logs/NAME.log,
# prints how long it took, and on failure the log's last lines.
run_step() {
  local name="$1"
  shift
  local start=$SECONDS
  say "$name ..."
  "$@" > "$logs/$name.log" 2>&1 < /dev/null &
  step_pid=$!
  local status=0
  wait "$step_pid" || status=$?
  step_pid=""
  local took=$((SECONDS - start))
  local log="$logs/$name.log"
  if [[ $status -ne 0 ]]; then
    echo "fresh-check: step '$name' failed (exit $status) after ${took} s; last $log_lines lines of its log:" >&2
    tail -n "$log_lines" "$log" | sed 's/^/  | /' >&2
    # A failed test's own lines (its assertion and the log it printed) come
    # earlier in ctest's output than the summary above.
    if grep -q 'Failure$' "$log"; then
      echo "fresh-check: the failed assertions:" >&2
      grep -A 12 'Failure$' "$log" | head -n 120 | sed 's/^/  | /' >&2
    fi
    exit 1
  fi
  printf 'fresh-check: %-14s %4d s\n' "$name" "$took"
  step_times+=("$(printf '%-14s %4d s' "$name" "$took")")
}
step_times=()

# in_root [--own-network] COMMAND: runs a shell command as root inside the
# Debian root, in private mount and PID namespaces (see the header), with a
# clean environment, and with this machine's cgroup hierarchy as an installed
# Debian has it (slurmd needs it). With --own-network it also runs in a
# network namespace of its own (the tests: what they do to links and
# namespaces stays off this machine's network), with a loopback link and a
# veth pair holding a documentation address (192.0.2.1): a machine has an
# address besides loopback, and Slurm's srun resolves nothing without one
# (getaddrinfo with AI_ADDRCONFIG). OPENBLAS_* settings pass
# through: they describe this machine's CPU, and tests and CI run with them
# as they are. So does STRATA_TEST_REQUIRE (what a test may not skip for).
# This machine's CUDA toolkit, when it has one, is mounted read-only at
# /usr/local/cuda (see the header). With --bare it runs in the bundle
# check's root instead (no checkout and no CUDA there; it starts in /).
# It execs unshare, so a step's pid is unshare's and killing it
# kills everything the step started (--kill-child).
in_root() {
  local network=()
  local links=""
  local step_root="$root" step_cuda="$cuda_dir" step_dir=/strata
  if [[ "$1" == --bare ]]; then
    step_root="$bare_root" step_cuda="" step_dir=/
    shift
  fi
  if [[ "$1" == --own-network ]]; then
    network=(--net)
    links="ip link set lo up && ip link add eth0 type veth peer name eth1 && ip addr add 192.0.2.1/24 dev eth0 && ip link set eth0 up && ip link set eth1 up && "
    shift
  fi
  local passed=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
  local v
  for v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE STRATA_TEST_REQUIRE http_proxy https_proxy no_proxy; do
    [[ -n "${!v:-}" ]] && passed+=("$v=${!v}")
  done
  # The inner script expands its own arguments ($1, $root): single quotes on purpose.
  # shellcheck disable=SC2016
  exec unshare --mount --propagation private --pid --fork --kill-child "${network[@]}" -- bash -c '
    set -e
    root="$1"; cuda_dir="$2"; shift 2
    # The root must be a mount point of its own: `ip netns` remounts / as a
    # slave, which fails on a plain directory.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    if mountpoint -q /sys/fs/cgroup; then mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"; fi
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
    if [[ -n "$cuda_dir" ]]; then
      mount --bind "$cuda_dir" "$root/usr/local/cuda"
      mount -o remount,bind,ro "$root/usr/local/cuda"
    fi
    exec chroot "$root" /usr/bin/env -i "$@"
  ' in-root "$step_root" "$step_cuda" "${passed[@]}" bash -c "${links}cd $step_dir && $1"
}

# The bootstrap runs in its own mount namespace too, so the mounts mmdebstrap
# makes in root mode cannot outlive it (exec: see in_root).
bootstrap() {
  exec unshare --mount --propagation private --pid --fork --kill-child -- \
    mmdebstrap --mode=root --variant=apt --format=directory "${apt_options[@]}" \
    "$suite" "$root" "${apt_sources[@]}"
}

# The keyrings of the sources that no package of the root provides.
copy_keyrings() {
  local keyring
  for keyring in "${source_keyrings[@]}"; do
    if [[ ! -e "$root$keyring" ]]; then
      mkdir -p "$root$(dirname "$keyring")"
      cp "$keyring" "$root$keyring"
      echo "copied $keyring"
    fi
  done
}

# The /etc/hosts an installed Debian has (the installer writes it; a
# bootstrapped root has none): localhost, and this machine's name on
# 127.0.1.1. Slurm's daemons resolve both.
write_hosts() {
  local host
  host="$(uname -n)"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' \
    "${host%%.*}" > "$root/etc/hosts"
  cat "$root/etc/hosts"
}

# The folder the CUDA toolkit is mounted on in the root.
make_cuda_mount_point() {
  mkdir -p "$root/usr/local/cuda"
  echo "$cuda_dir will be mounted read-only at /usr/local/cuda"
}

# Tracked and untracked files that git does not ignore: what a clean clone of
# this working tree holds.
copy_checkout() {
  mkdir -p "$root/strata"
  # safe.directory: the checkout may belong to another user than root.
  local git=(git -c safe.directory="$source_dir" -C "$source_dir")
  if "${git[@]}" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    ("${git[@]}" ls-files -z --cached --others --exclude-standard |
      tar -C "$source_dir" --null --files-from=- --ignore-failed-read -cf -) |
      tar -xf - -C "$root/strata"
  else
    tar -C "$source_dir" --exclude=./build -cf - . | tar -xf - -C "$root/strata"
  fi
}

# The bundle check's root: the root as bootstrapped, before the checkout
# and Strata's packages come in.
bare_root="$work/bare"
copy_bare_root() {
  cp -a "$root" "$bare_root"
  du -sh "$bare_root"
}

# Unpacks the bundle the build made into the bare root with Fashion-MNIST
# beside it (data, not a package), and checks it there.
check_bundle() {
  local archive="$root/strata/build/strata-bundle.tar.xz"
  ls -l "$archive"
  mkdir -p "$bare_root/opt/bundle" "$bare_root/opt/data"
  tar -xJf "$archive" -C "$bare_root/opt/bundle"
  cp "$root"/usr/share/datasets/fashion-mnist/*.gz "$bare_root/opt/data/"
  (in_root --bare "bash /opt/bundle/strata-*/tools/check_bundle.sh --data /opt/data")
}

say "Debian $suite root in $root, from ${apt_sources[*]}"
total_start=$SECONDS
run_step bootstrap bootstrap
run_step keyrings copy_keyrings
run_step hosts write_hosts
if [[ $bundle -eq 1 ]]; then
  run_step bare-root copy_bare_root
fi
run_step copy copy_checkout
# The test steps, each a ctest label.
test_steps=(unit cluster)
setup_option=""
if [[ $all -eq 1 ]]; then
  setup_option="--bench"
  # With the peers installed, the cluster label's checks against PyTorch run
  # instead of skipping.
  test_steps=(unit cluster accuracy)
fi
if [[ -n "$cuda_dir" ]]; then
  run_step cuda make_cuda_mount_point
fi
run_step setup in_root "bash tools/setup.sh $setup_option"
portable=OFF
[[ $bundle -eq 1 ]] && portable=ON
run_step configure in_root "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=$cuda_option -DSTRATA_PORTABLE=$portable"
run_step build in_root "cmake --build build -j \$(nproc)"
say "$(grep -h 'Strata CUDA backend' "$logs/configure.log" | sed 's/^-- //')"
for label in "${test_steps[@]}"; do
  run_step "$label-tests" in_root --own-network "cd build && ctest -L $label --output-on-failure -j \$(nproc)"
done

if [[ $bundle -eq 1 ]]; then
  run_step bundle in_root "bash tools/bundle.sh --build-dir build --out build/strata-bundle.tar.xz"
  run_step bundle-check check_bundle
  say "$(grep -h 'bundle: build/strata-bundle.tar.xz' "$logs/bundle.log" | sed 's/^bundle: //')"
  grep -h '^check-bundle: \(cpu\|gpu\):' "$logs/bundle-check.log" | sed 's/^/fresh-check: /'
fi

for label in "${test_steps[@]}"; do
  say "$label: $(grep -h 'tests passed' "$logs/$label-tests.log")"
  grep -h '(Skipped)' "$logs/$label-tests.log" | sed 's/^[[:space:]]*/fresh-check:   skipped: /' || true
done
say "PASSED in $((SECONDS - total_start)) s:"
printf '  %s\n' "${step_times[@]}"
