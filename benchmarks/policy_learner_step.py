"""The update of PPO's and APPO's learners on Breakout-shaped rollouts: minibatch samples per second in float32 and
with --bf16_learning, at 1 and 2 learner threads.

    python -m benchmarks.policy_learner_step                      # both agents, 3 rounds: about 4 min on a busy 2-core machine
    python -m benchmarks.policy_learner_step --agents=ppo --rounds=5 --updates=2 --threads=1

In this process, with each agent's run_atari settings (`ATARI` of its settings.py: 2 actors x 4 environments x 128
steps = 1,024 samples per update, 4 epochs of 4 minibatches of 256, the Nature CNN (APPO: Sample Factory's
convnet_atari), Adam):
1. synthetic rollouts of Breakout's shape (uint8 frames 4 x 84 x 84, 4 actions; random frames, actions and
   rewards: the convolutions cost the same whatever the pixels), made once per agent;
2. one learner per agent and mode (float32; bf16: --bf16_learning), each from the same initial network, warmed up
   by one update (Adam's state, oneDNN's kernels);
3. per --threads value, --rounds rounds in which every configuration (agent, mode) in turn makes --updates updates
   (2-10 s each on a busy 2-core machine), so that each sees the same load; a round's rate is the minibatch samples
   its updates put through the forward pass, backward pass and Adam step (epochs x batch samples per update) per
   second.
The table (the median rate over the rounds and each round's, and bf16's median over float32's) is printed and written
to --out with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any, Callable, Optional

import gymnasium
import numpy as np
import torch

from deep_rl_zoo import rollouts
from deep_rl_zoo.appo import agent as appo_agent
from deep_rl_zoo.appo import settings as appo_settings
from deep_rl_zoo.ppo import agent as ppo_agent
from deep_rl_zoo.ppo import settings as ppo_settings
from deep_rl_zoo.settings import ActorsAndLearner

MODES = ('float32', 'bf16')
BREAKOUT = types.SimpleNamespace(  # what the builders and rollout specs read of Breakout's vector environment
    single_observation_space=gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8), single_action_space=gymnasium.spaces.Discrete(4)
)


def synthetic_rollout(spec: dict[str, tuple[tuple[int, ...], torch.dtype]], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """A rollout buffer of `spec`: random frames, actions and sign rewards; the log-probs of the uniform policy, zero
    values and logits, discount 0.99, every environment on policy 0 and no time-outs."""
    num_actions = int(BREAKOUT.single_action_space.n)
    fills: dict[str, Callable[[tuple[int, ...]], torch.Tensor]] = {
        'observation': lambda shape: torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator),
        'last_observation': lambda shape: torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator),
        'action': lambda shape: torch.randint(num_actions, shape, generator=generator),
        'log_prob': lambda shape: torch.full(shape, -float(np.log(num_actions))),
        'reward': lambda shape: torch.randint(-1, 2, shape, generator=generator).float(),
        'discount': lambda shape: torch.full(shape, 0.99),
    }
    return {name: fills[name](shape) if name in fills else torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}


def _learner_and_rollouts(agent: Any, settings: ActorsAndLearner, make_spec: Callable[..., Any], num_rollouts: int) -> tuple[Any, list[dict[str, torch.Tensor]]]:
    """`agent`'s learner from the run's `settings` (under the core's names) and `num_rollouts` synthetic rollouts of the
    spec `make_spec` gives."""
    torch.manual_seed(settings.seed)
    learner = agent.build_learner(agent.make_network(BREAKOUT, settings), BREAKOUT, settings, 1_000, torch.device('cpu'))
    generator = torch.Generator().manual_seed(0)
    spec = make_spec(BREAKOUT, settings.num_envs_per_actor, settings.unroll_length)
    return learner, [synthetic_rollout(spec, generator) for _ in range(num_rollouts)]


def ppo_parts(bf16: bool) -> tuple[Any, list[dict[str, torch.Tensor]], int]:
    """PPO's run_atari learner (with --bf16_learning when `bf16`), its batch of rollouts and the minibatch samples of an update."""
    settings = ppo_settings.ATARI.replace(bf16_learning=bf16)
    learner, buffers = _learner_and_rollouts(ppo_agent, settings, rollouts.rollout_spec, settings.num_actors)
    return learner, buffers, settings.num_epochs * settings.num_actors * settings.num_envs_per_actor * settings.unroll_length


def appo_parts(bf16: bool) -> tuple[Any, list[dict[str, torch.Tensor]], int]:
    """APPO's run_atari learner (with --bf16_learning when `bf16`), one training batch of rollouts and its minibatch
    samples per update."""
    settings = appo_settings.ATARI.replace(bf16_learning=bf16).core_settings()
    learner, buffers = _learner_and_rollouts(appo_agent, settings, rollouts.policy_set_rollout_spec, settings.batch_rollouts)
    return learner, buffers, settings.num_epochs * settings.batch_size * settings.num_batches_per_epoch


AGENTS = {'ppo': ppo_parts, 'appo': appo_parts}


def timed_round(learner: Any, buffers: list[dict[str, torch.Tensor]], samples_per_update: int, updates: int) -> float:
    """Minibatch samples per second of `updates` updates of `learner` on `buffers`."""
    start = time.perf_counter()
    for _ in range(updates):
        learner.update(buffers)
    return updates * samples_per_update / (time.perf_counter() - start)


def load_average() -> str:
    return ', '.join(f'{value:.2f}' for value in os.getloadavg())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], allow_abbrev=False)
    parser.add_argument('--agents', default='ppo,appo', help=f'comma-separated, of {", ".join(AGENTS)}')
    parser.add_argument('--threads', default='1,2', help='comma-separated torch thread counts of the learner')
    parser.add_argument('--rounds', type=int, default=3, help='rounds per thread count; each runs every configuration once')
    parser.add_argument('--updates', type=int, default=1, help='updates per configuration and round')
    parser.add_argument('--out', default='benchmarks/results/policy_learner_step.md', help='markdown file of the table')
    args = parser.parse_args(argv)
    agents, threads = args.agents.split(','), [int(count) for count in args.threads.split(',')]
    if not agents or set(agents) - set(AGENTS) or len(set(agents)) != len(agents):
        raise SystemExit(f'error: --agents={args.agents}: a comma-separated list of distinct {", ".join(AGENTS)}')
    if args.rounds < 1 or args.updates < 1 or min(threads) < 1:
        raise SystemExit('error: --rounds, --updates and every --threads count must be positive')
    load_before = load_average()
    configurations = [(name, mode) for name in agents for mode in MODES]
    parts = {(name, mode): AGENTS[name](mode == 'bf16') for name, mode in configurations}
    torch.set_num_threads(threads[0])
    for learner, buffers, _ in parts.values():
        learner.update(buffers)  # warm-up
    rates: dict[tuple[int, str, str], list[float]] = {(count, name, mode): [] for count in threads for name, mode in configurations}
    for count in threads:
        torch.set_num_threads(count)
        for _ in range(args.rounds):
            for name, mode in configurations:
                rates[count, name, mode].append(timed_round(*parts[name, mode], args.updates))

    command = ' '.join(argv if argv is not None else sys.argv[1:])
    lines = [
        "# PPO's and APPO's learner update in float32 and with --bf16_learning",
        '',
        f'`python -m benchmarks.{Path(__file__).stem}{" " + command if command else ""}`',
        '',
        "Each agent's run_atari learner on synthetic Breakout-shaped rollouts (1,024 samples per update: 4 epochs of 4 "
        f'minibatches of 256); {args.rounds} rounds of {args.updates} update(s) per configuration, the configurations in '
        f'turn, after one warm-up update each. Load average before: {load_before}; after: {load_average()}.',
        '',
        '| agent | threads | float32 samples/s (median) | each round | bf16 samples/s (median) | each round | bf16 / float32 |',
        '|---|---:|---:|---|---:|---|---:|',
    ]
    for count in threads:
        for name in agents:
            float32, bf16 = rates[count, name, 'float32'], rates[count, name, 'bf16']
            lines.append(
                f'| {name} | {count} | {statistics.median(float32):.0f} | {", ".join(f"{rate:.0f}" for rate in float32)} | '
                f'{statistics.median(bf16):.0f} | {", ".join(f"{rate:.0f}" for rate in bf16)} | {statistics.median(bf16) / statistics.median(float32):.2f} |'
            )
    text = '\n'.join(lines + [''])
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
