"""DQN's learning phase on Breakout, side by side: ours, CleanRL's `dqn_atari.py` and Stable-Baselines3's DQN.

    python -m benchmarks.dqn_atari_throughput                    # about 30 minutes on 2 cores
    python -m benchmarks.dqn_atari_throughput --repeats=1 --skip_peers
    python -m benchmarks.dqn_atari_throughput --speedups_only    # in-process: each speed-up of ours, one by one
    python -m benchmarks.dqn_atari_throughput --profile_only     # in-process: where our learning phase's time goes

The work is the same for everyone: Breakout (no frame skip ROM, 4 frames per agent step, 84x84 grey stacks of 4),
a 100k replay, learning from 5,000 agent steps on, one minibatch of 32 per 4 agent steps (the replay ratio), the
Nature CNN, Adam. A learning phase's agent steps/s is counted from 2,000 agent steps after learning starts to the
end of the run, from each program's own output lines stamped as they arrive:

- ours: `python -m deep_rl_zoo.dqn.run_atari --environment_name=Breakout --replay_capacity=100000
  --min_replay_size=5000 --target_network_update_interval=1000 --num_iterations=1 --num_train_steps=<--steps>
  --num_eval_steps=0` plus each of CONFIGURATIONS' flags; its progress lines (every 10 s) give env steps;
- CleanRL 1.2.0's `cleanrl/dqn_atari.py --env-id BreakoutNoFrameskip-v4 --total-timesteps <--steps>
  --learning-starts 5000 --buffer-size 100000` (its defaults otherwise: target every 1,000 agent steps), in the
  scratch venv --cleanrl_venv with CleanRL's source in --cleanrl_dir (both made when missing, as
  ../shared/peers/README.md says); it prints
  `SPS:` at every 100th agent step of the learning phase, from which the steps are known;
- SB3's DQN with the rl-baselines3-zoo Atari settings (`../shared/peers/sb3_atari_dqn.py`), which reports its own
  learning-phase rate over the same span.

The programs run one after another, never two at once, in rounds (ours, CleanRL, SB3, ours, ...), so that a busy
machine slows all of them alike; the table gives each one's median over --repeats rounds and its ratio to the faster
peer, with the load average before and after. Ratios are the result: absolute rates follow the machine's load.

--speedups runs our learning phase in this process, one configuration after another in rounds, each adding one
speed-up to the one before (SPEEDUPS), and prints the median agent steps/s of each and its ratio to the one before.
--profile_only times the parts of our learning phase (acting forward, env step, replay add and sample, the learner's
forward passes, backward, clip, Adam) before the speed-ups and with all of them but the second thread.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Optional

from benchmarks.atari_throughput import ATARI_PEER_IMPORTS, ATARI_PEER_PACKAGES, REPO_ROOT, SF_ALE_REGISTER_PTH, Sections, run_stamped
from benchmarks.cartpole_time_to_solve import PEER_VENV, default_peers_dir, ensure_peer_venv

LEARNING_STARTS = 5_000
STEADY_AFTER = 2_000  # agent steps after learning starts before the span measured (as sb3_atari_dqn.py counts)
REPLAY_CAPACITY = 100_000
CLEANRL_VENV = Path('/tmp/cleanrl-venv')
CLEANRL_DIR = Path('/tmp/cleanrl-src')
# CleanRL 1.2.0 as ../shared/peers/README.md runs it (its replay buffer is SB3's; gymnasium 0.29 API).
CLEANRL_PACKAGES = (
    'torch==2.13.0', 'gymnasium==0.29.1', 'numpy<2', 'ale-py==0.9.1', 'opencv-python-headless', 'tyro', 'tensorboard', 'stable-baselines3==2.3.2',
)  # fmt: skip
CLEANRL_IMPORTS = ('torch', 'gymnasium', 'ale_py', 'cv2', 'stable_baselines3', 'tensorboard')
# What our run_atari is given in every configuration: the work of the side-by-side (see the module docstring).
COMMON_FLAGS = [
    '--environment_name=Breakout', f'--replay_capacity={REPLAY_CAPACITY}', f'--min_replay_size={LEARNING_STARTS}',
    '--target_network_update_interval=1000', '--batch_size=32', '--learn_interval=4',
]  # fmt: skip
# Our configurations: name -> (what the table calls it, extra flags). learn_interval counts agent steps over all
# environments, so 4 environments still learn from one minibatch of 32 per 4 agent steps.
CONFIGURATIONS = {
    'paper': ('1 env, 1 learner thread, float32 (run_atari\'s defaults before 4 envs and 2 threads)', ['--num_envs=1', '--learner_threads=1']),
    'threads2': ('1 env, 2 learner threads, float32', ['--num_envs=1', '--learner_threads=2']),
    'default': ("run_atari's defaults (4 envs, 2 learner threads, float32)", []),
    'fast_threads1': ('4 envs, 1 learner thread, bf16 learning', ['--num_envs=4', '--learner_threads=1', '--bf16_learning']),
    'fast': ("4 envs, 2 learner threads, bf16 learning (the Pong presets' choice on bfloat16 hardware)", ['--num_envs=4', '--learner_threads=2', '--bf16_learning']),
}
_PROGRESS = re.compile(r'env steps ([\d,]+)/')
_ITERATION_END = re.compile(r'iteration \d+: ')
_CLEANRL_SPS = re.compile(r'^SPS: (\d+)')


@dataclasses.dataclass(frozen=True)
class Speedup:
    """One configuration of the in-process ladder: the settings the learning phase runs with."""

    name: str
    num_envs: int
    threads: int
    channels_last_min_batch: int  # networks.common.CHANNELS_LAST_MIN_BATCH while it runs
    bf16: bool


def speedup_ladder() -> list[Speedup]:
    """Each configuration adds one speed-up to the one before; the first is the state before issue 22."""
    return [
        Speedup('before: 1 env, 1 thread, NCHW learner batches, float32', 1, 1, 64, False),
        Speedup('+ channels-last learner batches (min batch 32)', 1, 1, 32, False),
        Speedup('+ 4 envs (one batched act and one update per vector step)', 4, 1, 32, False),
        Speedup('+ bf16 autocast of the learner forward passes', 4, 1, 32, True),
        Speedup('+ 2 torch threads', 4, 2, 32, True),
    ]


def learning_phase_rate(marks: list[tuple[float, int]], start_step: int) -> float:
    """Agent steps/s between the first and the last (seconds, agent steps) mark at or after `start_step`."""
    span = [mark for mark in marks if mark[1] >= start_step]
    if len(span) < 2 or span[-1][0] <= span[0][0]:
        return math.nan
    return (span[-1][1] - span[0][1]) / (span[-1][0] - span[0][0])


def ours_marks(stamped: list[tuple[float, str]]) -> list[tuple[float, int]]:
    """(seconds, env steps) of our progress lines, without the forced line printed just before 'iteration N:'
    (it comes after the last steps, not at the 10 s cadence, and would count the iteration's end-of-run work)."""
    marks: list[tuple[float, int]] = []
    for seconds, line in stamped:
        match = _PROGRESS.search(line)
        if match:
            marks.append((seconds, int(match.group(1).replace(',', ''))))
        elif _ITERATION_END.match(line) and marks:
            marks.pop()
    return marks


def cleanrl_marks(stamped: list[tuple[float, str]], learning_starts: int) -> list[tuple[float, int]]:
    """(seconds, agent steps) of CleanRL's `SPS:` lines: the k-th is printed at agent step 100 * (k + 1) after the
    first multiple of 100 at or below `learning_starts` (it prints at every multiple of 100 past learning_starts)."""
    first = (learning_starts // 100 + 1) * 100
    lines = [seconds for seconds, line in stamped if _CLEANRL_SPS.match(line)]
    return [(seconds, first + 100 * index) for index, seconds in enumerate(lines)]


def measure_ours(args: argparse.Namespace, configuration: str, run_dir: Path) -> float:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    command = [
        sys.executable, '-u', '-m', 'deep_rl_zoo.dqn.run_atari', *COMMON_FLAGS, *CONFIGURATIONS[configuration][1],
        f'--num_train_steps={args.steps}', '--num_iterations=1', '--num_eval_steps=0', '--nouse_tensorboard',
        f'--seed={args.seed}', f'--results_csv_path={run_dir / "results.csv"}', f'--checkpoint_dir={run_dir / "checkpoints"}',
        f'--train_dir={run_dir}', *shlex.split(args.extra_flags),
    ]  # fmt: skip
    print(f'  ours ({configuration}): {shlex.join(command[3:])}', flush=True)
    stamped, _, returncode = run_stamped(command, REPO_ROOT, run_dir / 'log.txt')
    if returncode != 0:
        raise SystemExit(f'error: our run exited with code {returncode}; see {run_dir / "log.txt"}')
    return learning_phase_rate(ours_marks(stamped), LEARNING_STARTS + STEADY_AFTER)


def peer_environment(args: argparse.Namespace) -> dict[str, str]:
    """The peers' environment: ours, with OMP_NUM_THREADS (which sets torch's threads there) from --peer_threads."""
    return {**os.environ, 'OMP_NUM_THREADS': str(args.peer_threads)} if args.peer_threads else dict(os.environ)


def ensure_cleanrl(venv: Path, source: Path) -> Path:
    """The python of CleanRL's scratch venv (created when missing, with the ale-py registration hook of Sample Factory's)
    and CleanRL 1.2.0's source in `source` (unpacked from its wheel when missing; the wheel asks for Python < 3.11 but
    dqn_atari.py runs on 3.11)."""
    python = ensure_peer_venv(venv, CLEANRL_PACKAGES, CLEANRL_IMPORTS)
    site_packages = Path(subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], capture_output=True, text=True, check=True).stdout.strip())
    (site_packages / 'zz_ale_register.pth').write_text(SF_ALE_REGISTER_PTH, encoding='utf-8')
    if not (source / 'cleanrl' / 'dqn_atari.py').exists():
        print(f'unpacking CleanRL 1.2.0 into {source}', flush=True)
        wheels = source / 'wheel'
        subprocess.run([str(python), '-m', 'pip', 'download', '--quiet', '--no-deps', '--ignore-requires-python', 'cleanrl==1.2.0', '-d', str(wheels)], check=True)
        with zipfile.ZipFile(next(wheels.glob('cleanrl-1.2.0-*.whl'))) as wheel:
            wheel.extractall(source)
    return python


