"""Atari throughput on Breakout (8 envs x 128 steps, 4 epochs x 4 minibatches, Nature CNN): our PPO (1 actor x 8
envs, and run_atari's default of 2 x 4) and APPO (2 workers x 4 envs), against the raw environment and against
Stable-Baselines3's PPO and Sample Factory's APPO, in one run on the same machine.

    python -m benchmarks.atari_throughput                  # about 6 minutes on 2 cores
    python -m benchmarks.atari_throughput --skip_peers     # ours only
    python -m benchmarks.atari_throughput --profile        # also: where one PPO iteration's time goes
    python -m benchmarks.atari_throughput --skip_peers --configurations=ppo_2x4,appo_2x4 --repeats=3   # APPO vs PPO

Measures, one after another (never two at once):

(a) the raw environment: the C++ `AtariVectorEnv` exactly as our factory configures it (8 envs, DQN
    preprocessing, its thread count) stepped with random actions for --env_seconds, then the same through our
    `VectorEnvironment` wrapper for half as long: the ceiling no agent on these envs can beat;
(b) our training, for each of `--configurations` (CONFIGURATIONS below): e.g. `python -m deep_rl_zoo.ppo.run_atari
    --environment_name=Breakout --num_actors=1 --num_envs_per_actor=8 --num_train_steps=<--train_steps>
    --num_iterations=1 --num_eval_steps=0 --nouse_tensorboard`. Steady-state agent steps/s come from the live progress lines (stamped as they arrive):
    steps between the first line (printed on receiving the first rollout) and the last line printed on
    receiving a rollout, over the time between them, so start-up (imports, actor start, first rollout) is
    excluded and the span holds as many updates as rollouts. The CSV's train_step_rate (whole iteration, actor
    start-up included) is shown too. With --repeats=N the configurations run N times in turn (A, B, A, B, ...), the
    table shows each measurement's median and each run's steady rate, and the APPO / PPO ratios of the medians;
(c) SB3 PPO with the rl-baselines3-zoo Atari hyperparameters (`/work/shared/peers/sb3_atari_ppo.py --total
    <--train_steps> --seed 1`) in the scratch venv /tmp/peer-venv, created when missing. Its steady figure
    excludes its first rollout, as ours excludes start-up.
(d) Sample Factory 2.1.1's APPO (`sf_examples.atari.train_atari`, 2 workers x 4 envs, its Atari defaults: rollout
    128, batch 256, 4 epochs x 4 minibatches, the same Nature CNN) in its own scratch venv /tmp/sf-venv (it needs
    the gymnasium 0.29 API; created when missing), once per `--sf_modes`: sync (its Atari default), async
    (`--async_rl=True --worker_num_splits=2`) and serial (`--serial_mode=True`), each for --train_steps agent steps.
    Its steady figure is the frames it counted from its first FPS report after --sf_warmup_seconds to its last, over
    the time between them by its own log timestamps, divided by the frame skip (Sample Factory counts frames).

Frames/s are agent steps/s x 4 (the frame skip). The table is printed and saved to
benchmarks/results/atari_throughput.md. The load average is recorded with it: on a busy machine the figures are
low and the ratios unreliable.

--profile runs our learner update and actor collect in this process for a few iterations and prints the time of
each part: acting forward, env step, learner forward / backward / grad clip / Adam, and the transport between
actor and learner processes (parameter publish and copy, the rollout message); --cprofile adds cProfile's top
functions.
"""

from __future__ import annotations

import argparse
import csv
import datetime
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
from pathlib import Path
from typing import Any, Callable, Optional

from benchmarks.cartpole_time_to_solve import PEER_PACKAGES, PEER_VENV, default_peers_dir, ensure_peer_venv

