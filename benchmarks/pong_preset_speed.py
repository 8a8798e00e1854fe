"""What each agent's Pong run costs on this machine: the agent steps/s of its Pong preset and the hours of training its
2M agent steps would take (issue 22).

    python -m benchmarks.pong_preset_speed                                  # all 21 agents, about 30 minutes
    python -m benchmarks.pong_preset_speed --agents dqn,sac --seconds 120

Each agent's `run_atari --environment_name=Pong` (its preset; no evaluation, no TensorBoard) trains for `--seconds`
(`--train_for_seconds`), one agent after another, never two at once. Its progress lines (one every 10 s) are stamped
as they arrive; the rate is the agent steps from the first line past `--warmup_seconds` (start-up, the replay agents'
first few hundred steps before learning, the curiosity agents' observation statistics) to the last line before the
run's end. The table gives each agent's rate, the hours 2M agent steps take at it (training only: the greedy
evaluations come on top) and the learner steps the run made: a run with fewer than `--min_learner_steps` timed its
acting alone, so it gets no hours. R2D2, NGU and Agent57 fill a replay of sequences before their learner starts and
the actors run ahead of it at first, so a short window overstates their rate: they are measured apart, with
`--agents r2d2,ngu,agent57 --seconds 300 --warmup_seconds 150 --out benchmarks/results/pong_preset_speed_sequences.md
--raw_dir benchmarks/results/raw/pong_preset_speed_sequences`. `--extra_flags` times a setting on top of the presets
(`--extra_flags='r2d2:--learner_threads=1'`). Run it on a quiet machine: the rates of a busy 2-core machine are low.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Optional

import torch

from benchmarks.atari_throughput import read_stamped, run_stamped
from benchmarks.dqn_atari_throughput import learning_phase_rate, load_average, ours_marks
from benchmarks.learning import agent_flags
from deep_rl_zoo import settings
from deep_rl_zoo.networks.common import bf16_is_native

REPO_ROOT = Path(__file__).resolve().parents[1]
AGENTS = sorted(path.parent.name for path in (REPO_ROOT / 'deep_rl_zoo').glob('*/run_atari.py'))
PONG_BUDGET_STEPS = settings.PONG_BUDGET['num_iterations'] * settings.PONG_BUDGET['num_train_steps']
MIN_WINDOW_SECONDS = 30  # two progress lines at a 10 s cadence, checked once per update, with room for a slow start-up


def command_line(agent: str, args: argparse.Namespace, run_dir: Path) -> list[str]:
    """The agent's run_atari on its Pong preset for `args.seconds`, with the --extra_flags that apply to it on top."""
    return [
        sys.executable, '-u', '-m', f'deep_rl_zoo.{agent}.run_atari', '--environment_name=Pong', '--num_iterations=1',
        f'--num_train_steps={PONG_BUDGET_STEPS}', f'--train_for_seconds={args.seconds}', '--num_eval_steps=0', '--nouse_tensorboard',
        f'--seed={args.seed}', f'--results_csv_path={run_dir / "results.csv"}', f'--checkpoint_dir={run_dir / "checkpoints"}',
        f'--train_dir={run_dir}', *agent_flags(args.extra_flags, agent),
    ]  # fmt: skip


def measure(agent: str, args: argparse.Namespace, run_dir: Path) -> dict[str, float]:
    """The agent's Pong preset for `args.seconds`: its steady agent steps/s and the learner steps it made."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    command = command_line(agent, args, run_dir)
    print(f'{agent}: {" ".join(command[3:])}', flush=True)
    _, _, returncode = run_stamped(command, REPO_ROOT, run_dir / 'log.txt')
    if returncode != 0:
        raise SystemExit(f'error: {agent} exited with code {returncode}; see {run_dir / "log.txt"}')
    return read_run(agent, args, run_dir)


def read_run(agent: str, args: argparse.Namespace, run_dir: Path) -> dict[str, float]:
    """The rate and learner steps of an agent's run from its directory: the stamped log and the results row."""
    log = run_dir / 'log.txt'
    if not log.is_file():
        raise SystemExit(f'error: no run of {agent} in {run_dir} to --reuse')
    marks = [(at, steps) for at, steps in ours_marks(read_stamped(log)) if at >= args.warmup_seconds]
    rate = learning_phase_rate(marks, 0)
    if len(marks) < 2:
        print(
            f'{agent}: {len(marks)} progress line(s) after --warmup_seconds={args.warmup_seconds} in {log}: no rate; a slow start-up '
            'ate the window: raise --seconds',
            flush=True,
        )
    with open(run_dir / 'results.csv', newline='', encoding='utf-8') as file:
        rows = list(csv.DictReader(file))
    learner_steps = float(rows[-1]['learner_steps']) if rows else math.nan
    print(f'{agent}: {rate:,.1f} agent steps/s over {marks[-1][0] - marks[0][0] if len(marks) > 1 else 0:.0f} s, {learner_steps:,.0f} learner steps', flush=True)
    return {'rate': rate, 'learner_steps': learner_steps}