def measure_cleanrl(args: argparse.Namespace, run_dir: Path, python: Path) -> float:
    script = Path(args.cleanrl_dir) / 'cleanrl' / 'dqn_atari.py'
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [
        str(python), '-u', str(script), '--env-id', 'BreakoutNoFrameskip-v4',
        '--total-timesteps', str(args.steps), '--learning-starts', str(LEARNING_STARTS), '--buffer-size', str(REPLAY_CAPACITY),
        '--seed', str(args.seed),
    ]  # fmt: skip
    print(f'  CleanRL: {shlex.join(command[2:])}', flush=True)
    environment = {**peer_environment(args), 'SF_ALE_REGISTER': '1', 'PYTHONPATH': str(args.cleanrl_dir)}
    stamped, _, returncode = run_stamped(command, run_dir, run_dir / 'log.txt', environment)
    if returncode != 0:
        raise SystemExit(f'error: CleanRL exited with code {returncode}; see {run_dir / "log.txt"}')
    return learning_phase_rate(cleanrl_marks(stamped, LEARNING_STARTS), LEARNING_STARTS + STEADY_AFTER)


def measure_sb3(args: argparse.Namespace, run_dir: Path, python: Path) -> float:
    script = Path(args.peers_dir) / 'sb3_atari_dqn.py'
    if not script.exists():
        raise SystemExit(f'error: no peer script {script}: pass --peers_dir')
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [str(python), '-u', str(script), '--total', str(args.steps), '--learning_starts', str(LEARNING_STARTS), '--seed', str(args.seed)]
    print(f'  SB3: {shlex.join(command[2:])}', flush=True)
    stamped, _, returncode = run_stamped(command, run_dir, run_dir / 'log.txt', peer_environment(args))
    if returncode != 0:
        raise SystemExit(f'error: the SB3 peer exited with code {returncode}; see {run_dir / "log.txt"}')
    result = json.loads([line for _, line in stamped if line.startswith('{')][-1])
    return float(result['sps_learning_phase']) if result.get('sps_learning_phase') else math.nan