REPO_ROOT = Path(__file__).resolve().parent.parent
NUM_ENVS = 8
FRAME_SKIP = 4
ATARI_PEER_PACKAGES = (*PEER_PACKAGES, 'ale-py==0.12.1', 'opencv-python-headless')
ATARI_PEER_IMPORTS = ('torch', 'stable_baselines3', 'gymnasium', 'ale_py', 'cv2')
SF_VENV = Path('/tmp/sf-venv')
SF_PACKAGES = ('torch==2.13.0', 'sample-factory==2.1.1', 'gymnasium==0.29.1', 'numpy<2', 'ale-py==0.9.1', 'opencv-python-headless')
SF_IMPORTS = ('torch', 'sample_factory', 'sf_examples', 'ale_py', 'cv2')
# ale-py >= 0.9 registers its Atari ids only when imported, and gymnasium 0.29 does not import it: a .pth file in the
# scratch venv imports it when SF_ALE_REGISTER is set.
SF_ALE_REGISTER_PTH = 'import os; os.environ.get("SF_ALE_REGISTER") and __import__("ale_py")\n'
SF_MODES = {'sync': [], 'async': ['--async_rl=True', '--worker_num_splits=2'], 'serial': ['--serial_mode=True']}
_SF_REPORT = re.compile(r'\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\]\[\d+\] Fps is .*Total num frames: (\d+)\.')
_PROGRESS = re.compile(r'env steps ([\d,]+)/')
_ITERATION_END = re.compile(r'iteration \d+: ')


def measure_env(seconds: float, seed: int) -> dict[str, float]:
    """Agent steps/s of the C++ AtariVectorEnv (as our factory builds it) and of our wrapper over it, random actions."""
    import numpy as np

    from deep_rl_zoo import gym_env

    env = gym_env.create_atari_vector_env('Breakout', NUM_ENVS, seed)
    random = np.random.default_rng(seed)
    num_actions = env.single_action_space.n
    env.reset()
    raw = env._vector_env  # pylint: disable=protected-access  # the C++ env itself, configured like training's

    def rate(step: Callable[[np.ndarray], Any], duration: float) -> float:
        for _ in range(20):
            step(random.integers(0, num_actions, NUM_ENVS))
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < duration:
            step(random.integers(0, num_actions, NUM_ENVS))
            count += 1
        return count * NUM_ENVS / (time.perf_counter() - start)

    try:
        return {'raw': rate(raw.step, seconds), 'wrapper': rate(env.step, seconds / 2)}
    finally:
        env.close()


def steady_rate(stamped: list[tuple[float, str]]) -> tuple[float, list[tuple[float, int]]]:
    """Steady agent steps/s from a run's stamped output lines; also returns the (seconds, env steps) marks.

    A progress line is printed when the learner receives a rollout, before its update (at most every 10 s
    when stdout is not a terminal), and once more, forced, after the iteration's last update, just before the
    'iteration N:' line. From the first line (after rollout 1) to a later line printed at a rollout's arrival,
    the span holds as many updates as rollouts; the forced line adds one more update, so it is used only when
    no other line follows the first.
    """
    marks: list[tuple[float, int]] = []
    forced: set[int] = set()
    for seconds, line in stamped:
        match = _PROGRESS.search(line)
        if match:
            marks.append((seconds, int(match.group(1).replace(',', ''))))
        elif _ITERATION_END.match(line) and marks:
            forced.add(len(marks) - 1)
    balanced = [mark for index, mark in enumerate(marks) if index not in forced]
    span = balanced if len(balanced) >= 2 and balanced[-1][1] > balanced[0][1] else marks
    if len(span) >= 2 and span[-1][1] > span[0][1]:
        return (span[-1][1] - span[0][1]) / (span[-1][0] - span[0][0]), marks
    return math.nan, marks


