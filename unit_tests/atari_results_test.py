"""Tests of benchmarks.atari_results: milestones, each agent's goal, and the interquartile mean over seeds."""

import csv

import pytest

from benchmarks import atari_results, learning


def _pong(agent, seed, returns, seconds=None, step=100_000):
    steps = [step * (index + 1) for index in range(len(returns))]
    run = learning.Run(agent, 'Pong', seed, None)
    return learning.RunResult(run, 18.0, steps, list(returns), list(seconds or [60.0 * (i + 1) for i in range(len(returns))]), [])


def test_milestones_are_the_first_evaluation_above_zero_and_at_the_score():
    result = _pong('ppo', 1, [-21.0, -20.0, 0.0, 5.5, 18.0, 20.0])
    assert atari_results.first_above(result, 0.0, strictly=True) == 3  # 0.0 is not above 0
    assert atari_results.first_above(result, 18.0, strictly=False) == 4
    assert atari_results.first_above(result, 21.0, strictly=False) is None
    table = '\n'.join(atari_results.run_table([result], [18.0], 2_000_000, -21.0, 10.0))
    assert '| ppo | 1 | 400,000 | 4 min | 500,000 | 5 min | -21.0 | 20.0 | 20.0 | 600,000 | mean > 0 | yes |' in table


def test_goals_count_only_evaluations_within_the_budget():
    late = _pong('dqn', 1, [-21.0, -5.0, 3.0], step=1_000_000)  # above 0 only at 3M agent steps
    assert atari_results.meets_goal(late, 2_000_000, -21.0, 10.0) == (False, 'mean > 0')
    assert atari_results.meets_goal(late, 3_000_000, -21.0, 10.0) == (True, 'mean > 0')
    partial = _pong('dqn', 1, [-21.0, -15.0])  # stopped at 200k agent steps: not a failure yet
    table = '\n'.join(atari_results.run_table([partial, late], [18.0], 2_000_000, -21.0, 10.0))
    assert '| -21.0 | -15.0 | -15.0 | 200,000 | mean > 0 | not yet: partial run |' in table
    assert '| -21.0 | 3.0 | 3.0 | 3,000,000 | mean > 0 | no |' in table


def test_the_other_agents_need_ten_points_over_the_lowest_score_and_still_rising():
    rising = _pong('r2d2', 1, [-21.0, -20.0, -18.0, -15.0, -12.0, -10.0])
    fell_back = _pong('r2d2', 1, [-21.0, -11.0, -10.0, -15.0, -19.0, -20.0])
    too_little = _pong('reinforce', 1, [-21.0, -20.0, -19.0, -16.0, -14.0, -12.0])
    assert atari_results.meets_goal(rising, 2_000_000, -21.0, 10.0) == (True, '>= -11 and rising')
    assert atari_results.meets_goal(fell_back, 2_000_000, -21.0, 10.0)[0] is False
    assert atari_results.meets_goal(too_little, 2_000_000, -21.0, 10.0)[0] is False
    assert atari_results.rising([-21.0, -20.0, -19.0, -19.0, -20.0, -18.0]) is True  # -19 >= -20
    assert atari_results.rising([1.0, 0.0]) is False


def test_interquartile_mean_cuts_a_quarter_of_the_seeds_off_each_end():
    assert atari_results.interquartile_mean([1.0, 2.0, 3.0, 4.0, 100.0]) == 3.0  # 5 seeds: the middle 3
    assert atari_results.interquartile_mean([1.0, 2.0, 3.0, 10.0]) == 2.5  # 4 seeds: the middle 2
    assert atari_results.interquartile_mean([4.0, 8.0]) == 6.0
    low, high = atari_results.bootstrap_interval([5.0, 5.0, 5.0])
    assert (low, high) == (5.0, 5.0)
    low, high = atari_results.bootstrap_interval([1.0, 2.0, 3.0, 4.0, 100.0], seed=0)
    assert 1.0 <= low <= 3.0 <= high <= 100.0 and high < 100.0


def test_seeds_table_counts_a_seed_that_never_got_there_as_the_budget():
    runs = [_pong('appo', seed, returns) for seed, returns in [(1, [-21.0, 18.5]), (2, [-21.0, -3.0, 19.0]), (3, [-21.0] + [-10.0] * 9)]]  # seed 3: to 1M
    table = '\n'.join(atari_results.seeds_table(runs, 18.0, 1_000_000))
    assert '| appo | 3 | 1: 200,000; 2: 300,000; 3: not reached | 500,000 | 200,000 - 1,000,000 |' in table  # 3 seeds: none cut
    table = '\n'.join(atari_results.seeds_table(runs, 18.0, 300_000))
    assert '| appo | 3 | 1: 200,000; 2: 300,000; 3: not reached | 266,667 | 200,000 - 300,000 |' in table
    runs.append(_pong('appo', 4, [-21.0, -5.0]))  # stopped at 200k, short of 18 and of the 1M budget
    table = '\n'.join(atari_results.seeds_table(runs, 18.0, 1_000_000))
    assert '| appo | 3 | 1: 200,000; 2: 300,000; 3: not reached; 4: stopped at 200,000 (left out) | 500,000 |' in table


