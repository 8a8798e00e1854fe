"""Throughput of the Ray backend against the local one on one machine: PPO on CartPole-v1 and on Breakout, same
actors and environments, the two backends' runs interleaved:

    python -m benchmarks.ray_throughput                      # 3 pairs of runs per environment, 8.5 minutes on a busy 2-core machine
    python -m benchmarks.ray_throughput --cartpole_steps 100000 --breakout_steps 0
    python -m benchmarks.ray_throughput --repeats 5          # more pairs: a steadier median on a busy machine

For each environment it runs `deep_rl_zoo.ppo.run_classic` / `run_atari` with the run script's default actors and
environments (CartPole: 1 actor x 8 envs x 32 steps; Breakout: 2 actors x 4 envs x 128 steps), for one iteration of
the given agent steps without evaluation, alternately with `--backend=local` and `--backend=ray` (which starts a
Ray instance on this machine for the run): local, Ray, local, Ray, ... `--repeats` pairs. Each pair's runs are
back to back, so load from other jobs hits both alike; the table gives the median of the pairs' ratios Ray / local
and their spread (lowest and highest). Steady agent steps/s come from the live progress lines, so start-up
(imports, Ray's start, the actors' start) is excluded (see `atari_throughput.steady_rate`). The goal is a ratio of
at least 0.9. The table also gives what the Ray backend moves per update: the parameters (put into the object store
once per version) and the rollouts (one per actor, returned through the object store). It is printed and written
to --out with the load average before and after the runs.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

import torch

from benchmarks.atari_throughput import measure_training
from deep_rl_zoo import gym_env, rollouts
from deep_rl_zoo.ppo import agent
from deep_rl_zoo.ppo.settings import PpoSettings

# environment: (kind, run script, actors, envs per actor, steps per rollout), the run scripts' defaults
ENVIRONMENTS = {
    'CartPole-v1': ('classic', 'deep_rl_zoo.ppo.run_classic', 1, 8, 32),
    'Breakout': ('atari', 'deep_rl_zoo.ppo.run_atari', 2, 4, 128),
}


def bytes_per_update(environment: str) -> tuple[int, int]:
    """(bytes of one parameter version, bytes of one update's rollouts) of PPO with the run script's defaults."""
    kind, _, num_actors, num_envs, unroll_length = ENVIRONMENTS[environment]
    env = gym_env.create_vector_env(kind, environment, 1, 0)
    try:
        parameters = sum(parameter.numel() * 4 for parameter in agent.make_network(env, PpoSettings()).parameters())  # float32
        spec = rollouts.rollout_spec(env, num_envs, unroll_length)
    finally:
        env.close()
    rollout = sum(math.prod(shape) * torch.empty(0, dtype=dtype).element_size() for shape, dtype in spec.values())
    return parameters, num_actors * rollout


def command(environment: str, backend: str, steps: int, seed: int) -> list[str]:
    _, module, _, _, _ = ENVIRONMENTS[environment]
    return [
        sys.executable, '-m', module, f'--environment_name={environment}', f'--num_train_steps={steps}', '--num_iterations=1',
        '--num_eval_steps=0', '--nouse_tensorboard', f'--seed={seed}', f'--backend={backend}',
    ]  # fmt: skip


def _megabytes(size: int) -> str:
    return f'{size / 1e6:,.2f} MB' if size >= 1e5 else f'{size / 1e3:,.1f} kB'


def pair_ratios(local: list[float], ray: list[float]) -> tuple[float, float, float]:
    """(median, lowest, highest) of the ratios Ray / local of runs made in pairs (`local[i]` just before `ray[i]`)."""
    if len(local) != len(ray) or not local:
        raise ValueError(f'pairs of runs needed, got {len(local)} local and {len(ray)} Ray run(s)')
    ratios = [ray_rate / local_rate for local_rate, ray_rate in zip(local, ray)]
    return statistics.median(ratios), min(ratios), max(ratios)


def _load() -> str:
    return ', '.join(f'{value:.2f}' for value in os.getloadavg())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--cartpole_steps', type=int, default=30_000, help='agent steps of each CartPole run (0 skips it)')
    parser.add_argument('--breakout_steps', type=int, default=2_048, help='agent steps of each Breakout run (0 skips it)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--repeats', type=int, default=3, help='pairs of runs (local, then Ray) per environment')
    parser.add_argument('--out', default='benchmarks/results/ray_throughput.md', help='markdown file of the table')
    args = parser.parse_args(argv)
    if args.repeats < 1:
        raise SystemExit(f'error: --repeats={args.repeats}: must be at least 1')

    rows, runs, load_before = [], [], _load()
    with tempfile.TemporaryDirectory(prefix='ray_throughput_') as scratch:
        for environment, steps in (('CartPole-v1', args.cartpole_steps), ('Breakout', args.breakout_steps)):
            if steps <= 0:
                continue
            _, _, num_actors, num_envs, unroll_length = ENVIRONMENTS[environment]
            measured: dict[str, list[float]] = {'local': [], 'ray': []}
            for repeat in range(args.repeats):
                for backend in ('local', 'ray'):
                    run_dir = Path(scratch) / f'{environment}_{backend}_{repeat}'
                    measured[backend].append(measure_training(command(environment, backend, steps, args.seed), run_dir)['steady'])
            median, lowest, highest = pair_ratios(measured['local'], measured['ray'])
            parameters, rollout_bytes = bytes_per_update(environment)
            rows.append(
                f'| {environment} | {num_actors} x {num_envs} x {unroll_length} | {statistics.median(measured["local"]):,.0f} | '
                f'{statistics.median(measured["ray"]):,.0f} | **{median:.2f}** | {lowest:.2f} to {highest:.2f} | {_megabytes(parameters)} | '
                f'{_megabytes(rollout_bytes)} |'
            )
            pairs = ', '.join(f'{local:,.0f} / {ray:,.0f}' for local, ray in zip(measured['local'], measured['ray']))
            runs.append(f'{environment} (local / Ray, agent steps/s): {pairs}.')
            print(rows[-1], flush=True)
    text = '\n'.join([
        '# The Ray backend against the local one: PPO throughput on one machine',
        '',
        f'`python -m benchmarks.{Path(__file__).stem} {" ".join(argv if argv is not None else sys.argv[1:])}`'.replace(' `', '`'),
        '',
        f'{args.repeats} pair(s) of runs per environment, interleaved (local, Ray, local, Ray, ...), with the run script\'s '
        f'default actors and environments; steady agent steps/s (start-up excluded): medians of each backend\'s runs, and the '
        f'median and the range of the ratios Ray / local of the pairs. Load average before the runs: {load_before}; after: '
        f'{_load()}. Per update, the Ray backend puts one parameter version into the object store (fetched once by each '
        f'node) and gets one rollout from each actor.',
        '',
        '| environment | actors x envs x steps | local agent steps/s | Ray agent steps/s | Ray / local (median of pairs) | '
        'lowest to highest pair | parameters per version | rollouts per update |',
        '|---|---|---:|---:|---:|---:|---:|---:|',
        *rows,
        '',
        f'Every pair: {" ".join(runs)}',
        '',
    ])
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
