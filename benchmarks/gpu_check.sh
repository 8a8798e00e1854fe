#!/usr/bin/env bash
# The GPU check: what CI (CPU only) cannot run. On a machine with CUDA, from the repository root:
#   1. the Atari end-to-end tests (`-m slow -k "pong or atari or breakout"`), whose learners then run on the GPU
#      (--learner_on_gpu is on by default for run_atari);
#   2. every run_atari that has --actors_on_gpu, on Pong with its preset, actors and learner on the GPU, then its
#      eval_agent on that checkpoint with the GPU hidden (a GPU checkpoint must load on a CPU-only machine);
#   3. DQN's Pong preset for a few thousand learning steps on the GPU in float32 and in bfloat16, agent steps/s.
# Writes logs under $OUT (default gpu_check_out/) and a one-line verdict per step. Usage: bash benchmarks/gpu_check.sh
# It needs the project's packages beside that machine's torch (gymnasium, ale-py, python-snappy; pytest-xdist for -n).
# Where imageio-ffmpeg is missing (66 MB: more than a device call may carry), every test that records a video ends
# with eval_agent's one line naming it; the other results stand (benchmarks/NOTEBOOK.md, the GPU check).
set -u
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), "bf16", torch.cuda.is_bf16_supported())' 2>&1 | tee -a "$summary"

# 1. The Atari end-to-end tests with CUDA visible.
workers=$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))
timeout "${TESTS_TIMEOUT:-240}" "$PY" -m pytest -q -p no:cacheprovider -n "$workers" -m slow -k "pong or atari or breakout" \
  --continue-on-collection-errors unit_tests \
  > "$OUT/atari_tests.log" 2>&1
note "atari tests: rc=$? $(tail -1 "$OUT/atari_tests.log")"

# 2. Actors and learner on the GPU, then evaluation with the GPU hidden, every agent at once.
run_on_gpu() {
  local agent=$1 dir="$OUT/runs/$1"
  mkdir -p "$dir"
  if ! "$PY" -m "deep_rl_zoo.$agent.run_atari" --helpfull 2>/dev/null | grep -q -- '--\[no\]actors_on_gpu'; then
    note "$agent: no --actors_on_gpu"; return
  fi
  timeout 120 "$PY" -m "deep_rl_zoo.$agent.run_atari" --environment_name=Pong --num_iterations=1 --num_train_steps=2000 \
    --num_eval_steps=200 --actors_on_gpu --learner_on_gpu --noprogress --nouse_tensorboard --checkpoint_dir="$dir/ck" \
    > "$dir/train.log" 2>&1
  local rc=$?
  local ckpt
  ckpt=$(ls "$dir"/ck/*_0.ckpt 2>/dev/null | head -1)
  if [ "$rc" != 0 ] || [ -z "$ckpt" ]; then
    note "$agent: train rc=$rc $(grep -E 'Error|error' "$dir/train.log" | tail -1)"; return
  fi
  CUDA_VISIBLE_DEVICES= timeout 60 "$PY" -m "deep_rl_zoo.$agent.eval_agent" --load_checkpoint_file="$ckpt" --num_eval_steps=200 \
    --recording_video_dir= > "$dir/eval.log" 2>&1
  note "$agent: train rc=0, eval on CPU rc=$? $(grep -m1 -i 'return' "$dir/eval.log")"
}
for package in deep_rl_zoo/*/run_atari.py; do  # all at once: a GPU machine has the cores
  run_on_gpu "$(basename "$(dirname "$package")")" &
done
wait

# 3. DQN's learner speed on the GPU, float32 and bfloat16 (the Pong preset: 10 envs, one batch of 32 per 10 steps).
for precision in nobf16_learning bf16_learning; do
  start=$(date +%s.%N)
  timeout 150 "$PY" -m deep_rl_zoo.dqn.run_atari --environment_name=Pong --num_iterations=1 --num_train_steps=20000 \
    --num_eval_steps=100 --"$precision" --noprogress --nouse_tensorboard --checkpoint_dir="$OUT/runs/dqn_$precision" \
    > "$OUT/dqn_$precision.log" 2>&1
  rc=$?
  note "dqn Pong preset --$precision: rc=$rc, 20,000 agent steps in $(awk "BEGIN {print $(date +%s.%N) - $start}") s from launch"
done
