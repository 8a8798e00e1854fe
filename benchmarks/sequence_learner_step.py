"""The gradient step of R2D2's family (R2D2, NGU, Agent57) on Pong: its time in float32 and with --bf16_learning, and
where it goes.

    python -m benchmarks.sequence_learner_step                         # R2D2 at the Pong preset's sizes, both modes
    python -m benchmarks.sequence_learner_step --agent=ngu --steps=5
    python -m benchmarks.sequence_learner_step --modes=float32 --profile  # and the time of each part of a step

In this process, with the agent's run_atari defaults and its Pong preset's learner settings (batches of 32 sequences of
20 burn-in + 40 learned steps; run_atari's flags given here win):
1. rollouts: read from --rollouts when that file exists; otherwise the agent's actor (as run_atari builds it, one
   torch thread, 4 Pong environments) fills --fill_rollouts rollouts of --actor_update_interval steps per environment
   and saves them there, so that later runs (or a checkout of another commit, given the same file) learn from the
   same sequences;
2. one learner per mode of --modes (float32: run_atari's; bf16: with --bf16_learning), each from the same initial
   network, its replay fed the same rollouts (so each draws the same batches): one warm-up gradient step each, then
   --steps timed steps of each, taken in turn (float32, bf16, float32, ...) so that every mode sees the same load;
3. the median seconds per gradient step of each mode, and with --profile the seconds of each part of the steps
   (sampling with snappy decompression, the torsos' and LSTMs' forward passes, the backward pass, clipping and Adam,
   new priorities, NGU's and Agent57's embedding and RND step), with --learner_threads torch threads on the CPU;
4. a digest (SHA-256) of each learner's state after its steps: its networks' parameters and last gradients, the
   loss of every step and the replay's priorities. The steps do not depend on timing, so two checkouts that compute
   the same numbers print the same digest for the same flags and rollouts (a refactor's float32 check).
The table is printed and written to --out with the load average.
"""

from __future__ import annotations

import argparse
import collections
import copy
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from benchmarks import r2d2_throughput
from deep_rl_zoo import main_loop
from deep_rl_zoo.settings import Settings

MODES = ('float32', 'bf16')


def preset_settings(parts: r2d2_throughput.AgentParts, flag_arguments: list[str]) -> Settings:
    """run_atari's settings on Pong with the agent's Pong preset (`PRESETS['Pong']` of its settings.py) under `flag_arguments`."""
    return r2d2_throughput.atari_settings(parts, ['--environment_name=Pong', *flag_arguments], preset=True)


