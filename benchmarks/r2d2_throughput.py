"""Throughput and replay memory of R2D2 (Kapturowski et al. 2019), NGU and Agent57 (Badia et al. 2020) on Atari: an
actor's env steps/s, the learner's sequences/s, and the replay's memory per 10,000 sequences, raw and
snappy-compressed.

    python -m benchmarks.r2d2_throughput          # R2D2 on Pong, about 4 minutes on 2 cores (a gradient step ~30 s)
    python -m benchmarks.r2d2_throughput --agent=ngu      # NGU on Montezuma's Revenge (its run_atari's default game)
    python -m benchmarks.r2d2_throughput --agent=agent57 --environment_name=Pong --actor_seconds 60 --learner_steps 10

In this process, with the agent's run_atari defaults (its flags, e.g. --environment_name=Breakout, may follow the
benchmark's own):
1. actor: one actor as an actor process of the run builds it (--num_envs_per_actor environments, the Nature CNN +
   LSTM network, its Ape-X epsilons, one torch thread; NGU and Agent57 also embed each observation, look up its
   neighbours in the episodic memory and run RND for the intrinsic reward) fills rollouts of
   --actor_update_interval steps per environment for --actor_seconds (and at least until the replay holds one batch
   of sequences): agent steps/s;
2. replay: each rollout goes into the learner's prioritized sequence replay as in a run (snappy-compressed frames,
   --replay_capacity sequences). Memory per sequence is the replay's own `bytes_per_sequence()`: for the compressed
   one, the mean size of the stored sequences' compressed frames plus the per-sequence arrays; for a raw one (the
   same replay with --nocompress_replay), its arrays, which do not depend on what is stored. Both times 10,000;
3. learner: on that replay, one gradient step to warm up, then --learner_steps timed ones (batches of --batch_size
   sequences of --burn_in + --unroll_length steps: prioritized sampling, both networks' unrolls, the update, new
   priorities; NGU and Agent57 also train the embedding and RND predictor) with --learner_threads torch threads,
   on the GPU with --learner_on_gpu (as in a run): sequences/s.
The actor and the learner run one after the other, each alone; in a run they share the machine. The table is
printed and written to --out with the load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from deep_rl_zoo import main_loop
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.settings import Settings

SEQUENCES = 10_000  # the memory figures are per this many stored sequences


@dataclasses.dataclass(frozen=True)
class AgentParts:
    """What the benchmark builds of one agent, as its run_atari does."""

    name: str
    make_network: Callable[..., torch.nn.Module]
    build_actor: Callable[..., Any]
    build_learner: Callable[..., Any]
    rollout_spec: Callable[[int], Callable[..., dict[str, tuple[tuple[int, ...], torch.dtype]]]]  # steps -> spec
    run_atari_settings: Settings  # its run_atari's defaults (`<agent>/settings.py`'s ATARI)


def agent_parts(agent_name: str) -> AgentParts:
    """The parts of 'r2d2', 'ngu' or 'agent57', after importing its run_atari (which defines its flags and defaults)."""
    importlib.import_module(f'deep_rl_zoo.{agent_name}.run_atari')
    agent = importlib.import_module(f'deep_rl_zoo.{agent_name}.agent')
    run_atari_settings = importlib.import_module(f'deep_rl_zoo.{agent_name}.settings').ATARI
    return AgentParts(
        run_atari_settings.agent_name, agent.make_network, agent.build_actor, agent.build_learner, lambda steps: agent.rollout_spec(steps, 'atari'),
        run_atari_settings,
    )  # fmt: skip


def atari_settings(parts: AgentParts, flag_arguments: list[str], preset: bool = False) -> Settings:
    """The run's settings of the agent's run_atari (its module imported by `agent_parts`) under `flag_arguments`, and
    with `preset` first the tuned settings of its --environment_name (`flags.apply_preset`: flags given win)."""
    from deep_rl_zoo import flags

    flags.FLAGS(['r2d2_throughput', *flag_arguments])
    if preset:
        flags.apply_preset()
    defaults = parts.run_atari_settings
    run_settings = defaults.with_values({field.name: flags.FLAGS[field.name].value for field in type(defaults).flag_fields('atari')})
    return main_loop.canonical_environment(run_settings)


def raw_bytes_per_sequence(parts: AgentParts, env: VectorEnvironment, settings: Settings, network: torch.nn.Module) -> float:
    """What one sequence takes in the replay of `settings` stored raw (--nocompress_replay), from a replay of one slot."""
    raw = settings.replace(compress_replay=False, replay_capacity=1, min_replay_size=1)
    return parts.build_learner(network, env, raw, 0, torch.device('cpu')).replay.bytes_per_sequence()


def _size(size: float) -> str:
    return f'{size / 1e9:,.2f} GB' if size >= 1e9 else f'{size / 1e6:,.1f} MB'


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], allow_abbrev=False)  # the rest are run_atari's flags
    parser.add_argument('--actor_seconds', type=float, default=30.0, help='how long the actor fills rollouts')
    parser.add_argument('--learner_steps', type=int, default=5, help='timed gradient steps of the learner (after one to warm up)')
    parser.add_argument('--agent', choices=('r2d2', 'ngu', 'agent57'), default='r2d2', help='whose actor, learner and replay')
    parser.add_argument('--out', help='markdown file of the table (default: benchmarks/results/<agent>_throughput.md)')
    args, flag_arguments = parser.parse_known_args(argv)
    if args.learner_steps < 1:
        raise SystemExit(f'error: --learner_steps={args.learner_steps}: must be at least 1')
    out = args.out or f'benchmarks/results/{args.agent}_throughput.md'
    agent = agent_parts(args.agent)
    settings = atari_settings(agent, flag_arguments)
    # The learner's replay must not learn while the actor fills it: it waits for a full replay, and learns when asked.
    settings_while_filling = settings.replace(min_replay_size=settings.replay_capacity)
    device = torch.device('cpu')  # the actor's, as in a run without --actors_on_gpu
    learner_device = main_loop.run_learner_device(settings)

    torch.set_num_threads(1)  # as in an actor process
    actor = main_loop._ActorFactory(settings, agent.make_network, agent.build_actor)(0, device)
    num_envs, steps = actor.env.num_envs, settings.actor_update_interval
    buffer = {name: torch.empty(shape, dtype=dtype) for name, (shape, dtype) in agent.rollout_spec(steps)(actor.env, num_envs, 0).items()}
    main_loop.prepare_process(settings)  # the learner's seeds and threads
    learner = agent.build_learner(agent.make_network(actor.env, settings), actor.env, settings_while_filling, 0, learner_device)
    raw = raw_bytes_per_sequence(agent, actor.env, settings, agent.make_network(actor.env, settings))

    torch.set_num_threads(1)
    rollouts, actor_seconds = 0, 0.0
    while actor_seconds < args.actor_seconds or learner.replay.num_sequences < settings.batch_size:
        start = time.perf_counter()
        actor.collect(buffer)
        actor_seconds += time.perf_counter() - start
        rollouts += 1
        learner.update([buffer])
    agent_steps = rollouts * num_envs * steps
    compressed = learner.replay.bytes_per_sequence()

    torch.set_num_threads(settings.learner_threads)
    learner.learn()  # warm-up: the optimizer's state is allocated at the first step
    start = time.perf_counter()
    for _ in range(args.learner_steps):
        learner.learn()
    learner_seconds = time.perf_counter() - start
    sequences_per_second = args.learner_steps * settings.batch_size / learner_seconds
    actor.env.close()

    frames = settings.environment_frame_skip
    row = (
        f'| {settings.environment_name} | {num_envs} x {steps} | {agent_steps / actor_seconds:,.0f} | {frames * agent_steps / actor_seconds:,.0f} | '
        f'{settings.batch_size} x {settings.burn_in} + {settings.unroll_length} | {sequences_per_second:,.1f} | '
        f'{_size(raw * SEQUENCES)} | {_size(compressed * SEQUENCES)} | {raw / compressed:,.1f}x |'
    )
    load = ', '.join(f'{value:.2f}' for value in os.getloadavg())
    command = ' '.join(argv if argv is not None else sys.argv[1:])
    text = '\n'.join([
        f'# {agent.name} on Atari: actor and learner throughput, replay memory',
        '',
        f'`python -m benchmarks.{Path(__file__).stem}{" " + command if command else ""}`',
        '',
        f'One actor of {num_envs} environment(s) for {actor_seconds:.1f} s ({rollouts} rollout(s), {agent_steps:,} agent steps, one torch thread); '
        f'the learner for {args.learner_steps} timed gradient steps ({learner_seconds:.1f} s on {learner_device.type}, {settings.learner_threads} torch threads) '
        f'on the {learner.replay.num_sequences:,} sequences of {settings.burn_in + settings.unroll_length} steps the actor stored; '
        f'each alone, one after the other. Replay memory from the replay itself (`bytes_per_sequence()`), per {SEQUENCES:,} sequences: '
        f'raw {raw:,.0f} B per sequence, snappy-compressed {compressed:,.0f} B (the mean over the stored ones). Load average '
        f'after the runs: {load}.',
        '',
        '| game | actor: envs x steps per rollout | actor agent steps/s | actor frames/s | learner: batch x (burn-in + learned steps) | '
        f'learner sequences/s | replay per {SEQUENCES // 1000}k sequences, raw | compressed | compression |',
        '|---|---|---:|---:|---|---:|---:|---:|---:|',
        row,
        '',
    ])
    print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
