#!/usr/bin/env bash
# Trains a Strata job on an AWS ParallelCluster 3 Slurm cluster, end to end:
# creates the cluster from tools/cloud/aws/pcluster.yaml (unless it exists),
# waits for it, copies this checkout to the head node's /shared, builds it
# there, submits tools/cloud/slurm/strata.sbatch (CURVE on), waits for the
# job, fetches its summary and logs, and deletes the cluster it made (unless
# --keep-cluster), also when a step fails.
#
#   tools/cloud/aws/run_on_parallelcluster.sh --region us-east-2 --subnet subnet-0abc \
#       --key-name my-key --ssh-key ~/.ssh/my-key.pem \
#       [--cluster-name strata] [--partition cpu|gpu] [--nodes 4] [--tasks-per-node 2] \
#       [--job configs/fashion_mnist.json] [--keep-cluster] [--dry-run] [-- strata_launch flags]
#
# --dry-run prints every command and runs none (no credentials needed).
# Without --dry-run it needs the pcluster CLI (pip install aws-parallelcluster),
# the aws CLI with credentials (it checks them first), ssh and rsync.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source_dir="$(cd "$here/../../.." && pwd)"
# shellcheck source=SCRIPTDIR/../cloud_run.sh
. "$here/../cloud_run.sh"

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run_on_parallelcluster: $*" >&2; exit 2; }

region="" subnet="" key_name=""
while [[ $# -gt 0 ]]; do
  if common_flag "$@"; then
    shift "$SHIFT_BY"
    continue
  fi
  case "$1" in
    --region) region="$2"; shift ;;
    --subnet) subnet="$2"; shift ;;
    --key-name) key_name="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
[[ -n "$region" && -n "$subnet" && -n "$key_name" ]] ||
  die "--region, --subnet and --key-name are required (see --help)"
problem="$(check_common "$source_dir")" || die "$problem"

if [[ "$DRY_RUN" != 1 ]]; then
  for tool in pcluster aws ssh rsync; do
    command -v "$tool" > /dev/null || die "$tool is missing (or use --dry-run)"
  done
  aws sts get-caller-identity > /dev/null 2>&1 ||
    die "no AWS credentials (aws configure, or AWS_PROFILE); nothing was created"
fi

work="$(mktemp -d)"
# Whatever happens from here on, a cluster this run made is not left
# running (and costing) unless --keep-cluster; one that was there before
# stays.
created=0
finish() {
  local status=$?
  if [[ "$KEEP" != 1 && "$created" == 1 ]]; then
    run pcluster delete-cluster --cluster-name "$CLUSTER" --region "$region" || status=1
  fi
  rm -rf "$work"
  exit "$status"
}
trap finish EXIT
config="$work/pcluster.yaml"
sed -e "s|REPLACE_REGION|$region|" -e "s|REPLACE_SUBNET|$subnet|g" \
  -e "s|REPLACE_KEY_NAME|$key_name|" "$here/pcluster.yaml" > "$config"

status() {
  pcluster describe-cluster --cluster-name "$CLUSTER" --region "$region" \
    --query clusterStatus 2> /dev/null | tr -d '"' || true
}
if [[ "$DRY_RUN" == 1 || "$(status)" == "" ]]; then
  created=1
  run pcluster create-cluster --cluster-name "$CLUSTER" --region "$region" \
    --cluster-configuration "$config"
fi
echo "waiting for $CLUSTER to be CREATE_COMPLETE"
if [[ "$DRY_RUN" != 1 ]]; then
  while true; do
    state="$(status)"
    [[ "$state" == CREATE_COMPLETE || "$state" == UPDATE_COMPLETE ]] && break
    [[ "$state" == *FAILED* ]] && die "cluster $CLUSTER is $state (see pcluster describe-cluster)"
    sleep 30
  done
fi
head_ip="HEAD_NODE_IP"
if [[ "$DRY_RUN" != 1 ]]; then
  head_ip="$(pcluster describe-cluster --cluster-name "$CLUSTER" --region "$region" \
    --query headNode.publicIpAddress | tr -d '"')"
fi
HEAD="ubuntu@$head_ip"
run_strata_job "$source_dir"
