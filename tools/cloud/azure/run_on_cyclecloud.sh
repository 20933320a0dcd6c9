#!/usr/bin/env bash
# Trains a Strata job on an Azure CycleCloud Slurm cluster, end to end:
# imports tools/cloud/azure/strata-slurm.txt, creates the cluster from
# strata-params.json with your subnet and region (unless it exists), starts
# it and waits for the scheduler, copies this checkout to its /shared, builds
# it there, submits tools/cloud/slurm/strata.sbatch (CURVE on), waits for
# the job, fetches its summary and logs, and terminates the cluster it made
# (unless --keep-cluster), also when a step fails.
#
#   tools/cloud/azure/run_on_cyclecloud.sh --subnet RG/VNET/SUBNET [--region eastus] \
#       --ssh-key ~/.ssh/cyclecloud.pem [--cluster-name strata] [--partition cpu|gpu] \
#       [--nodes 4] [--tasks-per-node 2] [--job configs/fashion_mnist.json] \
#       [--keep-cluster] [--dry-run] [-- strata_launch flags]
#
# --dry-run prints every command and runs none (no credentials needed).
# Without it, the cyclecloud CLI must be initialised (cyclecloud initialize;
# it checks with `cyclecloud show_cluster`), and ssh and rsync present.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "$here/../../.." && pwd)"
# shellcheck source=SCRIPTDIR/../cloud_run.sh
. "$here/../cloud_run.sh"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run_on_cyclecloud: $*" >&2; exit 2; }

subnet="" region="eastus"
while [[ $# -gt 0 ]]; do
  if common_flag "$@"; then
    shift "$SHIFT_BY"
    continue
  fi
  case "$1" in
    --subnet) subnet="$2"; shift ;;
    --region) region="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[[ -n "$subnet" ]] || die "--subnet RESOURCE_GROUP/VNET/SUBNET is required (see --help)"
problem="$(check_common "$source_dir")" || die "$problem"

if [[ "$DRY_RUN" != 1 ]]; then
  for tool in cyclecloud ssh rsync; do
    command -v "$tool" > /dev/null || die "$tool is missing (or use --dry-run)"
  done
  cyclecloud show_cluster > /dev/null 2>&1 ||
    die "the cyclecloud CLI is not initialised (cyclecloud initialize); nothing was created"
fi

work="$(mktemp -d)"
# Whatever happens from here on, a cluster this run made is not left
# running (and costing) unless --keep-cluster; one that was there before
# stays.
created=0
finish() {
  local status=$?
  if [[ "$KEEP" != 1 && "$created" == 1 ]]; then
    run cyclecloud terminate_cluster "$CLUSTER" || status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap finish EXIT
params="$work/strata-params.json"
sed -e "s|\"REPLACE_RESOURCE_GROUP/REPLACE_VNET/REPLACE_SUBNET\"|\"$subnet\"|" \
  -e "s|\"Region\": \"eastus\"|\"Region\": \"$region\"|" "$here/strata-params.json" > "$params"

run cyclecloud import_template strata-slurm -f "$here/strata-slurm.txt" --force
if [[ "$DRY_RUN" == 1 ]] || ! cyclecloud show_cluster "$CLUSTER" > /dev/null 2>&1; then
  created=1
  run cyclecloud create_cluster strata-slurm "$CLUSTER" -p "$params"
fi
run cyclecloud start_cluster "$CLUSTER"
echo "waiting for $CLUSTER's scheduler to be Ready"
head_ip="SCHEDULER_IP"
if [[ "$DRY_RUN" != 1 ]]; then
  while true; do
    state="$(cyclecloud show_nodes scheduler -c "$CLUSTER" --states 2> /dev/null || true)"
    [[ "$state" == *Ready* ]] && break
    [[ "$state" == *Failed* ]] && die "the scheduler of $CLUSTER failed (cyclecloud show_nodes)"
    sleep 30
  done
  head_ip="$(cyclecloud show_nodes scheduler -c "$CLUSTER" --output '%(PublicIp)s' | head -n 1)"
fi
HEAD="cyclecloud@$head_ip"
run_strata_job "$source_dir"
