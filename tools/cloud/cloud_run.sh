# shellcheck shell=bash
# The variables this file sets are read by the scripts that source it.
# shellcheck disable=SC2034
# What the cloud scripts (aws/run_on_parallelcluster.sh,
# azure/run_on_cyclecloud.sh) share once their cluster is up: copy this
# checkout to the head node's shared file system, build it there, submit
# tools/cloud/slurm/strata.sbatch (CURVE on, its default) and fetch the
# run's results. Sourced, not run.
#
# Every command goes through `run`, which prints it and, with DRY_RUN=1,
# does nothing else. The flags both scripts take are read by common_flag
# into the variables below; a script sets HEAD (user@host of its head node)
# before run_strata_job.

DRY_RUN="${DRY_RUN:-0}"
SSH_KEY=""
CLUSTER="strata"
PARTITION="cpu"
NODES=4
TASKS_PER_NODE=2
JOB="configs/fashion_mnist.json"
KEEP=0
LAUNCH_FLAGS=(--mode stanza --servers 1 --fc-workers 1)
REMOTE_DIR="/shared/strata"

# Reads one flag both scripts take from "$@" (--ssh-key, --cluster-name,
# --partition, --nodes, --tasks-per-node, --job, --keep-cluster, --dry-run,
# and -- before strata_launch's flags); sets SHIFT_BY to the words it used.
# Returns 1 for any other flag.
common_flag() {
  SHIFT_BY=2
  case "$1" in
    --ssh-key) SSH_KEY="$2" ;;
    --cluster-name) CLUSTER="$2" ;;
    --partition) PARTITION="$2" ;;
    --nodes) NODES="$2" ;;
    --tasks-per-node) TASKS_PER_NODE="$2" ;;
    --job) JOB="$2" ;;
    --keep-cluster) KEEP=1; SHIFT_BY=1 ;;
    --dry-run) DRY_RUN=1; SHIFT_BY=1 ;;
    --) shift; LAUNCH_FLAGS=("$@"); SHIFT_BY=$(($# + 1)) ;;
    *) return 1 ;;
  esac
}

# Checks the common flags against the checkout at $1; prints what is wrong
# and returns 1.
check_common() {
  if [[ "$PARTITION" != cpu && "$PARTITION" != gpu ]]; then
    echo "--partition cpu or gpu, not '$PARTITION'"
    return 1
  fi
  if [[ ! -f "$1/$JOB" ]]; then
    echo "no job config $JOB in this checkout"
    return 1
  fi
}

# Prints the command, quoted so that it can be pasted; runs it unless this
# is a dry run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  [[ "$DRY_RUN" == 1 ]] || "$@"
}

ssh_options() {
  local options=(-o StrictHostKeyChecking=accept-new -o ServerAliveInterval=30)
  [[ -n "${SSH_KEY:-}" ]] && options+=(-i "$SSH_KEY")
  printf '%s\n' "${options[@]}"
}

# Runs a shell command line on the head node.
on_head() {
  local options
  mapfile -t options < <(ssh_options)
  run ssh "${options[@]}" "$HEAD" "$1"
}

# Copies the checkout at $1 (without build outputs) to REMOTE_DIR on the
# head node.
copy_checkout() {
  local source_dir="$1" options
  mapfile -t options < <(ssh_options)
  on_head "mkdir -p $(printf '%q' "$REMOTE_DIR")"
  run rsync -az --delete --exclude build/ --exclude .git/ -e "ssh ${options[*]}" \
    "$source_dir/" "$HEAD:$REMOTE_DIR/"
}

# Installs what Strata needs and builds it on the head node (the compute
# nodes see the build through the shared file system).
build_on_head() {
  on_head "cd $(printf '%q' "$REMOTE_DIR") && sudo bash tools/setup.sh && make build"
}

# Submits strata.sbatch for JOB (a config path inside the checkout) on
# PARTITION with NODES x TASKS_PER_NODE tasks and the strata_launch flags
# that follow, waits for it, and leaves its summary and logs in
# REMOTE_DIR/cloud-runs/RUN_ID.
submit_job() {
  local run_id="$1" partition="$2" nodes="$3" tasks_per_node="$4" job="$5"
  shift 5
  local remote
  remote="$(printf '%q' "$REMOTE_DIR")"
  on_head "cd $remote && mkdir -p cloud-runs/$run_id && STRATA_LOG_DIR=$remote/cloud-runs/$run_id/logs \
sbatch --wait --partition $partition --nodes $nodes --ntasks-per-node $tasks_per_node \
--output cloud-runs/$run_id/job.out tools/cloud/slurm/strata.sbatch $(printf '%q' "$job") \
--summary-out $remote/cloud-runs/$run_id/summary.json $(printf '%q ' "$@")"
}

# Copies REMOTE_DIR/cloud-runs/RUN_ID (summary, job output, per-role logs)
# to RESULTS/RUN_ID here.
fetch_results() {
  local run_id="$1" results="$2" options
  mapfile -t options < <(ssh_options)
  run mkdir -p "$results"
  run rsync -az --exclude keys/ -e "ssh ${options[*]}" "$HEAD:$REMOTE_DIR/cloud-runs/$run_id" \
    "$results/"
  echo "results in $results/$run_id (summary.json, job.out, logs/)"
}

# The whole run once the cluster is up: the checkout at $1 copied and
# built on the head node, JOB submitted on PARTITION, the results fetched
# to $1/cloud-results.
run_strata_job() {
  local source_dir="$1" run_id
  run_id="$(date -u +%Y%m%d-%H%M%S)"
  copy_checkout "$source_dir"
  build_on_head
  submit_job "$run_id" "$PARTITION" "$NODES" "$TASKS_PER_NODE" "$JOB" "${LAUNCH_FLAGS[@]}"
  fetch_results "$run_id" "$source_dir/cloud-results"
}
