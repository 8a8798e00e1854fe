"""What an RMSProp or Adam learner's steps look like, read from a checkpoint's optimizer state (no training):

    python -m benchmarks.optimizer_state path/to/IMPALA_Pong_19.ckpt
    python -m benchmarks.optimizer_state path/to/A2C_Pong_19.ckpt --eps 1e-5 --out table.md

For each parameter tensor of the checkpoint's network, the running root mean square of its gradient (RMSProp's
`square_avg`, Adam's `exp_avg_sq`) at the median and 90th percentile over its weights, and, for the median weight,
the step per unit of gradient (in learning rates) with epsilon outside the square root, 1 / (RMS + eps) (PyTorch's
RMSProp and Adam), and inside, 1 / sqrt(RMS^2 + eps) (TensorFlow 1's RMSProp, `--optimizer=rmsprop_tf`). Where
the two differ much, epsilon, not the gradient, sets the step of most weights. With epsilon outside (Adam's
`lr * m / (RMS + eps)`), the share of weights whose RMS is below epsilon, where it more than halves their step, and
the median of RMS / (RMS + eps), the fraction of the normalised step that epsilon leaves (near 0: the weights all but
stop learning; C51's Pong run, benchmarks/NOTEBOOK.md "C51 on Pong: Adam's eps"). Epsilon is the checkpoint's
`--optimizer_eps` or `--adam_eps` flag unless --eps is given.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import torch

from deep_rl_zoo import checkpoint

SECOND_MOMENTS = ('square_avg', 'exp_avg_sq')  # RMSProp's and Adam's running mean of the squared gradient


def parameter_moments(state: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """(name, running mean of the squared gradient) of each parameter of the learner's network, in the optimizer's
    order. The optimizer holds its parameters by index in the order of `network.parameters()`, which is the order of
    the network's state dict without its buffers: a state-dict entry is matched to the next optimizer entry only when
    their shapes agree (a buffer's is skipped)."""
    optimizer, network = state['optimizer'], state['network']
    indices = optimizer['param_groups'][0]['params']
    moments = []
    for index in indices:
        entry = optimizer['state'].get(index, {})
        moment = next((entry[key] for key in SECOND_MOMENTS if key in entry), None)
        if moment is None:
            raise ValueError(f'optimizer entry {index} has none of {SECOND_MOMENTS}: not RMSProp or Adam')
        moments.append(moment)
    names = iter(network.items())
    matched = []
    for moment in moments:
        name = next((name for name, tensor in names if tensor.shape == moment.shape), None)
        if name is None:
            raise ValueError(f'no network tensor of shape {tuple(moment.shape)} left for an optimizer entry')
        matched.append((name, moment))
    return matched


def rows(moments: list[tuple[str, torch.Tensor]], eps: float) -> list[dict[str, Any]]:
    """One row per parameter tensor: weights, RMS median and 90th percentile, steps per unit gradient of the median
    weight with epsilon outside and inside the square root, the share of weights with RMS below epsilon and the median
    RMS / (RMS + eps)."""
    table = []
    for name, moment in moments:
        rms = moment.double().sqrt().flatten()
        median = float(rms.median())
        p90 = float(rms.kthvalue(max(1, math.ceil(0.9 * rms.numel()))).values)
        outside, inside = 1.0 / (median + eps), 1.0 / math.sqrt(median**2 + eps)
        below, kept = float((rms < eps).double().mean()), float((rms / (rms + eps)).median())
        table.append(
            {'name': name, 'weights': rms.numel(), 'median': median, 'p90': p90, 'outside': outside, 'inside': inside, 'below': below, 'kept': kept}
        )
    return table


def markdown(path: str, eps: float, table: list[dict[str, Any]]) -> str:
    lines = [
        f'# Optimizer state of {path}',
        '',
        f'Epsilon {eps:g}. RMS: the running root mean square of each weight\'s gradient; steps per unit of gradient (in '
        'learning rates) of the median weight with epsilon outside the square root (PyTorch) and inside (TensorFlow 1); '
        'the weights whose RMS is below epsilon, and the median RMS / (RMS + eps): the share of the step epsilon leaves.',
        '',
        '| parameter | weights | RMS median | RMS 90th percentile | step, eps outside | step, eps inside | outside / inside | RMS < eps | RMS / (RMS + eps) |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ]
    for row in table:
        lines.append(
            f"| {row['name']} | {row['weights']:,} | {row['median']:.2e} | {row['p90']:.2e} | {row['outside']:.1f} | {row['inside']:.1f} | "
            f"{row['outside'] / row['inside']:.2f} | {row['below']:.0%} | {row['kept']:.2f} |"
        )
    return '\n'.join(lines) + '\n'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('checkpoint', help='a .ckpt file written by training')
    parser.add_argument('--eps', type=float, default=None, help="the optimizer's epsilon (default: the checkpoint's --optimizer_eps or --adam_eps)")
    parser.add_argument('--out', default=None, help='also write the table to this markdown file')
    args = parser.parse_args(argv)
    loaded = checkpoint.load_checkpoint(args.checkpoint)
    flags = loaded['flags']
    eps = args.eps if args.eps is not None else flags.get('optimizer_eps', flags.get('adam_eps'))
    if eps is None:
        parser.error(f'{args.checkpoint} has no --optimizer_eps or --adam_eps flag: pass --eps')
    text = markdown(args.checkpoint, float(eps), rows(parameter_moments(loaded['state']), float(eps)))
    print(text, end='')
    if args.out:
        with open(args.out, 'w') as file:
            file.write(text)


if __name__ == '__main__':
    main()
