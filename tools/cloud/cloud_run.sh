# shellcheck shell=bash
# What the cloud scripts (aws/run_on_parallelcluster.sh,
# azure/run_on_cyclecloud.sh) share once their cluster is up: copy this
# checkout to the head node's shared file system, build it there, submit
# tools/cloud/slurm/strata.sbatch (CURVE on, its default) and fetch the
# run's results. Sourced, not run.
#
# Every command goes through `run`, which prints it and, with DRY_RUN=1,
# does nothing else. The caller sets HEAD (user@host of the head node),
# SSH_KEY (a private key file, or ""), REMOTE_DIR (the checkout's place on
# the shared file system) and RESULTS (a local folder).

DRY_RUN="${DRY_RUN:-0}"

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

# Copies this checkout (without build outputs) to REMOTE_DIR on the head node.
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
  local run_id="$1" options
  mapfile -t options < <(ssh_options)
  run mkdir -p "$RESULTS"
  run rsync -az -e "ssh ${options[*]}" "$HEAD:$REMOTE_DIR/cloud-runs/$run_id" "$RESULTS/"
  echo "results in $RESULTS/$run_id (summary.json, job.out, logs/)"
}
