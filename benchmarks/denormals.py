"""Denormal numbers in a checkpoint's optimizer state, and what they cost its step (no training):

    python -m benchmarks.denormals path/to/DoubleDQN_Pong_7_at777630.ckpt --out table.md

Over a long run the running moments of weights whose gradients vanish (dead units, inputs that never vary) decay
towards zero and pass through the denormal range (below 1.2e-38 in float32), where Intel CPUs compute on a slow
microcode path. For each moment of the checkpoint's Adam or RMSProp state (`exp_avg`, `exp_avg_sq`, `square_avg`,
`momentum_buffer`) the table counts its denormal entries; then one optimizer step on the checkpoint's moments
(zero gradients, one torch thread, Adam fused as the replay agents build it) is timed with denormals as they are and
flushed to zero (`torch.set_flush_denormal`, what every process of a run sets: `distributed.set_up_torch`): two
rounds of `--repeats` steps per mode, the modes in turn, and each mode's lower median is reported.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from deep_rl_zoo import checkpoint

MOMENTS = ('exp_avg', 'exp_avg_sq', 'square_avg', 'momentum_buffer')
SMALLEST_NORMAL_BITS = 0x00800000  # float32: exponent bits 0 and a mantissa other than 0 make a denormal


def is_denormal(values: torch.Tensor) -> torch.Tensor:
    """Which float32 `values` are denormal, read from their bits (comparisons would read them as 0 in a process that
    flushes denormals)."""
    magnitude_bits = values.float().contiguous().view(torch.int32) & 0x7FFFFFFF
    return (magnitude_bits > 0) & (magnitude_bits < SMALLEST_NORMAL_BITS)


def flushing_denormals() -> bool:
    """Whether this thread flushes denormals to zero (torch has no getter): the smallest denormal times 2 is then 0."""
    return bool((torch.ones(1, dtype=torch.int32).view(torch.float32) * 2).view(torch.int32).item() == 0)


def optimizer_state_of(state: dict[str, Any]) -> dict[str, Any] | None:
    """The optimizer state of a checkpoint's agent state: the learner's own, or APPO's first policy's."""
    if 'optimizer' in state:
        return state['optimizer']
    policies = state.get('policies')
    return policies[0].get('optimizer') if policies else None


def denormal_counts(optimizer_state: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """moment name -> (denormal entries, all entries) over every parameter's state."""
    counts: dict[str, tuple[int, int]] = {}
    for entry in optimizer_state['state'].values():
        for name in MOMENTS:
            if name in entry:
                denormal, total = counts.get(name, (0, 0))
                counts[name] = (denormal + int(is_denormal(entry[name]).sum()), total + entry[name].numel())
    return counts


def step_seconds(optimizer_state: dict[str, Any], flush: bool, repeats: int) -> float:
    """Median seconds of one step of the checkpoint's optimizer (Adam fused, RMSProp as PyTorch's) on its own moments,
    zero gradients, with denormals flushed or not."""
    entries = [optimizer_state['state'][index] for index in optimizer_state['param_groups'][0]['params']]
    parameters = [torch.nn.Parameter(torch.zeros_like(next(entry[name] for name in MOMENTS if name in entry))) for entry in entries]
    adam = 'exp_avg_sq' in entries[0]
    previous, was_flushing = torch.get_num_threads(), flushing_denormals()
    torch.set_num_threads(1)
    torch.set_flush_denormal(flush)
    try:
        times = []
        for _ in range(repeats):
            optimizer = torch.optim.Adam(parameters, fused=True) if adam else torch.optim.RMSprop(parameters)
            for parameter, entry in zip(parameters, entries):
                parameter.grad = torch.zeros_like(parameter)
                optimizer.state[parameter] = {key: value.clone() if torch.is_tensor(value) else value for key, value in entry.items()}
            start = time.perf_counter()
            optimizer.step()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        torch.set_flush_denormal(was_flushing)
        torch.set_num_threads(previous)


def markdown(path: str, counts: dict[str, tuple[int, int]], as_they_are: float, flushed: float) -> str:
    lines = [f'# Denormal numbers in the optimizer state of {path}', '', '| moment | denormal entries | of | share |', '|---|---:|---:|---:|']
    for name, (denormal, total) in counts.items():
        lines.append(f'| {name} | {denormal:,} | {total:,} | {denormal / total:.1%} |')
    lines += [
        '',
        'One step on these moments (zero gradients, one thread; the lower of two rounds\' medians): '
        f'{as_they_are * 1e3:.2f} ms with denormals as they are, {flushed * 1e3:.2f} ms flushed to zero ({as_they_are / flushed:.1f}x).',
    ]
    return '\n'.join(lines) + '\n'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('checkpoint', help='a .ckpt file written by training')
    parser.add_argument('--repeats', type=int, default=21, help='optimizer steps timed per mode (median)')
    parser.add_argument('--out', default=None, help='also write the table to this markdown file')
    args = parser.parse_args(argv)
    state = checkpoint.load_checkpoint(args.checkpoint)['state']
    optimizer_state = optimizer_state_of(state)
    if optimizer_state is None:
        parser.error(f'{args.checkpoint} has no optimizer state where the agents keep it (its state holds {", ".join(state)})')
    if not optimizer_state['state']:
        parser.error(f'{args.checkpoint} holds no optimizer moments (no step taken)')
    seconds = {flush: [] for flush in (False, True)}
    for _ in range(2):  # the two modes in turn, twice
        for flush in (False, True):
            seconds[flush].append(step_seconds(optimizer_state, flush, args.repeats))
    text = markdown(args.checkpoint, denormal_counts(optimizer_state), min(seconds[False]), min(seconds[True]))
    print(text, end='')
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as file:
            file.write(text)


if __name__ == '__main__':
    main()
