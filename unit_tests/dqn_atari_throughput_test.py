"""benchmarks.dqn_atari_throughput's reading of each program's output: exact numbers of hand-made lines."""

import math

import pytest

from benchmarks import dqn_atari_throughput as bench


def test_learning_phase_rate_spans_the_marks_from_the_start_step_on():
    marks = [(1.0, 1_000), (10.0, 6_000), (20.0, 7_000), (30.0, 8_500), (50.0, 11_000)]
    assert bench.learning_phase_rate(marks, 7_000) == (11_000 - 7_000) / (50.0 - 20.0)
    assert math.isnan(bench.learning_phase_rate(marks, 11_000))  # one mark: no span
    assert math.isnan(bench.learning_phase_rate([], 0))


def test_ours_marks_drop_the_forced_line_before_the_iteration_line():
    stamped = [
        (0.5, 'Training DQN on Breakout\n'),
        (10.0, 'env steps 1,200/17,000 (7%) ...\n'),
        (20.0, 'env steps 2,500/17,000 (15%) ...\n'),
        (22.0, 'env steps 17,000/17,000 (100%) ...\n'),
        (22.1, 'iteration 0: env steps 17000, train return 1.00\n'),
    ]
    assert bench.ours_marks(stamped) == [(10.0, 1_200), (20.0, 2_500)]


def test_cleanrl_marks_count_100_agent_steps_per_sps_line_after_learning_starts():
    stamped = [(1.0, 'global_step=300, episodic_return=[1.]\n'), (2.0, 'SPS: 310\n'), (3.0, 'SPS: 305\n'), (5.0, 'SPS: 290\n')]
    assert bench.cleanrl_marks(stamped, 5_000) == [(2.0, 5_100), (3.0, 5_200), (5.0, 5_300)]
    assert bench.cleanrl_marks(stamped, 5_050) == [(2.0, 5_100), (3.0, 5_200), (5.0, 5_300)]


def test_table_gives_medians_and_the_ratio_to_the_faster_peer():
    args = bench.parse_args(['--repeats=3'])
    rates = {'ours default': [100.0, 90.0, 110.0], 'ours fast': [300.0, 310.0, 290.0], 'CleanRL': [120.0, 118.0, 125.0], 'SB3': [116.0, 100.0, 117.0]}
    report = bench.table(args, rates, ['1.00, 1.00, 1.00'] * 4, 600.0)
    assert "| ours, run_atari's defaults (4 envs, 2 learner threads, float32) (`no extra flag`) | 100.0 | 100.0, 90.0, 110.0 | 0.83 |" in report
    fast = "| ours, 4 envs, 2 learner threads, bf16 learning (the Pong presets' choice on bfloat16 hardware) (`--num_envs=4 --learner_threads=2 --bf16_learning`)"
    assert f'{fast} | 300.0 | 300.0, 310.0, 290.0 | 2.50 |' in report
    assert '| CleanRL (its default torch threads) | 120.0 | 120.0, 118.0, 125.0 | 1.00 |' in report
    assert '| SB3 (its default torch threads) | 116.0 | 116.0, 100.0, 117.0 | 0.97 |' in report
    one_thread = bench.table(bench.parse_args(['--peer_threads=1']), rates, ['1.00, 1.00, 1.00'] * 4, 600.0)
    assert '| CleanRL (1 torch thread) | 120.0 |' in one_thread


@pytest.mark.parametrize('argv, message', [(['--configurations=slow'], 'unknown'), (['--steps=8000'], 'at least 9000'), (['--peer_threads=-1'], 'peer_threads'), (['--repeats=0'], 'repeats')])
def test_bad_arguments_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(argv)
    assert message in capsys.readouterr().err