def load_average() -> str:
    return ', '.join(f'{value:.2f}' for value in os.getloadavg())


def side_by_side(args: argparse.Namespace, raw_dir: Path) -> str:
    """Rounds of ours (each configuration), CleanRL and SB3, one after another; the markdown table of medians."""
    if not args.skip_peers:
        sb3_python = ensure_peer_venv(Path(args.peer_venv), ATARI_PEER_PACKAGES, ATARI_PEER_IMPORTS)
        cleanrl_python = ensure_cleanrl(Path(args.cleanrl_venv), Path(args.cleanrl_dir))
    jobs: list[tuple[str, Callable[[Path], float]]] = [
        (f'ours {name}', lambda run_dir, name=name: measure_ours(args, name, run_dir)) for name in args.configurations
    ]
    if not args.skip_peers:
        jobs += [('CleanRL', lambda run_dir: measure_cleanrl(args, run_dir, cleanrl_python)), ('SB3', lambda run_dir: measure_sb3(args, run_dir, sb3_python))]
    rates: dict[str, list[float]] = {name: [] for name, _ in jobs}
    loads = [load_average()]
    started = time.monotonic()
    for repeat in range(args.repeats):
        print(f'round {repeat + 1} of {args.repeats} (load average {load_average()})', flush=True)
        for name, measure in jobs:
            rate = measure(raw_dir / f'{name.replace(" ", "_")}_round{repeat + 1}')
            rates[name].append(rate)
            print(f'    {name}: {rate:,.1f} agent steps/s in the learning phase', flush=True)
        loads.append(load_average())
    return table(args, rates, loads, time.monotonic() - started)


