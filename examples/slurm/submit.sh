#!/bin/bash
# A whole cluster run submitted at once as a chain of jobs:
#
#   TRAIN=train.svm TEST=test.svm WORK=run TRAIN_OPTIONS="-c 0.1 --seed 1" \
#       examples/slurm/submit.sh N_BLOCKS N_SHARDS
#
# train.sbatch as an array of N_BLOCKS tasks -> merge.sbatch after all of them
# -> predict.sbatch as an array of N_SHARDS tasks -> eval.sbatch, each stage
# started by the scheduler when the previous one succeeded (afterok; a failure
# cancels the rest).  Memory per task (--mem) is hsvm's estimate
# (python -m hsvm_cli.support.resources); CPUS (default 1) CPUs per task.
# With WAIT=1 the script waits for the last job (sbatch --wait) and exits with
# its status.  Prints the job ids.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N_BLOCKS=${1:?usage: submit.sh N_BLOCKS N_SHARDS}
N_SHARDS=${2:?usage: submit.sh N_BLOCKS N_SHARDS}
: "${TRAIN:?set TRAIN}" "${TEST:?set TEST}" "${WORK:?set WORK}"
export TRAIN TEST WORK N_BLOCKS N_SHARDS TRAIN_OPTIONS=${TRAIN_OPTIONS:-} PREDICT_OPTIONS=${PREDICT_OPTIONS:-}
PYTHON=${PYTHON:-python3}
CPUS=${CPUS:-1}
SBATCH=${SBATCH:-sbatch}
mkdir -p "$WORK"
# shellcheck disable=SC2086
mem_train=$($PYTHON -m hsvm_cli.support.resources train "$TRAIN" --blocks "$N_BLOCKS" -j "$CPUS" $TRAIN_OPTIONS)
# shellcheck disable=SC2086
mem_predict=$($PYTHON -m hsvm_cli.support.resources predict --train "$TRAIN" "$TEST" $TRAIN_OPTIONS)
chain=(--parsable --kill-on-invalid-dep=yes)
train=$($SBATCH "${chain[@]}" --array=0-$((N_BLOCKS - 1)) --cpus-per-task="$CPUS" --mem="${mem_train}M" \
    "$here/train.sbatch")
merge=$($SBATCH "${chain[@]}" --dependency=afterok:"${train%%;*}" "$here/merge.sbatch")
predict=$($SBATCH "${chain[@]}" --dependency=afterok:"${merge%%;*}" --array=0-$((N_SHARDS - 1)) \
    --cpus-per-task="$CPUS" --mem="${mem_predict}M" "$here/predict.sbatch")
echo "train ${train%%;*} merge ${merge%%;*} predict ${predict%%;*}"
wait=()
[ "${WAIT:-0}" = 1 ] && wait=(--wait)
$SBATCH "${chain[@]}" "${wait[@]}" --dependency=afterok:"${predict%%;*}" "$here/eval.sbatch"
