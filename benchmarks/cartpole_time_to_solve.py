"""CartPole-v1 time to solve, measured the way peer libraries report it, ours against Stable-Baselines3.

    python -m benchmarks.cartpole_time_to_solve                 # PPO, seeds 1,2,3 (a few minutes)
    python -m benchmarks.cartpole_time_to_solve --also_dqn      # and DQN against SB3 DQN
    python -m benchmarks.cartpole_time_to_solve --agents=dqn    # DQN against SB3 DQN only
    python -m benchmarks.cartpole_time_to_solve --agents=dqn,c51_dqn,qr_dqn   # each against one SB3 DQN run per seed
    python -m benchmarks.cartpole_time_to_solve --skip_peers    # ours only (no scratch venv)

"Time to solve" is the wall clock from process launch until the mean return of the last 20 TRAINING episodes
reaches 475, with the env steps taken by then (all environments together). Each run is stopped as soon as it
solves, or after --budget_s seconds, or when its own step budget ends; runs go strictly one at a time.

* Ours: `python -m deep_rl_zoo.<agent>.run_classic --num_eval_steps=0 --nouse_tensorboard --noprogress
  --episodes_csv_path=...` with the run script's own settings for CartPole-v1 (PPO: its defaults, the
  rl-baselines3-zoo hyperparameters, 100k steps; DQN and the rest of the value family: their CartPole-v1 presets,
  deep_rl_zoo/<agent>/settings.py, 50k steps). The episodes CSV (unix time, env_steps, return, steps) is polled; an episode's time is the one
  the learner wrote when it received the episode's rollout.
* SB3: `/work/shared/peers/sb3_cartpole.py --algo <ppo|dqn> --seed S`, unbuffered (our value agents all face SB3's
  DQN, run once per seed); its
  `global_step=N, episodic_return=[R]` lines are stamped as they arrive. It runs in a scratch venv
  (default /tmp/peer-venv) that this script creates when missing: never a dependency of the project.

The table is printed and saved to benchmarks/results/cartpole_time_to_solve.md; each run's log and CSVs stay
under benchmarks/results/raw/cartpole_time_to_solve/ (ignored by git).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import os
import queue
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
PEER_VENV = Path('/tmp/peer-venv')
PEER_PACKAGES = ('torch==2.13.0', 'stable-baselines3==2.9.2', 'gymnasium==1.4.0')
PEER_IMPORTS = ('torch', 'stable_baselines3', 'gymnasium')
_SB3_EPISODE = re.compile(r'global_step=(\d+), episodic_return=\[([^\]]+)\]')
_POLL_SECONDS = 0.1


def default_peers_dir() -> Path:
    """shared/peers beside the repository (the layout of the developers' machines and CI)."""
    return REPO_ROOT.parent / 'shared' / 'peers'


def ensure_peer_venv(venv: Path, packages: tuple[str, ...], imports: tuple[str, ...]) -> Path:
    """Returns the python of the scratch venv `venv`, creating it and installing `packages` when `imports` fail.

    The venv is a measuring tool outside the project: nothing of the project depends on it.
    """
    python = venv / 'bin' / 'python'
    check = [str(python), '-c', 'import ' + ', '.join(imports)]
    if python.exists() and subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return python
    if not python.exists():
        print(f'creating the peer venv {venv} (python3 -m venv)', flush=True)
        subprocess.run(['python3', '-m', 'venv', str(venv)], check=True)
    print(f'installing into {venv}: {" ".join(packages)} (a few minutes, once)', flush=True)
    subprocess.run([str(python), '-m', 'pip', 'install', '--quiet', *packages], check=True)
    if subprocess.run(check, capture_output=True, check=False).returncode != 0:
        raise SystemExit(f'error: the peer venv {venv} cannot import {", ".join(imports)} after installing; delete it and retry')
    return python


@dataclasses.dataclass
class SolveResult:
    """One run: when (seconds from launch) and at how many env steps the last-20 mean reached the target."""

    who: str
    seed: int
    solved: bool
    seconds: float  # nan when not solved
    env_steps: int  # at the solve, or the last seen when not solved
    best_mean: float  # best mean of `window` consecutive episodes seen
    episodes: int
    run_seconds: float  # how long the process ran
    exit_note: str  # how the run ended


class SolveTracker:
    """Mean of the last `window` training episodes, and the first moment it reaches `target`."""

    def __init__(self, window: int, target: float):
        self.window = window
        self.target = target
        self.returns: collections.deque[float] = collections.deque(maxlen=window)
        self.episodes = 0
        self.best_mean = math.nan
        self.env_steps = 0
        self.solved_at: Optional[tuple[float, int]] = None  # (seconds, env_steps)

    def add(self, seconds: float, env_steps: int, episode_return: float) -> bool:
        """Adds one finished episode; returns True when this one makes the window mean reach the target."""
        self.returns.append(episode_return)
        self.episodes += 1
        self.env_steps = env_steps
        if len(self.returns) < self.window:
            return False
        mean = sum(self.returns) / self.window
        self.best_mean = mean if math.isnan(self.best_mean) else max(self.best_mean, mean)
        if self.solved_at is None and mean >= self.target:
            self.solved_at = (seconds, env_steps)
            return True
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _result(who: str, seed: int, tracker: SolveTracker, run_seconds: float, note: str) -> SolveResult:
    solved = tracker.solved_at is not None
    return SolveResult(
        who=who,
        seed=seed,
        solved=solved,
        seconds=tracker.solved_at[0] if solved else math.nan,
        env_steps=tracker.solved_at[1] if solved else tracker.env_steps,
        best_mean=tracker.best_mean,
        episodes=tracker.episodes,
        run_seconds=run_seconds,
        exit_note=note,
    )


class _CsvFollower:
    """Yields the complete new rows of a CSV that another process appends to."""

    def __init__(self, path: Path):
        self.path = path
        self._offset = 0
        self._columns: Optional[list[str]] = None

    def new_rows(self) -> list[dict[str, str]]:
        if not self.path.exists():
            return []
        with open(self.path, encoding='utf-8') as file:
            file.seek(self._offset)
            text = file.read()
        complete = text[: text.rfind('\n') + 1]
        self._offset += len(complete.encode('utf-8'))
        rows = []
        for line in complete.splitlines():
            fields = line.split(',')
            if self._columns is None:
                self._columns = fields
            elif len(fields) == len(self._columns):
                rows.append(dict(zip(self._columns, fields)))
        return rows


def measure_ours(agent: str, seed: int, args: argparse.Namespace, run_dir: Path) -> SolveResult:
    """Launches our run script and follows its episodes CSV until solved, budget, or exit."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    episodes_csv = run_dir / 'episodes.csv'
    command = [
        sys.executable, '-m', f'deep_rl_zoo.{agent}.run_classic',
        '--environment_name=CartPole-v1', f'--seed={seed}', '--num_eval_steps=0', '--nouse_tensorboard', '--noprogress',
        f'--episodes_csv_path={episodes_csv}', f'--results_csv_path={run_dir / "results.csv"}', f'--checkpoint_dir={run_dir / "checkpoints"}',
        *shlex.split(args.extra_flags),
    ]
    tracker = SolveTracker(args.window, args.target)
    follower = _CsvFollower(episodes_csv)
    with open(run_dir / 'log.txt', 'w', encoding='utf-8') as log:
        log.write(' '.join(shlex.quote(part) for part in command) + '\n')
        log.flush()
        launch_unix, launch = time.time(), time.monotonic()
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
        note = 'budget'
        try:
            while time.monotonic() - launch < args.budget_s:
                exited = process.poll() is not None
                for row in follower.new_rows():
                    if tracker.add(float(row['time']) - launch_unix, int(row['env_steps']), float(row['return'])):
                        break
                if tracker.solved_at is not None:
                    note = 'solved'
                    break
                if exited:
                    note = f'exited {process.returncode}'
                    break
                time.sleep(_POLL_SECONDS)
        finally:
            _stop(process)
    return _result(f'ours {agent.upper()}', seed, tracker, time.monotonic() - launch, note)


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put((time.monotonic(), line))
    lines.put((time.monotonic(), None))


def measure_sb3(agent: str, seed: int, args: argparse.Namespace, run_dir: Path, python: Path) -> SolveResult:
    """Launches the SB3 peer script and stamps its episode lines as they arrive."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    script = Path(args.peers_dir) / 'sb3_cartpole.py'
    if not script.exists():
        raise SystemExit(f'error: no peer script {script}: pass --peers_dir')
    command = [str(python), '-u', str(script), '--algo', agent, '--seed', str(seed)]
    tracker = SolveTracker(args.window, args.target)
    lines: queue.Queue = queue.Queue()
    with open(run_dir / 'log.txt', 'w', encoding='utf-8') as log:
        log.write(' '.join(shlex.quote(part) for part in command) + '\n')
        launch = time.monotonic()
        process = subprocess.Popen(
            command, cwd=run_dir, stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, 'PYTHONUNBUFFERED': '1'}
        )
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        note = 'budget'
        try:
            while (left := args.budget_s - (time.monotonic() - launch)) > 0:
                try:
                    arrival, line = lines.get(timeout=min(left, 1.0))
                except queue.Empty:
                    continue
                if line is None:
                    note = f'exited {process.wait()}'
                    break
                log.write(line)
                match = _SB3_EPISODE.search(line)
                if match and tracker.add(arrival - launch, int(match.group(1)), float(match.group(2))):
                    note = 'solved'
                    break
        finally:
            _stop(process)
            reader.join(5)
    return _result(f'SB3 {agent.upper()}', seed, tracker, time.monotonic() - launch, note)