def peer_threads(args: argparse.Namespace) -> str:
    return f'{args.peer_threads} torch thread{"s" if args.peer_threads > 1 else ""}' if args.peer_threads else 'its default torch threads'


def table(args: argparse.Namespace, rates: dict[str, list[float]], loads: list[str], seconds: float) -> str:
    medians = {name: statistics.median(values) for name, values in rates.items()}
    peers = [medians[name] for name in ('CleanRL', 'SB3') if name in medians and not math.isnan(medians[name])]
    faster_peer = max(peers) if peers else None
    command = 'python -m benchmarks.dqn_atari_throughput ' + shlex.join(args.argv)
    lines = [
        '# DQN on Breakout, learning phase: ours, CleanRL and SB3 side by side',
        '',
        f'`{command.strip()}`',
        '',
        f'{args.steps:,} agent steps per run, learning from {LEARNING_STARTS:,} (100k replay, batch 32, one update per 4 agent '
        f'steps, Nature CNN, Adam); agent steps/s from {LEARNING_STARTS + STEADY_AFTER:,} to the end of each run; '
        f'{args.repeats} rounds of all programs one after another ({seconds / 60:.0f} minutes). Seed {args.seed}.',
        f'Load average (1, 5, 15 min) before each round and at the end: {" | ".join(loads)} on {os.cpu_count()} CPUs.',
        '',
        '| program | agent steps/s, median | each round | / faster peer |',
        '|---|---:|---|---:|',
    ]
    for name, values in rates.items():
        label = f'ours, {CONFIGURATIONS[name[5:]][0]}' if name.startswith('ours ') else f'{name} ({peer_threads(args)})'
        if name.startswith('ours '):
            label += f' (`{" ".join(CONFIGURATIONS[name[5:]][1]) or "no extra flag"}`)'
        ratio = f'{medians[name] / faster_peer:.2f}' if faster_peer else ''
        lines.append(f'| {label} | {medians[name]:,.1f} | {", ".join(f"{value:,.1f}" for value in values)} | {ratio} |')
    return '\n'.join(lines) + '\n'