def rollouts(parts: r2d2_throughput.AgentParts, settings: Settings, path: Path, count: int) -> list[dict[str, torch.Tensor]]:
    """The actor's rollouts saved at `path`, or `count` new ones (saved there)."""
    if path.exists():
        return torch.load(path)
    torch.set_num_threads(1)
    actor = main_loop._ActorFactory(settings, parts.make_network, parts.build_actor)(0, torch.device('cpu'))
    spec = parts.rollout_spec(settings.actor_update_interval)(actor.env, actor.env.num_envs, 0)
    filled = []
    for _ in range(count):
        buffer = {name: torch.empty(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
        actor.collect(buffer)
        filled.append(buffer)
    actor.env.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(filled, path)
    return filled


def digest(learner: Any, losses: list[float]) -> str:
    """SHA-256 (its first 16 hex digits) of `losses`, the learner's networks' parameters and gradients and its replay's
    priorities."""
    hash = hashlib.sha256(repr(losses).encode())
    for network in (learner.network, learner.target_network):
        for parameter in network.parameters():
            hash.update(parameter.detach().cpu().numpy().tobytes())
            if parameter.grad is not None:
                hash.update(parameter.grad.cpu().numpy().tobytes())
    hash.update(learner.replay._tree.values(torch.arange(learner.replay.num_sequences).numpy()).tobytes())
    return hash.hexdigest()[:16]


class PartTimer:
    """Seconds spent in parts of a learner's gradient steps, by wrapping its methods and hooking its modules."""

    def __init__(self, learner: Any):
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self._started: dict[tuple[str, int], float] = {}
        replay = learner.replay
        replay.sequences_at = self._timed('sampling: snappy decompression and gathering', replay.sequences_at)
        learner.sample = self._timed('sampling', learner.sample)
        learner.unroll = self._timed('forward passes (online and target unrolls)', learner.unroll)
        learner.gradient_step = self._timed('gradient step', learner.gradient_step)
        learner.clip_gradients = self._timed('gradient step: clipping', learner.clip_gradients)
        learner.optimizer.step = self._timed('gradient step: Adam', learner.optimizer.step)
        replay.update_priorities = self._timed('gradient step: new priorities', replay.update_priorities)
        if hasattr(learner, '_learn_intrinsic'):
            learner._learn_intrinsic = self._timed('embedding and RND step (NGU, Agent57)', learner._learn_intrinsic)
        for network, name in ((learner.q_network, 'online'), (learner.target_network, 'target')):
            for module in network.modules():
                if type(module).__name__ == 'NatureCnnTorso':
                    self._hook(module, f'forward passes: {name} Nature CNN torsos')
                elif isinstance(module, torch.nn.LSTM):
                    self._hook(module, f'forward passes: {name} LSTMs')

    def _timed(self, part: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - start

        return timed

    def _hook(self, module: torch.nn.Module, part: str) -> None:
        key = (part, id(module))
        module.register_forward_pre_hook(lambda *_: self._started.__setitem__(key, time.perf_counter()))
        module.register_forward_hook(lambda *_: self.seconds.__setitem__(part, self.seconds[part] + time.perf_counter() - self._started[key]))

    def rows(self, total: float, steps: int) -> list[tuple[str, float, float]]:
        """(part, seconds per step, share of the steps' time) of each part, with the backward pass (the gradient step
        without clipping, Adam and priorities) and the rest of a step (targets, losses, batch tensors) worked out;
        a part named 'x: y' is within the part 'x'."""
        seconds = dict(self.seconds)
        step = seconds.get('gradient step', 0.0)
        seconds['gradient step: backward pass'] = step - sum(seconds.get(f'gradient step: {part}', 0.0) for part in ('clipping', 'Adam', 'new priorities'))
        top = [part for part in seconds if ':' not in part]
        seconds['the rest (batch tensors, targets, losses)'] = total - sum(seconds.get(part, 0.0) for part in top)
        order = (
            'sampling', 'sampling: snappy decompression and gathering', 'forward passes (online and target unrolls)',
            'forward passes: online Nature CNN torsos', 'forward passes: target Nature CNN torsos', 'forward passes: online LSTMs',
            'forward passes: target LSTMs', 'gradient step', 'gradient step: backward pass', 'gradient step: clipping', 'gradient step: Adam',
            'gradient step: new priorities', 'embedding and RND step (NGU, Agent57)', 'the rest (batch tensors, targets, losses)',
        )  # fmt: skip
        return [(part, seconds[part] / steps, seconds[part] / total) for part in order if part in seconds]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], allow_abbrev=False)  # the rest are run_atari's flags
    parser.add_argument('--agent', choices=('r2d2', 'ngu', 'agent57'), default='r2d2', help="whose learner (and actor's rollouts)")
    parser.add_argument('--modes', default='float32,bf16', help='comma-separated, of float32 and bf16 (--bf16_learning)')
    parser.add_argument('--steps', type=int, default=5, help='timed gradient steps of each mode (after one to warm up)')
    parser.add_argument('--rollouts', help='file of actor rollouts to learn from (default: benchmarks/results/raw/<agent>_pong_rollouts.pt)')
    parser.add_argument('--fill_rollouts', type=int, default=2, help='rollouts the actor fills when --rollouts does not exist yet')
    parser.add_argument('--profile', action='store_true', help='also time the parts of each gradient step')
    parser.add_argument('--out', help='markdown file of the table (default: benchmarks/results/<agent>_learner_step.md)')
    args, flag_arguments = parser.parse_known_args(argv)
    modes = args.modes.split(',')
    if not modes or set(modes) - set(MODES) or len(set(modes)) != len(modes):
        raise SystemExit(f'error: --modes={args.modes}: a comma-separated list of distinct {" and ".join(MODES)}')
    if args.steps < 1:
        raise SystemExit(f'error: --steps={args.steps}: must be at least 1')
    parts = r2d2_throughput.agent_parts(args.agent)
    settings = preset_settings(parts, flag_arguments)
    path = Path(args.rollouts or f'benchmarks/results/raw/{args.agent}_pong_rollouts.pt')
    filled = rollouts(parts, settings, path, args.fill_rollouts)

    main_loop.prepare_process(settings)  # the learner's seeds and threads
    env = main_loop.create_environment(settings, 1, settings.seed)
    network = parts.make_network(env, settings)
    learners, timers = {}, {}
    for mode in modes:
        # The replay must not learn while it is fed: it waits for more sequences than the rollouts hold.
        learner_settings = settings.replace(min_replay_size=settings.replay_capacity, bf16_learning=mode == 'bf16')
        learner = parts.build_learner(copy.deepcopy(network), env, learner_settings, 0, torch.device('cpu'))
        if getattr(learner, 'bf16_learning', False) != (mode == 'bf16'):
            raise SystemExit(f'error: this checkout\'s {parts.name} learner has no --bf16_learning: run with --modes=float32')
        for buffer in filled:
            learner.update([buffer])
        learner.learn()  # warm-up: the optimizer's state is allocated at the first step
        learners[mode] = learner
        if args.profile:
            timers[mode] = PartTimer(learner)
    env.close()
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    losses: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.steps):
        for mode in modes:
            start = time.perf_counter()
            learners[mode].learn()
            times[mode].append(time.perf_counter() - start)
            losses[mode].append(learners[mode].learner_statistics()['loss'])

    medians = {mode: statistics.median(seconds) for mode, seconds in times.items()}
    first = learners[modes[0]]
    sequences = first.replay.num_sequences
    load = ', '.join(f'{value:.2f}' for value in os.getloadavg())
    command = ' '.join(argv if argv is not None else sys.argv[1:])
    lines = [
        f'# {parts.name} on Pong: the learner\'s gradient step',
        '',
        f'`python -m benchmarks.{Path(__file__).stem}{" " + command if command else ""}`',
        '',
        f'Batches of {settings.batch_size} sequences of {settings.burn_in} burn-in + {settings.unroll_length} learned steps, drawn from the '
        f'{sequences} sequences of {len(filled)} actor rollout(s) ({path}); {settings.learner_threads} torch threads on the CPU; one warm-up '
        f'step, then {args.steps} timed steps per mode, the modes in turn. Load average after the runs: {load}.',
        '',
        '| mode | seconds per gradient step (median) | each step | sequences/s | speed-up over the first mode | digest after the steps |',
        '|---|---:|---|---:|---:|---|',
    ]
    for mode in modes:
        each = ', '.join(f'{seconds:.2f}' for seconds in times[mode])
        lines.append(
            f'| {mode} | {medians[mode]:.2f} | {each} | {settings.batch_size / medians[mode]:.1f} | {medians[modes[0]] / medians[mode]:.2f}x | '
            f'`{digest(learners[mode], losses[mode])}` |'
        )
    for mode, timer in timers.items():
        lines += ['', f'Where a {mode} gradient step goes (seconds per step, mean of the {args.steps} timed steps; a part x: y is within the part x):', '']
        lines += ['| part | seconds per step | share |', '|---|---:|---:|']
        for part, seconds, share in timer.rows(sum(times[mode]), args.steps):
            lines.append(f'| {"- " + part if ":" in part else part} | {seconds:.3f} | {100 * share:.1f}% |')
    text = '\n'.join(lines + [''])
    print(text)
    out = Path(args.out or f'benchmarks/results/{args.agent}_learner_step.md')
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding='utf-8')
    return 0


if __name__ == '__main__':
    sys.exit(main())