def _median(values: list[float]) -> float:
    """Median with an unsolved run counted as never (inf)."""
    return statistics.median(values) if values else math.nan


def _cell_seconds(result: Optional[SolveResult]) -> str:
    if result is None:
        return 'n/a'
    if result.solved:
        return f'{result.seconds:.1f}'
    best = 'n/a' if math.isnan(result.best_mean) else f'{result.best_mean:.0f}'
    return f'not solved ({result.exit_note} at {result.run_seconds:.0f} s, best mean {best})'


def _cell_steps(result: Optional[SolveResult]) -> str:
    if result is None:
        return 'n/a'
    return f'{result.env_steps:,}' if result.solved else f'({result.env_steps:,} seen)'


def _format_median(value: float, digits: int, suffix: str = '') -> str:
    if math.isnan(value):
        return 'n/a'
    if math.isinf(value):
        return 'not solved'
    return f'{value:,.{digits}f}{suffix}'


# The SB3 algorithm each of our agents is timed against: the peer script runs PPO and DQN.
PEER_ALGORITHM = {'ppo': 'ppo', 'dqn': 'dqn', 'double_dqn': 'dqn', 'prioritized_dqn': 'dqn', 'c51_dqn': 'dqn', 'qr_dqn': 'dqn', 'rainbow': 'dqn'}