def cpu_name() -> str:
    """The CPU's model name and whether it has bfloat16 hardware (the DQN family's presets use it where it has)."""
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as file:
            text = file.read()
    except OSError:
        return platform.processor() or 'unknown CPU'
    model = next((line.split(':', 1)[1].strip() for line in text.splitlines() if line.startswith('model name')), 'unknown CPU')
    bf16 = 'with' if bf16_is_native(torch.device('cpu')) else 'without'
    return f'{model}, {os.cpu_count()} cores, {bf16} bfloat16 hardware'


def table(results: dict[str, dict[str, float]], args: argparse.Namespace, loads: tuple[str, str]) -> str:
    lines = [
        '# Pong presets: agent steps/s and the hours of a 2M-step run on this machine',
        '',
        '`' + ' '.join(['python -m benchmarks.pong_preset_speed', *args.argv]) + '`',
        '',
        f'{cpu_name()}; load average before {loads[0]}, after {loads[1]}. Each agent\'s preset trained for {args.seconds:g} s '
        f'(`--train_for_seconds`), the rate counted after its first {args.warmup_seconds:g} s; hours are training only '
        '(greedy evaluations every 100k add to them).'
        + (f' On top of the presets (--extra_flags): {", ".join(f"`{flags}`" for flags in args.extra_flags)}.' if args.extra_flags else ''),
        '',
        '| agent | agent steps/s | hours for 2M agent steps | learner steps in the window\'s run |',
        '|---|---:|---:|---:|',
    ]
    for agent, result in results.items():
        rate = result['rate']
        if result['learner_steps'] < args.min_learner_steps:  # the window timed acting alone: no cost of a whole run
            hours = 'not measured: too few learner steps'
        else:
            hours = f'{PONG_BUDGET_STEPS / rate / 3600:.1f}' if rate > 0 else 'nan'
        lines.append(f'| {agent} | {rate:,.0f} | {hours} | {result["learner_steps"]:,.0f} |')
    return '\n'.join(lines) + '\n'


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--agents', default=','.join(AGENTS), help='comma-separated agents (default: all 21)')
    parser.add_argument('--seconds', type=int, default=75, help="each agent's --train_for_seconds (the interpreter's start-up comes on top)")
    parser.add_argument('--warmup_seconds', type=int, default=30, help='seconds from launch before the rate is counted')
    parser.add_argument('--min_learner_steps', type=int, default=1, help='fewer learner steps in the run: its rate is acting alone, no hours given')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument(
        '--extra_flags', action='append', default=[],
        help="flags on top of every preset, in the = form: --extra_flags='--learner_threads=1'; --extra_flags='r2d2:--bf16_learning' "
        'only to r2d2 (repeatable); to compare a setting with the preset, time each into its own --out and --raw_dir',
    )
    parser.add_argument('--reuse', action='store_true', help="remake the table from the runs in --raw_dir instead of training")
    parser.add_argument('--out', default='benchmarks/results/pong_preset_speed.md', help='markdown file of the table')
    parser.add_argument('--raw_dir', default='benchmarks/results/raw/pong_preset_speed', help="each agent's run directory and log")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    unknown = [agent for agent in args.agents.split(',') if agent not in AGENTS]
    if unknown:
        parser.error(f'--agents: no run_atari for {", ".join(unknown)} (agents: {", ".join(AGENTS)})')
    if args.seconds - args.warmup_seconds < MIN_WINDOW_SECONDS:
        parser.error(
            f'--seconds ({args.seconds:g}) must exceed --warmup_seconds ({args.warmup_seconds:g}) by at least {MIN_WINDOW_SECONDS} s: '
            'the rate needs two progress lines (one every 10 s or a little more) after the warmup'
        )
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    before = 'not known (--reuse)' if args.reuse else load_average()
    take = read_run if args.reuse else measure
    results = {agent: take(agent, args, Path(args.raw_dir) / agent) for agent in args.agents.split(',')}
    text = table(results, args, (before, before if args.reuse else load_average()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding='utf-8')
    print(text)
    print(f'wrote {args.out}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