def build_in_process(speedup: Speedup, seed: int) -> tuple[Any, Any, Any]:
    """Our DQN as run_atari builds it for the side-by-side's work, with `speedup`'s envs and bf16: (env, agent, loop)."""
    import torch

    from deep_rl_zoo import main_loop
    from deep_rl_zoo.dqn import agent as dqn
    from deep_rl_zoo.dqn import settings as dqn_settings

    breakout = dqn_settings.ATARI.replace(
        environment_name='Breakout', replay_capacity=REPLAY_CAPACITY, min_replay_size=LEARNING_STARTS, target_network_update_interval=1000,
        batch_size=32, learn_interval=4, num_envs=speedup.num_envs, bf16_learning=speedup.bf16, learner_threads=speedup.threads, seed=seed,
    )  # fmt: skip
    main_loop.prepare_process(breakout)
    env = main_loop.create_environment(breakout, speedup.num_envs, seed)
    agent = dqn.build_dqn(dqn.make_network(env, breakout), env, breakout, torch.device('cpu'))
    return env, agent, main_loop.run_env_loop(agent, env)


def run_for(loop: Any, num_envs: int, seconds: float) -> float:
    """Agent steps/s of `loop` over about `seconds`."""
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(loop)
        steps += num_envs
    return steps / (time.perf_counter() - start)


def speedups(args: argparse.Namespace) -> str:
    """Each configuration of `speedup_ladder()` in this process, in rounds of --window_seconds each."""
    import torch

    from deep_rl_zoo.networks import common

    ladder = speedup_ladder()
    built = []
    for speedup in ladder:
        env, agent, loop = build_in_process(speedup, args.seed)
        while agent.learner_steps == 0:  # through the replay's filling, to the learning phase
            next(loop)
        built.append((env, agent, loop))
    rates: list[list[float]] = [[] for _ in ladder]
    loads = [load_average()]
    try:
        for _ in range(args.repeats):
            for index, (speedup, (_, _, loop)) in enumerate(zip(ladder, built)):
                torch.set_num_threads(speedup.threads)
                common.CHANNELS_LAST_MIN_BATCH = speedup.channels_last_min_batch
                rates[index].append(run_for(loop, speedup.num_envs, args.window_seconds))
            loads.append(load_average())
    finally:
        for env, _, _ in built:
            env.close()
    lines = [
        '## Our learning phase, one speed-up after another (in one process)',
        '',
        f'`python -m benchmarks.dqn_atari_throughput {shlex.join(args.argv)}`: {args.repeats} rounds of {args.window_seconds:g} s per '
        f'configuration, one after another; load average before each round and at the end: {" | ".join(loads)}.',
        '',
        '| configuration | agent steps/s, median | each round | / previous | / first |',
        '|---|---:|---|---:|---:|',
    ]
    medians = [statistics.median(values) for values in rates]
    for index, speedup in enumerate(ladder):
        previous = f'{medians[index] / medians[index - 1]:.2f}' if index else ''
        lines.append(
            f'| {speedup.name} | {medians[index]:,.1f} | {", ".join(f"{value:,.1f}" for value in rates[index])} | {previous} | '
            f'{medians[index] / medians[0]:.2f} |'
        )
    return '\n'.join(lines) + '\n'