# Our training configurations, all 8 environments x 128 steps per update of 4 epochs x 4 minibatches of 256 on the
# Nature CNN: name -> (what the table calls it, run script and its flags).
CONFIGURATIONS = {
    'ppo_1x8': ('PPO, 1 actor x 8 envs', ['deep_rl_zoo.ppo.run_atari', '--num_actors=1', f'--num_envs_per_actor={NUM_ENVS}']),
    'ppo_2x4': ("PPO, 2 actors x 4 envs (run_atari's default)", ['deep_rl_zoo.ppo.run_atari', '--num_actors=2', '--num_envs_per_actor=4']),
    'appo_2x4': (
        'APPO, 2 workers x 4 envs, asynchronous',
        [
            'deep_rl_zoo.appo.run_atari', '--num_workers=2', '--num_envs_per_worker=4', '--rollout=128', '--batch_size=256',
            '--num_batches_per_epoch=4', '--num_epochs=4',
        ],
    ),  # fmt: skip
    'appo_2x4_sync': (
        'APPO, 2 workers x 4 envs, synchronous (--async_rl=false)',
        [
            'deep_rl_zoo.appo.run_atari', '--num_workers=2', '--num_envs_per_worker=4', '--rollout=128', '--batch_size=256',
            '--num_batches_per_epoch=4', '--num_epochs=4', '--async_rl=false',
        ],
    ),  # fmt: skip
}


def measure_ours(args: argparse.Namespace, configuration: str, run_dir: Path) -> dict[str, float]:
    """Runs one training iteration of `configuration` and reads its throughput from the live progress lines and the CSV."""
    module, *flags = CONFIGURATIONS[configuration][1]
    command = [
        sys.executable, '-m', module, '--environment_name=Breakout', *flags, f'--num_train_steps={args.train_steps}', '--num_iterations=1',
        '--num_eval_steps=0', '--nouse_tensorboard', f'--seed={args.seed}', *shlex.split(args.extra_flags),
    ]  # fmt: skip
    return measure_training(command, run_dir)


def median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each measurement over repeated runs of one configuration, and the steady rate of each run in
    order ('steady_runs')."""
    median = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    return {**median, 'steady_runs': [run['steady'] for run in runs]}


_STAMPED_LINE = re.compile(r'^\[\s*([0-9.]+)\] (.*)$')  # a line of `run_stamped`'s log: seconds since launch, then the line


def read_stamped(log_path: Path) -> list[tuple[float, str]]:
    """The (seconds since launch, line) pairs of a log that `run_stamped` wrote."""
    stamped = []
    for line in log_path.read_text(encoding='utf-8').splitlines():
        match = _STAMPED_LINE.match(line)
        if match:
            stamped.append((float(match.group(1)), match.group(2)))
    return stamped


def run_stamped(command: list[str], cwd: Path, log_path: Path, environment: Optional[dict[str, str]] = None) -> tuple[list[tuple[float, str]], float, int]:
    """Runs `command`, stamping each output line with the seconds since launch as it arrives (also written to
    `log_path`); returns the stamped lines, the seconds the process ran and its exit code. Interrupted, the process
    is terminated (our run scripts stop their actors cleanly on SIGTERM)."""
    stamped: list[tuple[float, str]] = []
    with open(log_path, 'w', encoding='utf-8') as log:
        launch = time.monotonic()
        process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for line in process.stdout:
                now = time.monotonic() - launch
                log.write(f'[{now:8.2f}] {line}')
                stamped.append((now, line))
            process.wait()
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait(15)
        return stamped, time.monotonic() - launch, process.returncode


def measure_training(command: list[str], run_dir: Path) -> dict[str, float]:
    """Runs `command` (one iteration of one of our run scripts, without evaluation) with its results CSV and
    checkpoints in `run_dir`, and reads its throughput from the live progress lines and the CSV."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    results_csv = run_dir / 'results.csv'
    command = [*command, f'--results_csv_path={results_csv}', f'--checkpoint_dir={run_dir / "checkpoints"}']
    print(f'ours: {" ".join(command[2:])}', flush=True)
    stamped, total, returncode = run_stamped(command, REPO_ROOT, run_dir / 'log.txt')
    if returncode != 0:
        raise SystemExit(f'error: our training exited with code {returncode}; see {run_dir / "log.txt"}')
    with open(results_csv, newline='', encoding='utf-8') as file:
        row = list(csv.DictReader(file))[-1]
    steady, marks = steady_rate(stamped)
    env_steps = int(row['env_steps'])
    return {
        'steady': steady,
        'csv_rate': float(row['train_step_rate']),
        'process_rate': env_steps / total,
        'first_progress_s': marks[0][0] if marks else math.nan,
        'env_steps': env_steps,
        'process_s': total,
        'progress_lines': len(marks),
    }


