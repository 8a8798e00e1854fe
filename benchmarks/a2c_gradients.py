"""Throughput of A2C against its gradient variant (actors compute the gradients), one run after another on the same
machine, on Pong (Nature CNN) and CartPole-v1 (MLP):

    python -m benchmarks.a2c_gradients                      # about 5 minutes on 2 cores
    python -m benchmarks.a2c_gradients --pong_steps 20000 --cartpole_steps 100000

For each environment it runs `deep_rl_zoo.a2c.run_atari` / `run_classic` (the learner computes the loss) and
`run_atari_grad` / `run_classic_grad` with each `--gradient_compression` (none, bfloat16, int8) for one iteration
of the given agent steps without evaluation, each with the run script's default actors and environments, and
reports steady agent steps/s from the live progress lines (start-up excluded; see
`atari_throughput.steady_rate`), the bytes one actor sends per gradient, and the ratio to plain A2C. Both variants
make the same updates (see deep_rl_zoo/a2c/agent.py); they differ only in where the forward and backward passes
run: on the learner while the actors wait, or in the actors in parallel. The table is printed and written to
--out with the load average: on a busy machine the ratios are unreliable.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

from benchmarks.atari_throughput import FRAME_SKIP, measure_training
from deep_rl_zoo import gradient_compression
from deep_rl_zoo.networks.policy import mlp_actor_critic, nature_cnn_actor_critic

# environment: (kind, its A2C network: the Nature CNN for Pong's 6 actions, two 64x64 MLPs for CartPole's 4 inputs)
ENVIRONMENTS = {'Pong': ('atari', lambda: nature_cnn_actor_critic(6)), 'CartPole-v1': ('classic', lambda: mlp_actor_critic(4, 2))}
VARIANTS = (('A2C', '', None), *(('A2C-grad', '_grad', method) for method in gradient_compression.METHODS))


def command(environment: str, suffix: str, compression: Optional[str], steps: int, seed: int) -> list[str]:
    kind, _ = ENVIRONMENTS[environment]
    script = ('run_atari' if kind == 'atari' else 'run_classic') + suffix
    return [
        sys.executable, '-m', f'deep_rl_zoo.a2c.{script}', f'--environment_name={environment}', f'--num_train_steps={steps}',
        '--num_iterations=1', '--num_eval_steps=0', '--nouse_tensorboard', f'--seed={seed}',
        *([f'--gradient_compression={compression}'] if compression else []),
    ]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--pong_steps', type=int, default=16_000, help='agent steps of each Pong run (0 skips Pong)')
    parser.add_argument('--cartpole_steps', type=int, default=200_000, help='agent steps of each CartPole run (0 skips it)')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--out', default='benchmarks/results/a2c_gradients.md', help='markdown file of the table')
    args = parser.parse_args(argv)

    rows = []
    with tempfile.TemporaryDirectory(prefix='a2c_gradients_') as scratch:
        for environment, steps in (('Pong', args.pong_steps), ('CartPole-v1', args.cartpole_steps)):
            if steps <= 0:
                continue
            baseline = math.nan
            for index, (agent, suffix, compression) in enumerate(VARIANTS):
                run_dir = Path(scratch) / f'{environment}_{agent}_{compression}'
                measured = measure_training(command(environment, suffix, compression, steps, args.seed), run_dir)
                if index == 0:
                    baseline = measured['steady']
                num_parameters = sum(parameter.numel() for parameter in ENVIRONMENTS[environment][1]().parameters())
                sent = gradient_compression.encoded_bytes(compression, num_parameters) if compression else 0
                frames = FRAME_SKIP if environment == 'Pong' else 1
                rows.append(
                    f'| {environment} | {agent} | {compression or "-"} | {sent:,} | {measured["steady"]:,.0f} | '
                    f'{measured["steady"] * frames:,.0f} | {measured["steady"] / baseline:.2f} |'
                )
                print(rows[-1], flush=True)
    load = ', '.join(f'{value:.2f}' for value in os.getloadavg())
    text = '\n'.join([
        '# A2C and its gradient variant: throughput',
        '',
        f'`python -m benchmarks.{Path(__file__).stem} {" ".join(argv if argv is not None else sys.argv[1:])}`'.replace(' `', '`'),
        '',
        f'Run one after another, each with its run script\'s default actors and environments; load average after the runs: {load}.',
        '',
        '| environment | agent | gradient compression | bytes per actor gradient | steady agent steps/s | frames/s | vs A2C |',
        '|---|---|---|---:|---:|---:|---:|',
        *rows,
        '',
    ])
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
