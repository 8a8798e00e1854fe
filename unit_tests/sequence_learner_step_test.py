"""benchmarks/sequence_learner_step.py at a tiny size on Pong-like rollouts (unit_tests/pong_sequences.py, no game):
both modes timed with the parts of a step, and a float32 digest that two runs agree on."""

import re

import pytest
import torch

from deep_rl_zoo.r2d2 import agent as r2d2
from unit_tests import pong_sequences
from unit_tests.helpers import TRACEBACK, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

# Batches of 2 sequences of 2 burn-in + 4 learned steps from the 4 x 24 steps of one rollout; 1 timed step per mode.
TINY = ('--steps=1', '--batch_size=2', '--burn_in=2', '--unroll_length=4', '--learner_threads=1')


def rows(text):
    return {cells[0]: cells for cells in ([cell.strip() for cell in line.strip('|').split('|')] for line in text.splitlines() if line.startswith('| '))}


def test_the_benchmark_times_both_modes_and_the_parts_of_a_step_and_digests_the_float32_learner(tmp_path):
    rollouts = tmp_path / 'rollouts.pt'
    torch.save([pong_sequences.pong_like_rollout(r2d2)], rollouts)
    out = tmp_path / 'step.md'
    proc = run_module('benchmarks.sequence_learner_step', *TINY, '--profile', f'--rollouts={rollouts}', f'--out={out}')
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("# R2D2 on Pong: the learner's gradient step") and 'Batches of 2 sequences of 2 burn-in + 4 learned steps' in text
    table = rows(text)
    float32, bf16 = table['float32'], table['bf16']
    assert float(float32[1]) > 0 and float(bf16[1]) > 0 and float32[4] == '1.00x'
    assert re.fullmatch(r'`[0-9a-f]{16}`', float32[5]) and float32[5] != bf16[5]
    assert text.count('Where a ') == 2 and {'sampling', '- forward passes: online Nature CNN torsos', '- forward passes: target LSTMs', '- gradient step: backward pass'} <= set(table)
    # The float32 learner's steps do not depend on timing: the same digest again.
    again = run_module('benchmarks.sequence_learner_step', *TINY, '--modes=float32', f'--rollouts={rollouts}', f'--out={tmp_path / "again.md"}')
    assert again.returncode == 0, again.stderr[-3000:]
    assert rows((tmp_path / 'again.md').read_text())['float32'][5] == float32[5]