def measure_sb3(args: argparse.Namespace, run_dir: Path, python: Path) -> dict[str, float]:
    script = Path(args.peers_dir) / 'sb3_atari_ppo.py'
    if not script.exists():
        raise SystemExit(f'error: no peer script {script}: pass --peers_dir')
    run_dir.mkdir(parents=True, exist_ok=True)
    command = [str(python), '-u', str(script), '--total', str(args.train_steps), '--seed', str(args.seed)]
    print(f'SB3: {" ".join(command)}', flush=True)
    completed = subprocess.run(command, cwd=run_dir, capture_output=True, text=True, check=False)
    (run_dir / 'log.txt').write_text(completed.stdout + completed.stderr, encoding='utf-8')
    if completed.returncode != 0:
        raise SystemExit(f'error: the SB3 peer exited with code {completed.returncode}; see {run_dir / "log.txt"}')
    result = json.loads([line for line in completed.stdout.splitlines() if line.startswith('{')][-1])
    steady = result.get('sps_excluding_first_iteration')
    return {'steady': float(steady) if steady else math.nan, 'whole': float(result['sps']), 'steps': result['steps']}


def ensure_sample_factory_venv(venv: Path) -> Path:
    """The python of Sample Factory's scratch venv, created when missing, with the ale-py registration hook."""
    python = ensure_peer_venv(venv, SF_PACKAGES, SF_IMPORTS)
    site_packages = Path(subprocess.run([str(python), '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], capture_output=True, text=True, check=True).stdout.strip())
    hook = site_packages / 'zz_ale_register.pth'
    if not hook.exists() or hook.read_text(encoding='utf-8') != SF_ALE_REGISTER_PTH:
        hook.write_text(SF_ALE_REGISTER_PTH, encoding='utf-8')
    return python


def sample_factory_steady_rate(stamped: list[tuple[float, str]], warmup_seconds: float) -> tuple[float, int]:
    """Steady agent steps/s of a Sample Factory run, and how many FPS reports it spans: frames counted between its
    first FPS report at least `warmup_seconds` after its first one and its last report, over the time between them
    by Sample Factory's own log timestamps (its 10-second figures count whole 4,096-frame batches, too coarse to
    compare), divided by the frame skip."""
    reports = []
    for _, line in stamped:
        match = _SF_REPORT.search(line)
        if match:
            stamp = datetime.datetime.strptime(match.group(1), '%Y-%m-%d %H:%M:%S,%f').timestamp()
            reports.append((stamp, int(match.group(2))))
    if not reports:
        return math.nan, 0
    steady = [report for report in reports if report[0] - reports[0][0] >= warmup_seconds]
    if len(steady) < 2 or steady[-1][1] <= steady[0][1]:
        return math.nan, len(steady)
    return (steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0]) / FRAME_SKIP, len(steady)


def measure_sample_factory(args: argparse.Namespace, mode: str, run_dir: Path, python: Path) -> dict[str, float]:
    """Runs Sample Factory's APPO on Breakout in `mode` for --train_steps agent steps and reads its FPS reports."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    command = [
        str(python), '-m', 'sf_examples.atari.train_atari', '--env=atari_breakout', '--experiment=bench', f'--train_dir={run_dir}',
        '--num_workers=2', '--num_envs_per_worker=4', '--device=cpu', f'--seed={args.seed}',
        f'--train_for_env_steps={args.train_steps * FRAME_SKIP}', *SF_MODES[mode],
    ]  # fmt: skip
    print(f'Sample Factory ({mode}): {" ".join(command[1:])}', flush=True)
    stamped, total, returncode = run_stamped(command, run_dir, run_dir / 'log.txt', {**os.environ, 'SF_ALE_REGISTER': '1'})
    if returncode != 0:
        raise SystemExit(f'error: Sample Factory ({mode}) exited with code {returncode}; see {run_dir / "log.txt"}')
    steady, reports = sample_factory_steady_rate(stamped, args.sf_warmup_seconds)
    return {'steady': steady, 'whole': args.train_steps / total, 'reports': reports, 'process_s': total}


def _number(value: float, digits: int = 0) -> str:
    return 'n/a' if value is None or math.isnan(value) else f'{value:,.{digits}f}'


def _ratio(numerator: float, denominator: Optional[float]) -> str:
    if denominator is None or math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return ''
    return f'{numerator / denominator:.2f}'


def table(
    env: dict[str, float], ours: dict[str, dict[str, float]], peer: Optional[dict[str, float]], sample_factory: dict[str, dict[str, float]], args: argparse.Namespace, load: str,
) -> str:
    raw = env['raw']
    peer_steady = peer['steady'] if peer else None
    peer_whole = peer['whole'] if peer else None
    rows = [
        (f'raw C++ AtariVectorEnv, {NUM_ENVS} envs, random actions ({args.env_seconds:g} s)', raw, '', ''),
        (f'our VectorEnvironment over it, {NUM_ENVS} envs, random actions ({args.env_seconds / 2:g} s)', env['wrapper'], '', _ratio(env['wrapper'], raw)),
    ]
    for configuration, measured in ours.items():
        name = CONFIGURATIONS[configuration][0]
        rows += [
            (f'**ours {name}, steady** (progress lines; start-up excluded)', measured['steady'], _ratio(measured['steady'], peer_steady), _ratio(measured['steady'], raw)),
            (f'ours {name}, whole iteration (CSV train_step_rate; actor start-up included)', measured['csv_rate'], _ratio(measured['csv_rate'], peer_whole), _ratio(measured['csv_rate'], raw)),
        ]
    if peer:
        rows += [
            ('**SB3 PPO, steady** (first rollout excluded)', peer['steady'], '', _ratio(peer['steady'], raw)),
            ('SB3 PPO, whole learn()', peer['whole'], '', _ratio(peer['whole'], raw)),
        ]
    for mode, measured in sample_factory.items():
        rows.append((f'**Sample Factory 2.1.1 APPO, {mode}, steady** (frames between FPS reports / {FRAME_SKIP})', measured['steady'], '', _ratio(measured['steady'], raw)))
    lines = [
        '# Atari throughput on Breakout: our PPO and APPO against the raw environment, SB3 PPO and Sample Factory APPO',
        '',
        f'`python -m benchmarks.atari_throughput {" ".join(shlex.quote(a) for a in args.argv)}`',
        '',
        f'{NUM_ENVS} envs x 128 steps per update, 4 epochs x 4 minibatches of 256, Nature CNN, {args.train_steps:,} agent steps per '
        f'training run, seed {args.seed}, one run after another. Frames/s = agent steps/s x {FRAME_SKIP}. Ratio columns: ours '
        f'steady / SB3 steady, ours whole iteration / SB3 whole learn(); and each row / the raw env. Load average before the '
        f'run: {load}.',
        '',
        '| measurement | agent steps/s | frames/s | ours / SB3 | / raw env |',
        '|---|---:|---:|---:|---:|',
    ]
    for name, rate, versus_peer, versus_raw in rows:
        lines.append(f'| {name} | {_number(rate)} | {_number(rate * FRAME_SKIP)} | {versus_peer} | {versus_raw} |')
    if sample_factory:
        ours_appo = {CONFIGURATIONS[name][0]: measured['steady'] for name, measured in ours.items() if name.startswith('appo')}
        ours_best = max((measured['steady'] for measured in ours.values()), default=math.nan)
        lines_sf = ['', '| ours, steady / Sample Factory steady | ' + ' | '.join(sample_factory) + ' |', '|---|' + '---:|' * len(sample_factory)]
        for name, rate in [*ours_appo.items(), ('best of ours', ours_best)]:
            lines_sf.append(f'| {name} | ' + ' | '.join(_ratio(rate, measured['steady']) for measured in sample_factory.values()) + ' |')
    else:
        lines_sf = []
    lines.append('')
    medians = f'medians of {args.repeats} alternating runs: ' if args.repeats > 1 else ''
    for configuration, measured in ours.items():
        lines.append(
            f'Ours, {CONFIGURATIONS[configuration][0]}: {medians}first progress line {measured["first_progress_s"]:.1f} s after launch, '
            f'{measured["progress_lines"]:.0f} progress lines, {measured["env_steps"]:,.0f} env steps in {measured["process_s"]:.1f} s of process'
            + (f'; steady agent steps/s of each run in order: {", ".join(_number(rate) for rate in measured["steady_runs"])}.' if args.repeats > 1 else '.')
        )
    appo = [name for name in ours if name.startswith('appo')]
    ppo = [name for name in ours if name.startswith('ppo')]
    lines_appo = []
    if appo and ppo:
        lines_appo = ['', '| steady, APPO / PPO (' + ('medians' if args.repeats > 1 else 'one run each') + ') | ' + ' | '.join(ppo) + ' |', '|---|' + '---:|' * len(ppo)]
        for name in appo:
            lines_appo.append(f'| {name} | ' + ' | '.join(_ratio(ours[name]['steady'], ours[other]['steady']) for other in ppo) + ' |')
    for mode, measured in sample_factory.items():
        lines.append(f'Sample Factory, {mode}: {measured["reports"]} FPS reports from {args.sf_warmup_seconds:g} s after its first one, {measured["process_s"]:.1f} s of process.')
    if not peer:
        lines.append('SB3 and Sample Factory not run (--skip_peers).')
    lines += lines_sf + lines_appo
    return '\n'.join(lines) + '\n'


class Sections:
    """Seconds spent in named sections; `wrap` times every call of a function."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - start)

        return timed

    def reset(self) -> None:
        self.seconds.clear()


def profile(args: argparse.Namespace) -> str:
    """Our actor collect and learner update in this process, as run_atari builds them; prints where time goes."""
    import cProfile
    import io
    import pstats

    import torch

    from deep_rl_zoo import distributed, main_loop
    from deep_rl_zoo.ppo import agent, settings

    breakout = settings.ATARI.replace(environment_name='Breakout', num_envs_per_actor=NUM_ENVS, seed=args.seed)  # run_atari's defaults
    torch.manual_seed(args.seed)
    env = main_loop.create_environment(breakout, NUM_ENVS, args.seed)
    spec = agent.rollout_spec(env, NUM_ENVS, breakout.unroll_length)
    learner = agent.build_learner(agent.make_network(env, breakout), env, breakout, 1000, torch.device('cpu'))
    actor = agent.build_actor(agent.make_network(env, breakout), env, breakout, args.seed, torch.device('cpu'))
    context = distributed.process_context([torch.device('cpu')])  # what run_atari uses for CPU actors
    parameters = distributed.SharedParameters(learner.network, context)
    (buffers,) = distributed.make_rollout_buffers(1, spec)
    receiver, sender = context.Pipe(duplex=False)  # the pipe type actors report through
    steps_per_iteration = NUM_ENVS * breakout.unroll_length

    sections = Sections()
    actor.network.forward = sections.wrap('actor: forward (batch 8, 1 thread)', actor.network.forward)
    actor.env.step = sections.wrap('actor: env step (C++ env + our wrapper)', actor.env.step)
    learner.network.forward = sections.wrap(f'learner: forward (minibatch, {breakout.learner_threads} threads)', learner.network.forward)
    learner.optimizer.step = sections.wrap('learner: Adam step', learner.optimizer.step)
    original_backward, original_clip = torch.Tensor.backward, torch.nn.utils.clip_grad_norm_
    torch.Tensor.backward = sections.wrap('learner: backward', original_backward)
    torch.nn.utils.clip_grad_norm_ = sections.wrap('learner: grad-norm clip', original_clip)

    def iteration() -> None:
        start = time.perf_counter()
        parameters.publish(learner.network)
        parameters.copy_to(actor.network)
        sections.add('transport: parameters publish + copy', time.perf_counter() - start)
        torch.set_num_threads(1)
        start = time.perf_counter()
        finished = actor.collect(buffers[0])
        sections.add('actor: collect (total)', time.perf_counter() - start)
        start = time.perf_counter()
        sender.send(distributed.Rollout(0, 0, 1, finished))
        receiver.recv()
        sections.add('transport: rollout message (pipe)', time.perf_counter() - start)
        torch.set_num_threads(breakout.learner_threads)
        start = time.perf_counter()
        learner.update(buffers)
        sections.add('learner: update (total)', time.perf_counter() - start)

    profiler = cProfile.Profile() if args.cprofile else None
    try:
        iteration()  # warm-up: first-call allocations and one-time initialisation
        sections.reset()
        start = time.perf_counter()
        if profiler:
            profiler.enable()
        for _ in range(args.profile_iterations):
            iteration()
        if profiler:
            profiler.disable()
        wall = time.perf_counter() - start
    finally:
        torch.Tensor.backward, torch.nn.utils.clip_grad_norm_ = original_backward, original_clip
        env.close()
        receiver.close()
        sender.close()

    seconds = dict(sections.seconds)
    actor_parts = [name for name in seconds if name.startswith('actor: ') and 'total' not in name]
    learner_parts = [name for name in seconds if name.startswith('learner: ') and 'total' not in name]
    seconds['actor: other (sampling, buffer writes)'] = seconds.pop('actor: collect (total)') - sum(seconds[n] for n in actor_parts)
    seconds['learner: other (batching, GAE, losses, statistics)'] = seconds.pop('learner: update (total)') - sum(seconds[n] for n in learner_parts)
    order = sorted(seconds, key=lambda name: (name.split(':')[0] != 'actor', name.split(':')[0] != 'learner', 'other' in name, name))
    n = args.profile_iterations
    lines = [
        f'Profile: PPO Breakout, {NUM_ENVS} envs x {breakout.unroll_length} steps per iteration, {breakout.num_epochs} epochs x '
        f'{breakout.num_minibatches} minibatches, {n} iterations after 1 warm-up, in one process',
        '',
        '| section | seconds | ms / iteration | share |',
        '|---|---:|---:|---:|',
    ]
    for name in order:
        lines.append(f'| {name} | {seconds[name]:.3f} | {1000 * seconds[name] / n:.1f} | {100 * seconds[name] / wall:.1f}% |')
    lines.append(f'| total (wall) | {wall:.3f} | {1000 * wall / n:.1f} | 100% |')
    lines += ['', f'Implied agent steps/s with actor and learner taking turns: {n * steps_per_iteration / wall:,.0f}']
    report = '\n'.join(lines) + '\n'
    if profiler:
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats('tottime').print_stats(25)
        report += '\ncProfile, top 25 functions by own time:\n' + stream.getvalue()
    return report


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--env_seconds', type=float, default=20.0, help='seconds of random-action stepping of the raw env')
    parser.add_argument('--train_steps', type=int, default=51_200, help='agent steps of our training run and of SB3 (50 rollouts)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--configurations', default=','.join(CONFIGURATIONS), help=f'our training runs to measure, of {", ".join(CONFIGURATIONS)}')
    parser.add_argument('--repeats', type=int, default=1, help='runs of each of our configurations, alternating; the table shows medians')
    parser.add_argument('--skip_peers', action='store_true', help='run only our side')
    parser.add_argument('--profile', action='store_true', help='then profile our actor collect and learner update in-process')
    parser.add_argument('--profile_only', action='store_true', help='only the profile (no env, training or SB3 measurement)')
    parser.add_argument('--profile_iterations', type=int, default=3, help='profiled iterations (1,024 agent steps each)')
    parser.add_argument('--cprofile', action='store_true', help='with --profile: also print cProfile top functions')
    parser.add_argument('--extra_flags', default='', help="flags added to our run_atari command line; use the = form: --extra_flags='--learner_threads=1'")
    parser.add_argument('--peer_venv', default=str(PEER_VENV), help='scratch venv of the peers (created when missing)')
    parser.add_argument('--sf_venv', default=str(SF_VENV), help="Sample Factory's scratch venv (created when missing)")
    parser.add_argument('--sf_modes', default=','.join(SF_MODES), help=f'Sample Factory modes to run, of {", ".join(SF_MODES)}; empty: none')
    parser.add_argument('--sf_warmup_seconds', type=float, default=60.0, help="Sample Factory FPS reports before this are start-up")
    parser.add_argument('--peers_dir', default=str(default_peers_dir()), help='directory of the peer scripts')
    parser.add_argument('--out', default='benchmarks/results/atari_throughput.md', help='markdown file of the table')
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.configurations = [name for name in args.configurations.split(',') if name]
    unknown = sorted(set(args.configurations) - set(CONFIGURATIONS))
    if unknown or not args.configurations:
        parser.error(f'--configurations: unknown {unknown} (choose from {", ".join(CONFIGURATIONS)})')
    args.sf_modes = [mode for mode in args.sf_modes.split(',') if mode]
    if set(args.sf_modes) - set(SF_MODES):
        parser.error(f'--sf_modes: unknown {sorted(set(args.sf_modes) - set(SF_MODES))} (choose from {", ".join(SF_MODES)})')
    if args.train_steps < 2 * NUM_ENVS * 128:
        parser.error(f'--train_steps must be at least {2 * NUM_ENVS * 128} (two rollouts) for a steady rate')
    if args.env_seconds <= 0 or args.profile_iterations < 1 or args.repeats < 1:
        parser.error('need --env_seconds > 0, --profile_iterations >= 1 and --repeats >= 1')
    return args


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    out = Path(args.out).resolve()
    raw_dir = out.parent / 'raw' / out.stem
    if not args.profile_only:
        load = ', '.join(f'{value:.2f}' for value in os.getloadavg())
        python = None if args.skip_peers else ensure_peer_venv(Path(args.peer_venv), ATARI_PEER_PACKAGES, ATARI_PEER_IMPORTS)
        print(f'(a) raw env: {args.env_seconds:g} s + {args.env_seconds / 2:g} s of random actions', flush=True)
        env = measure_env(args.env_seconds, args.seed)
        print(f'    {env["raw"]:,.0f} agent steps/s raw, {env["wrapper"]:,.0f} through our wrapper', flush=True)
        runs: dict[str, list[dict[str, float]]] = {configuration: [] for configuration in args.configurations}
        for repeat in range(args.repeats):  # the configurations alternate, so a change of load hits them alike
            for configuration in args.configurations:
                print(f'(b) our training: {CONFIGURATIONS[configuration][0]} (run {repeat + 1} of {args.repeats})', flush=True)
                run_dir = raw_dir / (configuration if args.repeats == 1 else f'{configuration}_{repeat + 1}')
                runs[configuration].append(measure_ours(args, configuration, run_dir))
                print(f'    {runs[configuration][-1]["steady"]:,.0f} agent steps/s steady, {runs[configuration][-1]["csv_rate"]:,.0f} whole iteration', flush=True)
        ours = {configuration: median_run(measured) for configuration, measured in runs.items()}
        peer = None
        if python is not None:
            print('(c) SB3 PPO', flush=True)
            peer = measure_sb3(args, raw_dir / 'sb3', python)
            print(f'    {peer["steady"]:,.0f} agent steps/s steady, {peer["whole"]:,.0f} whole learn()', flush=True)
        sample_factory = {}
        if not args.skip_peers and args.sf_modes:
            sf_python = ensure_sample_factory_venv(Path(args.sf_venv))
            for mode in args.sf_modes:
                print(f'(d) Sample Factory APPO, {mode}', flush=True)
                sample_factory[mode] = measure_sample_factory(args, mode, raw_dir / f'sample_factory_{mode}', sf_python)
                print(f'    {sample_factory[mode]["steady"]:,.0f} agent steps/s steady ({sample_factory[mode]["reports"]} reports)', flush=True)
        report = table(env, ours, peer, sample_factory, args, load)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report, encoding='utf-8')
        print()
        print(report)
        print(f'wrote {out}')
    if args.profile or args.profile_only:
        print()
        print(profile(args))
    return 0


if __name__ == '__main__':
    sys.exit(main())