def test_every_agent_adds_a_row_for_each_agent_without_a_run():
    table = atari_results.run_table([_pong('ppo', 1, [-21.0, 5.0])], [18.0], 2_000_000, -21.0, 10.0, every_agent=True)
    rows = table[2:]
    assert len(rows) == 21 and len(atari_results.ABOVE_ZERO + atari_results.GAIN) == 21
    assert rows[0].startswith('| ppo | 1 | 200,000 |')
    assert '| dqn | - | - | - | - | - | - | - | - | - | mean > 0 | no run yet |' in table
    assert '| r2d2 | - | - | - | - | - | - | - | - | - | >= -11 and rising | no run yet |' in table
    assert not any(row.startswith('| ppo | -') for row in rows)
    assert all(row.count('|') == table[0].count('|') for row in rows)


@pytest.mark.slow
def test_main_writes_the_table_and_the_plot(tmp_path):
    path = tmp_path / 'learning_pong_ppo_evaluations.csv'
    with open(path, 'w', newline='') as file:
        writer = csv.writer(file)
        writer.writerow(learning.EVALUATION_COLUMNS)
        for steps, value in [(100_000, -21.0), (200_000, 2.0), (300_000, 18.0)]:
            writer.writerow(['ppo', 'Pong', 1, 18, steps, value, steps / 1000])
    out = tmp_path / 'pong'
    assert atari_results.main([str(path), '--out', str(out), '--screenshots_dir', str(tmp_path / 'shots')]) == 0
    text = out.with_suffix('.md').read_text()
    assert '| ppo | 1 | 200,000 | 3 min | 300,000 | 5 min | -21.0 | 18.0 | 18.0 | 300,000 | mean > 0 | yes |' in text
    assert (tmp_path / 'shots' / 'learning_Pong.png').stat().st_size > 0


def test_main_appends_the_notes_and_refuses_a_missing_notes_file(tmp_path):
    path = tmp_path / 'learning_pong_a2c_evaluations.csv'
    with open(path, 'w', newline='') as file:
        writer = csv.writer(file)
        writer.writerow(learning.EVALUATION_COLUMNS)
        writer.writerow(['a2c', 'Pong', 1, 18, 2_000_000, -21.0, 4000.0])
    notes = tmp_path / 'notes.md'
    notes.write_text('## a2c\n\nStayed at -21: tried RMSProp as TensorFlow computes it.\n')
    out = tmp_path / 'pong'
    assert atari_results.main([str(path), '--out', str(out), '--notes', str(notes), '--every_agent']) == 0
    text = out.with_suffix('.md').read_text()
    assert text.endswith('| sac ' + '| - ' * 9 + '| >= -11 and rising | no run yet |\n\n## a2c\n\nStayed at -21: tried RMSProp as TensorFlow computes it.\n')
    with pytest.raises(SystemExit, match='--notes=.*missing.md: no such file'):
        atari_results.main([str(path), '--out', str(out), '--notes', str(tmp_path / 'missing.md')])


def test_seeds_budget_sets_where_the_seeds_table_censors(tmp_path):
    path = tmp_path / 'learning_pong_appo_5seeds_evaluations.csv'
    with open(path, 'w', newline='') as file:
        writer = csv.writer(file)
        writer.writerow(learning.EVALUATION_COLUMNS)
        for seed, returns in [(1, [-21.0, 18.0]), (2, [-21.0, 5.0, 17.0])]:  # seed 2 ran to 300k without 18
            for index, value in enumerate(returns):
                writer.writerow(['appo', 'Pong', seed, 18, 100_000 * (index + 1), value, 60 * (index + 1)])
    out = tmp_path / 'pong'
    assert atari_results.main([str(path), '--out', str(out), '--seeds_budget', '300000']) == 0
    text = out.with_suffix('.md').read_text()
    assert 'Over seeds, within 300,000 agent steps (a seed that did not reach 18 by then counts as 300,000):' in text
    assert '| appo | 2 | 1: 200,000; 2: not reached | 250,000 | 200,000 - 300,000 |' in text
    assert atari_results.main([str(path), '--out', str(out)]) == 0  # within the 2M budget seed 2 was cut short
    assert 'Over seeds' not in out.with_suffix('.md').read_text()  # one seed left: no table
