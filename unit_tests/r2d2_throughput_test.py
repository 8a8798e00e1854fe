"""benchmarks/r2d2_throughput.py on Pong at a tiny size, for R2D2, NGU and Agent57: its table, with the raw replay
memory worked by hand."""

import re

import pytest

from unit_tests.helpers import TRACEBACK, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

TINY = (
    '--actor_seconds=0', '--learner_steps=1', '--num_envs_per_actor=1', '--actor_update_interval=8', '--burn_in=2', '--unroll_length=4',
    '--batch_size=2', '--replay_capacity=100',
)  # fmt: skip


def test_the_benchmark_measures_an_actor_the_learner_and_the_replay_memory_of_pong(tmp_path):
    # Sequences of 2 burn-in + 4 learned steps, starting 2 apart: the 8 steps of one rollout of one environment store
    # 2 sequences, one batch; one warm-up and one timed gradient step.
    out = tmp_path / 'r2d2_throughput.md'
    proc = run_module('benchmarks.r2d2_throughput', *TINY, f'--out={out}')
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    text = out.read_text()
    assert text in proc.stdout
    assert 'One actor of 1 environment(s)' in text and '(1 rollout(s), 8 agent steps, one torch thread)' in text
    assert 'on the 2 sequences of 6 steps the actor stored' in text
    # Raw, per sequence: 7 observations of 4 x 84 x 84 uint8 (the 6 steps' and the one after: 197,568 B), 6 int64 actions
    # (48), 6 float32 rewards (24), 3 x 6 bools (terminal, first, mask: 18), the actor's carried state: the LSTM's (h, c)
    # of 2 x 512 float32 and the previous action and reward (4,104), and one int64 count of new steps (8): 201,770 B,
    # 2.02 GB per 10,000 sequences.
    assert 'raw 201,770 B per sequence' in text
    (row,) = [line for line in text.splitlines() if line.startswith('| Pong |')]
    cells = [cell.strip() for cell in row.strip('|').split('|')]
    assert cells[1] == '1 x 8' and cells[4] == '2 x 2 + 4' and cells[6] == '2.02 GB'
    actor_rate, frame_rate, sequence_rate = (float(cells[index].replace(',', '')) for index in (2, 3, 5))
    assert actor_rate > 0 and abs(frame_rate - 4 * actor_rate) <= 2, row  # frame skip 4; both rounded to integers
    assert sequence_rate > 0
    compressed = int(re.search(r'snappy-compressed ([\d,]+) B', text).group(1).replace(',', ''))
    assert 4_202 < compressed < 201_770  # the arrays (4,202 B of the above) are kept as they are; the frames shrink


# NGU: R2D2's 201,762 B without its carried previous action and reward, and 6 steps x 5 float32 extras (120 B); Agent57:
# also the (h, c) of its second LSTM (4,096 B).
@pytest.mark.parametrize('agent, title, raw_bytes', [('ngu', 'NGU', '201,882'), ('agent57', 'Agent57', '205,978')])
def test_ngu_and_agent57_replays_hold_five_float32_extras_per_step_more(tmp_path, agent, title, raw_bytes):
    """The same tiny Pong measurement of NGU's and Agent57's actor (embedding, episodic memory, RND), learner and
    replay, whose steps also carry the intrinsic reward, previous action and rewards and the policy index."""
    out = tmp_path / f'{agent}_throughput.md'
    proc = run_module('benchmarks.r2d2_throughput', f'--agent={agent}', '--environment_name=Pong', *TINY, f'--out={out}')
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    text = out.read_text()
    assert text.startswith(f'# {title} on Atari:') and 'on the 2 sequences of 6 steps the actor stored' in text
    assert f'raw {raw_bytes} B per sequence' in text
    (row,) = [line for line in text.splitlines() if line.startswith('| Pong |')]
    cells = [cell.strip() for cell in row.strip('|').split('|')]
    assert float(cells[2].replace(',', '')) > 0 and float(cells[5].replace(',', '')) > 0