def table(agent: str, ours: list[SolveResult], peers: list[SolveResult], args: argparse.Namespace) -> str:
    """A markdown table: seconds and env steps per seed, medians, and the ratio ours / SB3."""
    name, peer_name = agent.upper(), PEER_ALGORITHM[agent].upper()
    peer_by_seed = {r.seed: r for r in peers}
    lines = [
        f'## {name}: ours vs Stable-Baselines3 {peer_name} (mean of last {args.window} training episodes >= {args.target:g})',
        '',
        f'| seed | ours {name} (s) | ours env steps | SB3 {peer_name} (s) | SB3 env steps |',
        '|---:|---:|---:|---:|---:|',
    ]
    for result in ours:
        peer = peer_by_seed.get(result.seed)
        lines.append(f'| {result.seed} | {_cell_seconds(result)} | {_cell_steps(result)} | {_cell_seconds(peer)} | {_cell_steps(peer)} |')

    def medians(results: list[SolveResult]) -> tuple[float, float]:
        return (
            _median([r.seconds if r.solved else math.inf for r in results]),
            _median([float(r.env_steps) if r.solved else math.inf for r in results]),
        )

    our_seconds, our_steps = medians(ours)
    peer_seconds, peer_steps = medians(peers) if peers else (math.nan, math.nan)
    lines.append(
        f'| median | {_format_median(our_seconds, 1)} | {_format_median(our_steps, 0)} | '
        f'{_format_median(peer_seconds, 1)} | {_format_median(peer_steps, 0)} |'
    )
    lines.append('')
    if all(math.isfinite(v) for v in (our_seconds, our_steps, peer_seconds, peer_steps)):
        lines.append(
            f'Ratio ours / SB3 (medians): {our_seconds / peer_seconds:.2f}x the seconds, {our_steps / peer_steps:.2f}x the env steps '
            '(below 1: ours solves sooner).'
        )
    else:
        lines.append('Ratio ours / SB3: n/a (a side did not solve for half the seeds or more, or was not run).')
    return '\n'.join(lines) + '\n'


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seeds', default='1,2,3', help='comma-separated seeds')
    parser.add_argument('--budget_s', type=float, default=300.0, help='each run is stopped after this many seconds')
    parser.add_argument('--also_dqn', action='store_true', help='also our DQN against SB3 DQN (the same as --agents=ppo,dqn)')
    parser.add_argument('--agents', default='', help=f'comma-separated agents to measure, of {", ".join(PEER_ALGORITHM)} (default: ppo)')
    parser.add_argument('--skip_peers', action='store_true', help='run only our side')
    parser.add_argument('--target', type=float, default=475.0, help='mean training return that counts as solved')
    parser.add_argument('--window', type=int, default=20, help='episodes in the mean')
    parser.add_argument('--extra_flags', default='', help="flags added to our run script's command line; use the = form: --extra_flags='--num_epochs=10'")
    parser.add_argument('--peer_venv', default=str(PEER_VENV), help='scratch venv of the peers (created when missing)')
    parser.add_argument('--peers_dir', default=str(default_peers_dir()), help='directory of the peer scripts')
    parser.add_argument('--out', default='benchmarks/results/cartpole_time_to_solve.md', help='markdown file of the table')
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.window < 1 or args.budget_s <= 0:
        parser.error('need --window >= 1 and --budget_s > 0')
    args.agents = [agent for agent in args.agents.split(',') if agent] or (['ppo', 'dqn'] if args.also_dqn else ['ppo'])
    unknown = [agent for agent in args.agents if agent not in PEER_ALGORITHM]
    if unknown:
        parser.error(f'--agents takes {", ".join(PEER_ALGORITHM)} (PPO and the value family, timed against SB3\'s PPO and DQN), got {",".join(unknown)}')
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    seeds = [int(seed) for seed in args.seeds.split(',') if seed.strip()]
    out = Path(args.out).resolve()
    raw = out.parent / 'raw' / out.stem
    python = None if args.skip_peers else ensure_peer_venv(Path(args.peer_venv), PEER_PACKAGES, PEER_IMPORTS)
    sections = []
    peers_of: dict[str, list[SolveResult]] = {}  # SB3 algorithm -> its runs, measured once for every agent facing it
    for agent in args.agents:
        ours: list[SolveResult] = []
        peer = PEER_ALGORITHM[agent]
        measure_peer = python is not None and peer not in peers_of
        peers = peers_of.setdefault(peer, [])
        jobs: list[tuple[str, Callable[[], SolveResult], list[SolveResult]]] = []
        for seed in seeds:
            jobs.append((f'ours {agent} seed {seed}', lambda a=agent, s=seed: measure_ours(a, s, args, raw / f'ours_{a}_seed{s}'), ours))
            if measure_peer:
                jobs.append((f'SB3 {peer} seed {seed}', lambda a=peer, s=seed: measure_sb3(a, s, args, raw / f'sb3_{a}_seed{s}', python), peers))
        for label, measure, results in jobs:  # strictly one process at a time
            result = measure()
            results.append(result)
            what = f'solved in {result.seconds:.1f} s at {result.env_steps:,} env steps' if result.solved else f'not solved ({result.exit_note})'
            print(f'{label}: {what}; {result.episodes} episodes, ran {result.run_seconds:.1f} s', flush=True)
        sections.append(table(agent, ours, peers, args))
    report = '\n'.join(
        [
            '# CartPole-v1 time to solve (as peers measure it)',
            '',
            f'`python -m benchmarks.cartpole_time_to_solve {" ".join(shlex.quote(a) for a in args.argv)}`',
            '',
            f'Wall clock from process launch (imports included) until the mean of the last {args.window} training episodes '
            f'reaches {args.target:g}; env steps count all environments. Runs one at a time, each capped at {args.budget_s:g} s. '
            'Ours: the run script\'s CartPole-v1 settings (PPO: its defaults; the value family: its preset) with --num_eval_steps=0 '
            '--nouse_tensorboard; SB3: the rl-baselines3-zoo hyperparameters (/work/shared/peers/sb3_cartpole.py).',
            '',
            *sections,
        ]
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding='utf-8')
    print()
    print(report)
    print(f'wrote {out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
