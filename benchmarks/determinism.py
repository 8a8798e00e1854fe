"""Determinism record: the per-iteration results of a fixed set of seeded runs, to compare across a refactor.

    python -m benchmarks.determinism --record benchmarks/results/determinism.json   # before the change
    python -m benchmarks.determinism --check benchmarks/results/determinism.json    # after: same digits?
    python -m benchmarks.determinism --check ... --runs ppo_cartpole,dqn_cartpole   # a subset

Every run below is deterministic per seed (actors are seeded, the learner consumes rollouts in a fixed order, one
torch thread per process). The asynchronous loop's agents (R2D2, NGU, Agent57, IMPALA) are not: which parameters
an actor acts with depends on timing (their learner steps per iteration are fixed, their returns are not); APPO is
recorded in its synchronous mode. Each run's results CSV is read back without the columns that measure time
(`wall_time`, `train_step_rate`) or name files (`checkpoint`); every other column (env steps, learner steps, training
and evaluation returns and episode counts) is recorded with all its digits. `--check` prints the first differing
row per run and exits 1 if any run differs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# name -> (module, flags). Budgets are the Quick Start's or a little smaller, so the whole set runs in minutes.
RUNS: dict[str, tuple[str, tuple[str, ...]]] = {
    'ppo_cartpole': ('deep_rl_zoo.ppo.run_classic', ('--environment_name=CartPole-v1', '--seed=1')),
    'dqn_cartpole': (
        'deep_rl_zoo.dqn.run_classic',
        ('--environment_name=CartPole-v1', '--seed=1', '--num_iterations=3', '--num_train_steps=20000'),
    ),
    'a2c_cartpole': (
        'deep_rl_zoo.a2c.run_classic',
        ('--environment_name=CartPole-v1', '--seed=1', '--num_iterations=3', '--num_train_steps=25000'),
    ),
    'appo_cartpole': (
        'deep_rl_zoo.appo.run_classic',
        # --noasync_rl: each update waits for one rollout of every worker, taken in worker order (asynchronous
        # collection makes the rollouts' order, and so every digit, depend on timing).
        ('--environment_name=CartPole-v1', '--seed=1', '--num_iterations=2', '--num_train_steps=20000', '--noasync_rl'),
    ),
    'ppo_pong': (
        'deep_rl_zoo.ppo.run_atari',
        ('--environment_name=Pong', '--seed=1', '--num_iterations=2', '--num_train_steps=4096', '--num_eval_steps=2000'),
    ),
}
TIME_OR_FILE_COLUMNS = ('wall_time', 'train_step_rate', 'checkpoint')


def run_once(name: str) -> list[dict[str, str]]:
    """Runs one seeded run in a temporary directory; returns its results rows without time and file columns."""
    module, flags = RUNS[name]
    with tempfile.TemporaryDirectory(prefix=f'determinism_{name}_') as directory:
        results_csv = os.path.join(directory, 'results.csv')
        command = [
            sys.executable, '-m', module, *flags,
            f'--train_dir={directory}', f'--checkpoint_dir={directory}', f'--results_csv_path={results_csv}',
            '--nouse_tensorboard', '--noprogress',
        ]
        completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        if completed.returncode != 0:
            raise RuntimeError(f'{name} failed (exit {completed.returncode}):\n{completed.stderr[-3000:]}')
        with open(results_csv, newline='') as file:
            return [{k: v for k, v in row.items() if k not in TIME_OR_FILE_COLUMNS} for row in csv.DictReader(file)]


def _git_commit() -> str:
    completed = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO_ROOT, capture_output=True, text=True)
    return completed.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument('--record', metavar='FILE', help='run every seeded run and write its rows to FILE (JSON)')
    action.add_argument('--check', metavar='FILE', help='run them again and compare with FILE')
    parser.add_argument('--runs', default=','.join(RUNS), help=f'comma-separated subset of {",".join(RUNS)}')
    args = parser.parse_args()
    names = [name for name in args.runs.split(',') if name]
    unknown = [name for name in names if name not in RUNS]
    if unknown:
        parser.error(f'--runs: unknown {", ".join(unknown)}; allowed: {", ".join(RUNS)}')
    recorded = {}
    if args.check:
        with open(args.check) as file:
            recorded = json.load(file)['runs']
    results, differing = {}, []
    for name in names:
        start = time.monotonic()
        rows = run_once(name)
        results[name] = rows
        verdict = ''
        if args.check:
            expected = recorded.get(name)
            if expected is None:
                verdict = 'not in the record'
            elif rows == expected:
                verdict = 'same digits'
            else:
                differing.append(name)
                first = next((i for i, (a, b) in enumerate(zip(rows, expected)) if a != b), min(len(rows), len(expected)))
                verdict = f'DIFFERS from row {first}: now {rows[first] if first < len(rows) else None}, ' \
                          f'recorded {expected[first] if first < len(expected) else None}'
        last = rows[-1] if rows else {}
        print(f'{name}: {len(rows)} rows, last eval {last.get("eval_episode_return")}, '
              f'{time.monotonic() - start:.0f} s {verdict}', flush=True)
    if args.record:
        commit, path = _git_commit(), Path(args.record)
        earlier = json.loads(path.read_text()) if path.exists() else {}
        if earlier.get('commit') == commit:  # a subset recorded again at the same commit: keep the other runs
            results = {**earlier['runs'], **results}
        path.write_text(json.dumps({'commit': commit, 'runs': results}, indent=1) + '\n')
        print(f'wrote {args.record}')
    return 1 if differing else 0


if __name__ == '__main__':
    sys.exit(main())