def profile(args: argparse.Namespace) -> str:
    """Where our learning phase's time goes, for the first and the last one-thread configuration of `speedup_ladder()`."""
    import torch

    from deep_rl_zoo.networks import common

    reports = ['## Where our learning phase\'s time goes (in one process)', '']
    ladder = speedup_ladder()
    for speedup in (ladder[0], ladder[-2]):  # before, and every speed-up but the second thread
        torch.set_num_threads(speedup.threads)
        common.CHANNELS_LAST_MIN_BATCH = speedup.channels_last_min_batch
        env, agent, loop = build_in_process(speedup, args.seed)
        while agent.learner_steps == 0:
            next(loop)
        sections = Sections()
        agent.act = sections.wrap('acting (forward pass, epsilon-greedy)', agent.act)
        env.step = sections.wrap('env step (C++ vector env and our wrapper)', env.step)
        agent.replay.add = sections.wrap('replay add', agent.replay.add)
        agent.replay.sample = sections.wrap('replay sample (indices, n-step windows, frame stacks)', agent.replay.sample)
        agent.batch_tensors = sections.wrap('batch to tensors', agent.batch_tensors)
        agent.losses = sections.wrap('learner: forward passes (online, target) and loss', agent.losses)
        agent.optimizer.step = sections.wrap('learner: Adam step', agent.optimizer.step)
        original_backward, original_clip = torch.Tensor.backward, torch.nn.utils.clip_grad_norm_
        torch.Tensor.backward = sections.wrap('learner: backward', original_backward)
        torch.nn.utils.clip_grad_norm_ = sections.wrap('learner: grad-norm clip', original_clip)
        try:
            start, steps = time.perf_counter(), 0
            while time.perf_counter() - start < args.window_seconds:
                next(loop)
                steps += speedup.num_envs
            wall = time.perf_counter() - start
        finally:
            torch.Tensor.backward, torch.nn.utils.clip_grad_norm_ = original_backward, original_clip
            env.close()
        seconds = dict(sections.seconds)
        seconds['other (loop, trackers, statistics, target refresh)'] = wall - sum(seconds.values())
        reports += [
            f'{speedup.name}: {steps:,} agent steps in {wall:.1f} s = {steps / wall:,.1f} agent steps/s '
            f'(load average {load_average()})',
            '',
            '| part | ms per agent step | share |',
            '|---|---:|---:|',
        ]
        reports += [f'| {name} | {1000 * value / steps:.2f} | {100 * value / wall:.1f}% |' for name, value in sorted(seconds.items(), key=lambda item: -item[1])]
        reports.append('')
    return '\n'.join(reports)


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--steps', type=int, default=17_000, help='agent steps of each run (learning from 5,000)')
    parser.add_argument('--repeats', type=int, default=3, help='rounds of all programs (or of the speed-ups)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--configurations', default='paper,default,fast', help=f'our configurations, of {", ".join(CONFIGURATIONS)}')
    parser.add_argument('--skip_peers', action='store_true', help='only ours')
    parser.add_argument('--speedups', action='store_true', help='then our speed-ups one by one, in this process')
    parser.add_argument('--speedups_only', action='store_true', help='only the speed-ups (no side-by-side)')
    parser.add_argument('--profile_only', action='store_true', help='only the profile of our learning phase')
    parser.add_argument('--window_seconds', type=float, default=20.0, help='seconds per configuration and round of --speedups and --profile_only')
    parser.add_argument('--extra_flags', default='', help="flags added to each of our command lines; use the = form: --extra_flags='--compress_replay'")
    parser.add_argument('--peer_threads', type=int, default=0, help="the peers' torch threads (OMP_NUM_THREADS); 0: theirs (one per core)")
    parser.add_argument('--peer_venv', default=str(PEER_VENV), help="SB3's scratch venv (created when missing)")
    parser.add_argument('--cleanrl_venv', default=str(CLEANRL_VENV), help="CleanRL's scratch venv (created when missing)")
    parser.add_argument('--cleanrl_dir', default=str(CLEANRL_DIR), help="CleanRL 1.2.0's source (cleanrl/, cleanrl_utils/; unpacked when missing)")
    parser.add_argument('--peers_dir', default=str(default_peers_dir()), help='directory of the peer scripts')
    parser.add_argument('--out', default='benchmarks/results/dqn_atari_throughput.md', help='markdown file of the results')
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.configurations = [name for name in args.configurations.split(',') if name]
    unknown = sorted(set(args.configurations) - set(CONFIGURATIONS))
    if unknown or not args.configurations:
        parser.error(f'--configurations: unknown {unknown} (choose from {", ".join(CONFIGURATIONS)})')
    if args.steps < LEARNING_STARTS + STEADY_AFTER + 2_000:
        parser.error(f'--steps must be at least {LEARNING_STARTS + STEADY_AFTER + 2_000} (a learning phase to measure)')
    if args.repeats < 1 or args.window_seconds <= 0 or args.peer_threads < 0:
        parser.error('need --repeats >= 1, --window_seconds > 0 and --peer_threads >= 0')
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.profile_only:
        print(profile(args))
        return 0
    out = Path(args.out).resolve()
    parts = []
    if not args.speedups_only:
        parts.append(side_by_side(args, out.parent / 'raw' / out.stem))
    if args.speedups or args.speedups_only:
        parts.append(speedups(args))
    report = '\n'.join(parts)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding='utf-8')
    print()
    print(report)
    print(f'wrote {out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
