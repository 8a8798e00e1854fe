"""Throughput of the Ray backend against the local one on one machine: PPO on CartPole-v1 and on Breakout, one run
after another, same actors and environments:

    python -m benchmarks.ray_throughput                      # about 5 minutes on 2 cores
    python -m benchmarks.ray_throughput --cartpole_steps 100000 --breakout_steps 0
    python -m benchmarks.ray_throughput --repeats 2     # each backend twice, alternating which goes first (busy machine)

For each environment it runs `deep_rl_zoo.ppo.run_classic` / `run_atari` with the run script's default actors and
environments (CartPole: 1 actor x 8 envs x 32 steps; Breakout: 2 actors x 4 envs x 128 steps), for one iteration of
the given agent steps without evaluation, first with `--backend=local`, then with `--backend=ray` (which starts a
Ray instance on this machine for the run). Steady agent steps/s come from the live progress lines, so start-up
(imports, Ray's start, the actors' start) is excluded (see `atari_throughput.steady_rate`). The goal is a ratio
Ray / local of at least 0.9. The table also gives what the Ray backend moves per update: the parameters (put into
the object store once per version) and the rollouts (one per actor, returned through the object store). It is
printed and written to --out with the load average: on a busy machine the ratios are unreliable.
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

from benchmarks.atari_throughput import FRAME_SKIP, measure_training
from deep_rl_zoo import gym_env, rollouts
from deep_rl_zoo.ppo import agent

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
        parameters = sum(parameter.numel() * 4 for parameter in agent.make_network(env, {}).parameters())  # float32
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


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--cartpole_steps', type=int, default=200_000, help='agent steps of each CartPole run (0 skips it)')
    parser.add_argument('--breakout_steps', type=int, default=16_384, help='agent steps of each Breakout run (0 skips it)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--repeats', type=int, default=1, help='runs of each backend, alternating which goes first; medians are reported')
    parser.add_argument('--out', default='benchmarks/results/ray_throughput.md', help='markdown file of the table')
    args = parser.parse_args(argv)

    rows, runs = [], []
    with tempfile.TemporaryDirectory(prefix='ray_throughput_') as scratch:
        for environment, steps in (('CartPole-v1', args.cartpole_steps), ('Breakout', args.breakout_steps)):
            if steps <= 0:
                continue
            _, _, num_actors, num_envs, unroll_length = ENVIRONMENTS[environment]
            measured: dict[str, list[float]] = {'local': [], 'ray': []}
            for repeat in range(args.repeats):
                for backend in ('local', 'ray') if repeat % 2 == 0 else ('ray', 'local'):
                    run_dir = Path(scratch) / f'{environment}_{backend}_{repeat}'
                    measured[backend].append(measure_training(command(environment, backend, steps, args.seed), run_dir)['steady'])
            rates = {backend: statistics.median(values) for backend, values in measured.items()}
            parameters, rollout_bytes = bytes_per_update(environment)
            frames = FRAME_SKIP if environment == 'Breakout' else 1
            rows.append(
                f'| {environment} | {num_actors} x {num_envs} x {unroll_length} | {rates["local"]:,.0f} | {rates["ray"]:,.0f} | '
                f'{rates["ray"] * frames:,.0f} | **{rates["ray"] / rates["local"]:.2f}** | {_megabytes(parameters)} | {_megabytes(rollout_bytes)} |'
            )
            if args.repeats > 1:
                runs.append(f'{environment}: local {", ".join(f"{rate:,.0f}" for rate in measured["local"])}; Ray {", ".join(f"{rate:,.0f}" for rate in measured["ray"])} agent steps/s.')
            print(rows[-1], flush=True)
    load = ', '.join(f'{value:.2f}' for value in os.getloadavg())
    text = '\n'.join([
        '# The Ray backend against the local one: PPO throughput on one machine',
        '',
        f'`python -m benchmarks.{Path(__file__).stem} {" ".join(argv if argv is not None else sys.argv[1:])}`'.replace(' `', '`'),
        '',
        f'{args.repeats} run(s) of each, one after another (alternating which backend goes first), with the run script\'s default '
        f'actors and environments; median steady agent steps/s '
        f'(start-up excluded); load average after the runs: {load}. Per update, the Ray backend puts one parameter version '
        f'into the object store (fetched once by each node) and gets one rollout from each actor.',
        '',
        '| environment | actors x envs x steps | local agent steps/s | Ray agent steps/s | Ray frames/s | Ray / local | parameters per version | rollouts per update |',
        '|---|---|---:|---:|---:|---:|---:|---:|',
        *rows,
        '',
        *([f'Every run: {" ".join(runs)}', ''] if runs else []),
    ])
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
