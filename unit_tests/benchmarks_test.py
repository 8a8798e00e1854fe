"""Tests of the benchmark scripts' measuring logic, and one tiny end-to-end learning benchmark (~20 s)."""

import csv
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch import nn

from benchmarks import atari_throughput, cartpole_time_to_solve, learning, optimizer_state, training_success
from deep_rl_zoo import checkpoint

REPO_ROOT = learning.REPO_ROOT


def test_solve_tracker_needs_a_full_window_and_reports_the_first_crossing():
    tracker = cartpole_time_to_solve.SolveTracker(window=3, target=10.0)
    assert not tracker.add(1.0, 100, 30.0)  # mean 30 but only 1 episode of 3
    assert not tracker.add(2.0, 200, 0.0)
    assert tracker.add(3.0, 300, 0.0)  # (30 + 0 + 0) / 3 = 10 >= 10
    assert tracker.solved_at == (3.0, 300)
    assert not tracker.add(4.0, 400, 100.0)  # later crossings do not move the solve
    assert tracker.solved_at == (3.0, 300)
    assert tracker.episodes == 4
    assert tracker.best_mean == 100.0 / 3


def test_time_to_solve_times_the_value_family_against_sb3_dqn():
    args = cartpole_time_to_solve.parse_args(['--agents=c51_dqn,rainbow', '--skip_peers'])
    assert args.agents == ['c51_dqn', 'rainbow']
    solved = cartpole_time_to_solve.SolveResult('ours', 1, True, 60.0, 20_000, 480.0, 90, 61.0, 'solved')
    peer = cartpole_time_to_solve.SolveResult('SB3', 1, True, 120.0, 40_000, 480.0, 300, 121.0, 'solved')
    text = cartpole_time_to_solve.table('c51_dqn', [solved], [peer], args)
    assert '| seed | ours C51_DQN (s) | ours env steps | SB3 DQN (s) | SB3 env steps |' in text
    assert 'Ratio ours / SB3 (medians): 0.50x the seconds, 0.50x the env steps' in text
    with pytest.raises(SystemExit):
        cartpole_time_to_solve.parse_args(['--agents=iqn'])  # no preset: not timed


def test_steady_rate_spans_rollout_lines_and_skips_the_forced_last_line():
    lines = [
        (0.5, 'Resuming ...\n'),
        (8.0, 'env steps 1,024/3,072 (33.3%) | n/a frames/s | return n/a | ETA n/a\n'),
        (28.0, 'env steps 2,048/3,072 (66.7%) | 200 frames/s | return 0.7 | ETA 0:00:19\n'),
        (48.0, 'env steps 3,072/3,072 (100.0%) | 200 frames/s | return 0.8 | ETA 0:00:00\n'),
        (66.0, 'env steps 3,072/3,072 (100.0%) | 140 frames/s | return 0.8 | ETA 0:00:00\n'),
        (66.0, 'iteration 0: env steps 3072, train return 0.86, eval return nan, checkpoint x\n'),
    ]
    rate, marks = atari_throughput.steady_rate(lines)
    assert marks == [(8.0, 1024), (28.0, 2048), (48.0, 3072), (66.0, 3072)]
    assert rate == 2048 / 40.0
    # Only the first and the forced line: the forced one is used (one extra update in the span).
    rate, _ = atari_throughput.steady_rate([lines[1], lines[4], lines[5]])
    assert rate == 2048 / 58.0
    assert math.isnan(atari_throughput.steady_rate(lines[:2])[0])


def test_sample_factory_rate_counts_frames_between_reports_by_its_own_timestamps():
    def report(clock, frames, arrival):
        return (arrival, f'[36m[2026-12-01 18:00:{clock}][05267] Fps is (10 sec: 819.2, 60 sec: 682.7, 300 sec: 667.5). Total num frames: {frames}. Throughput: 0: 169.0.')

    lines = [
        report('00,000', 0, 5.0),
        (5.1, '[2026-12-01 18:00:01,000][05267] Avg episode reward: [(0, 0.3)]'),
        report('05,000', 4096, 30.0),  # arrival times are bursty (buffered output): the log's own clock counts
        report('10,000', 8192, 30.1),
        report('30,500', 20480, 30.2),
        report('40,500', 28672, 30.3),
    ]
    rate, reports = atari_throughput.sample_factory_steady_rate(lines, 10.0)
    # From the first report 10 s or more after the first one (8,192 frames at :10) to the last (28,672 at :40.5).
    assert reports == 3 and rate == pytest.approx((28672 - 8192) / 30.5 / 4)
    assert math.isnan(atari_throughput.sample_factory_steady_rate(lines, 35.0)[0])  # one report is no span
    assert atari_throughput.sample_factory_steady_rate(lines[1:2], 0.0) == (pytest.approx(math.nan, nan_ok=True), 0)


def test_extra_flags_apply_to_all_or_to_the_named_agent():
    extra = ['--learning_rate=5e-4', 'ppo:--num_epochs=10 --clip_epsilon=0.1']
    assert learning.agent_flags(extra, 'dqn') == ['--learning_rate=5e-4']
    assert learning.agent_flags(extra, 'ppo') == ['--learning_rate=5e-4', '--num_epochs=10', '--clip_epsilon=0.1']


def test_run_modules_of_agents_and_of_the_a2c_gradient_variant():
    assert learning.run_module('ppo', 'CartPole-v1') == 'deep_rl_zoo.ppo.run_classic'
    assert learning.run_module('ppo', 'Pendulum-v1') == 'deep_rl_zoo.ppo.run_continuous'
    assert learning.run_module('a2c_grad', 'LunarLander-v3') == 'deep_rl_zoo.a2c.run_classic_grad'


def test_pong_runs_evaluate_up_to_ten_whole_games_within_the_longest_game():
    args = learning.parse_args(['--agents', 'dqn', '--environments', 'Pong', '--max_steps', '200000', '--eval_every', '100000'])
    pong = learning.command_line(learning.Run('dqn', 'Pong', 1, Path('/tmp/run')), args)
    assert '--num_eval_steps=27000' in pong and '--max_eval_episodes=10' in pong
    cartpole = learning.command_line(learning.Run('dqn', 'CartPole-v1', 1, Path('/tmp/run')), args)
    assert '--num_eval_steps=2500' in cartpole and not any(part.startswith('--max_eval_episodes') for part in cartpole)


def _write_run(directory: Path, evals: list[float], seconds: list[float]) -> learning.Run:
    run = learning.Run('ppo', 'CartPole-v1', len(evals), directory)
    directory.mkdir(parents=True)
    with open(run.results_csv, 'w', newline='') as file:
        writer = csv.writer(file)
        writer.writerow(['iteration', 'env_steps', 'wall_time', 'eval_episode_return', 'checkpoint'])
        for index, value in enumerate(evals):
            writer.writerow([index, 1000 * (index + 1), 0.5 * (index + 1), value, f'ck{index}'])
    with open(run.timing_csv, 'w', newline='') as file:
        writer = csv.writer(file)
        writer.writerow(['row', 'seconds_since_launch'])
        writer.writerows(enumerate(seconds))
    return run


def test_rows_that_appear_within_one_poll_are_stamped_apart_by_the_runs_own_wall_time(tmp_path, monkeypatch):
    """On a machine where an iteration takes less than a poll, two rows appear between polls: they were stamped with
    one time, and a plot against time drew them as one instant (the CI's failure on a faster machine)."""
    run = learning.Run('ppo', 'CartPole-v1', 1, tmp_path / 'run')
    job = learning.RunningJob(run, [sys.executable, '-c', 'pass'])
    job.process.wait()
    clock = iter([100.0 + job.start, 101.0 + job.start, 102.0 + job.start])
    monkeypatch.setattr(learning.time, 'monotonic', lambda: next(clock))

    def append(*rows):
        exists = run.results_csv.exists()
        with open(run.results_csv, 'a', newline='') as file:
            writer = csv.writer(file)
            if not exists:
                writer.writerow(['iteration', 'env_steps', 'wall_time', 'eval_episode_return', 'checkpoint'])
            writer.writerows(rows)

    append([0, 1024, 0.25, 20.0, 'a'], [1, 2048, 0.45, 21.0, 'b'])  # two iterations within one poll
    job.poll_rows()
    append([2, 3072, 0.7, 22.0, 'c'])
    job.poll_rows()
    append([3, 4096, '', 23.0, 'd'])  # a row without its wall time is stamped when seen, after the one before
    job.poll_rows()
    timing = [float(row['seconds_since_launch']) for row in csv.DictReader(open(run.timing_csv))]
    assert timing == [99.8, 100.0, 101.0, 102.0]
    assert learning.parse_run(run, 1e9).seconds == timing


def test_threshold_medians_count_unsolved_seeds_as_never(tmp_path):
    solved_early = learning.parse_run(_write_run(tmp_path / 'a', [100, 480, 400], [6.0, 9.0, 12.0]), 475)
    solved_late = learning.parse_run(_write_run(tmp_path / 'b', [100, 200, 500], [6.0, 9.0, 12.0]), 475)
    never = learning.parse_run(_write_run(tmp_path / 'c', [100, float('nan')], [6.0, 9.0]), 475)
    assert (solved_early.steps_to_threshold, solved_early.seconds_to_threshold) == (2000, 9.0)
    assert (solved_early.final_eval_return, solved_early.best_eval_return) == (400, 480)
    assert never.steps_to_threshold == math.inf and not never.solved and never.best_eval_return == 100
    [summary] = learning.summarise([solved_early, solved_late, never])
    assert (summary.median_steps, summary.median_seconds, summary.solved, summary.seeds) == (3000, 12.0, 2, 3)
    [summary] = learning.summarise([solved_early, never])
    assert summary.median_steps == math.inf  # half the seeds failed: not reached


def test_tables_keep_three_decimals_of_fractional_returns(tmp_path):
    args = learning.parse_args(['--max_steps', '3000', '--eval_every', '1000'])
    minigrid = learning.parse_run(_write_run(tmp_path / 'a', [0.0, 0.6312, 0.9497], [6.0, 9.0, 12.0]), 0.5)
    cartpole = learning.parse_run(_write_run(tmp_path / 'b', [100, 480.25, 400.04], [6.0, 9.0, 12.0]), 475)
    table = learning.markdown([minigrid, cartpole], learning.summarise([minigrid]), args)
    assert '| 0.950 | 0.950 | yes |' in table and '| 400.0 | 480.2 | yes |' in table
    assert table.rstrip().endswith('| 0.5 | 2,000 | 9.0 | 0.950 | 1/1 |')


def test_a_run_short_of_its_budget_stays_in_the_tables_marked_partial(tmp_path):
    args = learning.parse_args(['--max_steps', '4000', '--eval_every', '1000', '--threshold', '475'])
    stopped = learning.parse_run(_write_run(tmp_path / 'a', [100, 200], [6.0, 9.0]), 475)  # 2 of 4 evaluations
    whole = learning.parse_run(_write_run(tmp_path / 'b', [100, 200, 300, 480], [6.0, 9.0, 12.0, 15.0]), 475)
    solved_early = learning.parse_run(_write_run(tmp_path / 'c', [100, 490, 500], [6.0, 9.0, 12.0]), 475)
    learning.mark_partial([stopped, whole, solved_early], args)
    assert (stopped.partial, whole.partial, solved_early.partial) == (True, False, True)  # c: solved, but not stopped for it
    learning.mark_partial([solved_early], learning.parse_args([*args.argv, '--stop_when_solved']))
    assert not solved_early.partial  # --stop_when_solved ended it at 475
    solved_early.partial = True
    results = [stopped, whole, solved_early]
    [summary] = learning.summarise(results)
    assert (summary.solved, summary.seeds, summary.partial) == (2, 3, 2)
    table = learning.markdown(results, [summary], args)
    assert '| 200.0 | 200.0 | no (partial: 2,000 of 4,000 env steps) |' in table and '| 480.0 | 480.0 | yes |' in table
    assert '| 500.0 | 500.0 | yes (partial: 3,000 of 4,000 env steps) |' in table and table.rstrip().endswith('| 2/3 (2 partial) |')
    learning.write_csv(tmp_path / 'table.csv', results, [summary])
    rows = list(csv.DictReader(open(tmp_path / 'table.csv')))
    assert [row['partial'] for row in rows] == ['1', '0', '1', '2'] and rows[0]['total_env_steps'] == '2000'


def test_stop_after_steps_makes_a_run_read_to_that_point_complete(tmp_path):
    args = learning.parse_args(['--max_steps', '4000', '--eval_every', '1000', '--stop_after_steps', '2000'])
    read_far_enough = learning.parse_run(_write_run(tmp_path / 'a', [100, 200], [6.0, 9.0]), 475)  # rows at 1,000 and 2,000
    cut_short = learning.parse_run(_write_run(tmp_path / 'b', [100], [6.0]), 475)
    learning.mark_partial([read_far_enough, cut_short], args)
    assert (read_far_enough.partial, cut_short.partial) == (False, True)
    table = learning.markdown([read_far_enough, cut_short], learning.summarise([read_far_enough, cut_short]), args)
    assert 'stopped at its first evaluation from 2,000 env steps on' in table and '| no (partial: 1,000 of 2,000 env steps) |' in table
    run, command = learning.Run('ppo', 'CartPole-v1', 1, tmp_path / 'a'), ['python', '-m', 'x']
    run.log.write_text(learning._quoted(command) + '\n')
    assert learning.earlier_state(run, command, 4, None) == 'interrupted'
    assert learning.earlier_state(run, command, 4, None, stop_after_steps=2000) == 'finished'
    assert learning.earlier_state(run, command, 4, None, stop_after_steps=3000) == 'interrupted'
    for bad in ('500', '5000'):
        with pytest.raises(SystemExit):
            learning.parse_args(['--max_steps', '4000', '--eval_every', '1000', '--stop_after_steps', bad])


def _result(agent, seed, steps, returns):
    run = learning.Run(agent, 'CartPole-v1', seed, Path('unused'))
    return learning.RunResult(run, 475.0, list(steps), list(returns), [math.nan] * len(steps), [])


def test_seed_band_is_the_median_and_range_over_seeds_keeping_solved_seeds():
    nan = math.nan
    runs = [
        _result('dqn', 1, [1000, 2000, 3000], [10.0, 100.0, 480.0]),
        _result('dqn', 2, [1000, 2000], [30.0, 200.0]),  # cut short after two evaluations
        _result('dqn', 3, [1008, 2016, 3024], [20.0, nan, 300.0]),  # no finished episode at its second evaluation
    ]
    xs, medians, lows, highs = learning.seed_band(runs)
    assert xs == [1000, 2000, 3012]  # median steps of the seeds that evaluated there (of two seeds: their mean)
    assert medians == [20.0, 150.0, 390.0]  # seed 2 ended below the threshold: it drops out at the third evaluation
    assert lows == [10.0, 100.0, 300.0] and highs == [30.0, 200.0, 480.0]
    runs[1] = _result('dqn', 2, [1000, 2000], [30.0, 490.0])  # stopped when solved: keeps 490 from then on
    xs, medians, lows, highs = learning.seed_band(runs)
    assert xs == [1000, 2000, 3012] and medians == [20.0, 295.0, 480.0] and highs == [30.0, 490.0, 490.0]
    assert learning.seed_band([]) == ([], [], [], [])


@pytest.mark.slow
def test_plots_draw_one_band_per_agent_and_small_multiples_for_many_agents(tmp_path):
    import matplotlib.image

    few = [_result(agent, seed, [1000, 2000], [seed * 10.0, 400.0 + seed]) for agent in ('dqn', 'ppo') for seed in (1, 2, 3)]
    (path,) = learning.plot(few, tmp_path / 'few')
    few_height, few_width = matplotlib.image.imread(path).shape[:2]
    many = [_result(agent, seed, [1000, 2000], [seed * 10.0, 400.0]) for agent in ('a', 'b', 'c', 'd', 'e') for seed in (1, 2)]
    (path,) = learning.plot(many, tmp_path / 'many')
    height, width = matplotlib.image.imread(path).shape[:2]
    assert (few_width, few_height) == (800, 500)
    assert (width, height) == (1260, 640)  # 5 agents: a 3 x 2 grid of panels


@pytest.mark.slow
def test_tiny_learning_benchmark_writes_tables_plots_and_checkpoint(tmp_path):
    out = tmp_path / 'results' / 'learning'
    completed = subprocess.run(
        [
            sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '2048', '--eval_every', '1024',
            '--seeds', '1', '--threshold', '-1', '--num_eval_steps', '200', '--out', str(out),
            '--screenshots_dir', str(tmp_path / 'shots'), '--keep_best_checkpoint', str(tmp_path / 'keep'), '--training_success',
        ],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,  # a hang guard: about 55 s on a busy 2-core machine
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = list(csv.DictReader(open(out.with_suffix('.csv'))))
    assert [row['kind'] for row in rows] == ['run', 'summary']
    assert rows[0]['env_steps_to_threshold'] == '1024'  # any return beats -1 at the first evaluation
    assert rows[0]['total_env_steps'] == '2048' and rows[1]['solved'] == '1/1'
    timing = list(csv.DictReader(open(tmp_path / 'results' / 'raw' / 'learning' / 'ppo_CartPole-v1_seed1' / 'timing.csv')))
    assert len(timing) == 2 and 0 < float(timing[0]['seconds_since_launch']) < float(timing[1]['seconds_since_launch'])
    assert '| ppo | CartPole-v1 | 1 | -1 | 1,024 |' in out.with_suffix('.md').read_text()
    evaluations = list(csv.DictReader(open(tmp_path / 'results' / 'learning_evaluations.csv')))  # every evaluation, for --replot
    assert [(row['agent'], row['seed'], row['env_steps']) for row in evaluations] == [('ppo', '1', '1024'), ('ppo', '1', '2048')]
    assert [float(row['wall_time_s']) for row in evaluations] == pytest.approx([float(row['seconds_since_launch']) for row in timing], rel=1e-9)
    assert (tmp_path / 'shots' / 'learning_CartPole-v1.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert (tmp_path / 'keep' / 'PPO_CartPole-v1.ckpt').stat().st_size > 0
    # --training_success: every CartPole episode pays more than 0, so each window's share is 1.
    success_rows = list(csv.DictReader(open(tmp_path / 'results' / 'learning_training_success.csv')))
    assert [row['window_end_env_steps'] for row in success_rows] == ['1024', '2048']
    assert all(int(row['episodes']) == int(row['reached_goal']) > 0 for row in success_rows)
    assert '| ppo | CartPole-v1 | 1/1 | 1.000 |' in out.with_suffix('.md').read_text()
    assert (tmp_path / 'shots' / 'learning_success_CartPole-v1.png').exists()
    # --reuse re-reads the CSVs without training.
    completed = subprocess.run(
        [sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '2048', '--eval_every', '1024',
         '--seeds', '1', '--threshold', '1e9', '--out', str(out), '--screenshots_dir', str(tmp_path / 'shots'), '--reuse'],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert '[start]' not in completed.stdout and '| ppo | CartPole-v1 | 1e+09 | not reached |' in completed.stdout
    # The table's head names the command that trained the run (kept in its directory), then the --reuse one.
    header = out.with_suffix('.md').read_text().splitlines()[2]
    assert header.startswith('Trained by `python -m benchmarks.learning --agents ppo --max_steps 2048 --eval_every 1024 --seeds 1 --threshold -1 ')
    assert header.endswith(' --threshold 1e9 --out ' + str(out) + ' --screenshots_dir ' + str(tmp_path / 'shots') + ' --reuse`')
    assert '--training_success`. This table: `python -m benchmarks.learning --agents ppo' in header


@pytest.mark.slow
def test_stop_when_solved_ends_a_run_at_its_first_evaluation_over_the_threshold(tmp_path):
    out = tmp_path / 'results' / 'learning'
    completed = subprocess.run(
        [
            sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '1024000', '--eval_every', '1024',
            '--seeds', '1', '--threshold', '-1', '--num_eval_steps', '200', '--out', str(out),
            '--screenshots_dir', str(tmp_path / 'shots'), '--stop_when_solved',
        ],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,  # a hang guard: about 55 s on a busy 2-core machine
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert 'reached the threshold' in completed.stdout
    [run, summary] = list(csv.DictReader(open(out.with_suffix('.csv'))))
    assert run['env_steps_to_threshold'] == '1024' and summary['solved'] == '1/1'
    assert int(run['total_env_steps']) < 1024 * 20  # stopped within a few iterations of 1,000 planned


@pytest.mark.slow
def test_stop_after_steps_stops_each_run_at_that_evaluation_and_keeps_it_complete(tmp_path):
    out = tmp_path / 'results' / 'learning'
    command = [
        sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '1024000', '--eval_every', '1024',
        '--stop_after_steps', '2048', '--seeds', '1', '--threshold', '1e9', '--num_eval_steps', '200', '--out', str(out),
        '--screenshots_dir', str(tmp_path / 'shots'),
    ]  # fmt: skip
    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)  # a hang guard
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert 'evaluated at --stop_after_steps=2,048' in completed.stdout
    [run, summary] = list(csv.DictReader(open(out.with_suffix('.csv'))))
    assert 2048 <= int(run['total_env_steps']) < 1024 * 20 and run['partial'] == '0' and summary['partial'] == '0'
    results = tmp_path / 'results' / 'raw' / 'learning' / 'ppo_CartPole-v1_seed1' / 'results.csv'
    assert '--num_iterations=1000' in (results.parent / 'log.txt').read_text().splitlines()[0]  # the schedule spans 1,024,000
    again = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0 and '[kept]  ppo CartPole-v1 seed 1' in again.stdout, again.stdout + again.stderr


def test_replot_redraws_the_plots_from_the_evaluations_csv_alone(tmp_path, capsys):
    results = [_result('dqn', 1, [1000, 2000], [10.0, 480.0]), _result('dqn', 2, [1000, 2000], [30.0, math.nan]), _result('ppo', 1, [1000], [5.0])]
    results[0].seconds[:] = [1.5, 3.25]
    path = tmp_path / 'learning_evaluations.csv'
    learning.write_evaluations_csv(path, results)
    assert path.read_text().splitlines() == [
        'agent,environment,seed,threshold,env_steps,eval_return,wall_time_s',
        'dqn,CartPole-v1,1,475,1000,10,1.5', 'dqn,CartPole-v1,1,475,2000,480,3.25',
        'dqn,CartPole-v1,2,475,1000,30,', 'dqn,CartPole-v1,2,475,2000,,',  # no finished episode; wall time unknown
        'ppo,CartPole-v1,1,475,1000,5,',
    ]  # fmt: skip
    again = learning.read_evaluations_csv(path)
    assert [(r.run.agent, r.run.seed, r.threshold, r.env_steps) for r in again] == [('dqn', 1, 475.0, [1000, 2000]), ('dqn', 2, 475.0, [1000, 2000]), ('ppo', 1, 475.0, [1000])]
    assert learning.seed_band(again[:2]) == ([1000, 2000], [20.0, 480.0], [10.0, 480.0], [30.0, 480.0])
    assert again[0].seconds == [1.5, 3.25] and math.isnan(again[1].eval_returns[1])
    assert learning.main(['--replot', str(path), '--screenshots_dir', str(tmp_path / 'shots')]) == 0
    assert capsys.readouterr().out == f'wrote {tmp_path / "shots" / "learning_CartPole-v1.png"}\n'
    assert (tmp_path / 'shots' / 'learning_CartPole-v1.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    summary = tmp_path / 'learning.csv'
    summary.write_text('kind,agent,environment,seed,threshold\nrun,dqn,CartPole-v1,1,475\n')  # the per-run CSV: no evaluations
    with pytest.raises(SystemExit, match='lacks the columns env_steps, eval_return, wall_time_s'):
        learning.read_evaluations_csv(summary)



def test_training_success_counts_episodes_that_reached_the_goal_per_window(tmp_path):
    episodes = [(100, 0.0), (1000, 0.0), (1001, 0.82), (1500, 0.0), (2000, 0.5), (2600, 0.0), (3100, 0.9)]  # 3100: overshoot
    curve = training_success.success_curve('ngu', 'MiniGrid-MultiRoom-N4-S5-v0', 2, episodes, window=1000, max_steps=3000)
    assert (curve.window_ends, curve.episodes, curve.successes) == ([1000, 2000, 3000], [2, 3, 2], [0, 2, 1])
    assert curve.first_success_step == 1001 and curve.share == 3 / 7 and curve.window_shares == [0.0, 2 / 3, 0.5]
    never = training_success.success_curve('ngu_plain', 'MiniGrid-MultiRoom-N4-S5-v0', 2, [(500, 0.0)], 1000, 2500)
    assert never.window_ends == [1000, 2000, 2500] and never.first_success_step is None
    assert math.isnan(never.window_shares[1]) and never.share == 0.0
    table = training_success.markdown([curve, never])
    assert '| ngu | MiniGrid-MultiRoom-N4-S5-v0 | 2 | 7 | 3 | 0.429 | 1,001 | 0.000 / 0.667 / 0.500 |' in table
    assert '| ngu_plain | MiniGrid-MultiRoom-N4-S5-v0 | 2 | 1 | 0 | 0.000 | never | 0.000 / n/a / n/a |' in table
    assert table.rstrip().endswith('| ngu_plain | MiniGrid-MultiRoom-N4-S5-v0 | 0/1 | 0.000 | never |')
    path = tmp_path / 'episodes.csv'
    path.write_text('time,env_steps,return,steps\n1.5,1760,0.0,120\n2.5,1840,0.757,33\n')
    assert training_success.read_episodes(path) == [(1760, 0.0), (1840, 0.757)]
    training_success.write_csv(tmp_path / 'success.csv', [curve])
    assert (tmp_path / 'success.csv').read_text().splitlines()[1:] == [
        'ngu,MiniGrid-MultiRoom-N4-S5-v0,2,1000,2,0', 'ngu,MiniGrid-MultiRoom-N4-S5-v0,2,2000,3,2', 'ngu,MiniGrid-MultiRoom-N4-S5-v0,2,3000,2,1',
    ]  # fmt: skip
    (png,) = training_success.plot([curve, never], tmp_path / 'shots')
    assert png.name == 'learning_success_MiniGrid-MultiRoom-N4-S5-v0.png' and png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    with pytest.raises(ValueError, match='window'):
        training_success.success_curve('ngu', 'x', 1, [], window=0, max_steps=10)


@pytest.mark.slow
def test_sigterm_to_the_benchmark_stops_its_training_processes(tmp_path):
    out = tmp_path / 'results' / 'learning'
    benchmark = subprocess.Popen(
        [sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '10240000', '--eval_every', '1024', '--seeds', '1',
         '--out', str(out), '--screenshots_dir', str(tmp_path / 'shots')],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    results = tmp_path / 'results' / 'raw' / 'learning' / 'ppo_CartPole-v1_seed1' / 'results.csv'
    deadline = time.monotonic() + 600  # a hang guard: about 25 s on a busy 2-core machine
    while not results.exists() and time.monotonic() < deadline:  # training is under way: its first iteration ended
        time.sleep(0.5)
    assert results.exists(), 'the training run wrote no results row in 600 s'
    benchmark.terminate()
    _, stderr = benchmark.communicate(timeout=60)
    assert benchmark.returncode == 1 and 'stopped by signal 15' in stderr, stderr[-2000:]
    rows = len(list(csv.DictReader(open(results))))  # the rows so far are tabulated, the run marked partial
    assert f'| no (partial: {1024 * rows:,} of 10,240,000 env steps) |' in out.with_suffix('.md').read_text()
    survivors = subprocess.run(['pgrep', '-f', str(out.parent)], capture_output=True, text=True, check=False).stdout.split()
    assert survivors == [], f'training processes outlived the benchmark: {survivors}'


@pytest.mark.slow
def test_an_interrupted_run_resumes_from_its_checkpoint_and_a_finished_one_is_kept(tmp_path):
    out = tmp_path / 'results' / 'learning'
    command = [
        sys.executable, '-m', 'benchmarks.learning', '--agents', 'ppo', '--max_steps', '16384', '--eval_every', '1024',
        '--seeds', '1', '--threshold', '1e9', '--num_eval_steps', '200', '--out', str(out), '--screenshots_dir', str(tmp_path / 'shots'),
    ]  # fmt: skip
    run_dir = tmp_path / 'results' / 'raw' / 'learning' / 'ppo_CartPole-v1_seed1'
    benchmark = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600  # a hang guard
    while not (run_dir / 'timing.csv').exists() and time.monotonic() < deadline:  # the first row is in and timed
        time.sleep(0.1)
    benchmark.terminate()
    benchmark.communicate(timeout=60)
    first_rows = list(csv.DictReader(open(run_dir / 'results.csv')))
    assert 1 <= len(first_rows) < 16, 'the run must be interrupted part-way for this test'
    first_seconds = [row['seconds_since_launch'] for row in csv.DictReader(open(run_dir / 'timing.csv'))]

    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert '[resume] ppo CartPole-v1 seed 1' in completed.stdout and '[start]' not in completed.stdout
    rows = list(csv.DictReader(open(run_dir / 'results.csv')))
    assert [row['env_steps'] for row in rows] == [str(1024 * n) for n in range(1, 17)]  # continued, not restarted
    assert rows[: len(first_rows)] == first_rows
    log = (run_dir / 'log.txt').read_text()
    assert log.splitlines()[0] == learning._quoted(learning.command_line(learning.Run('ppo', 'CartPole-v1', 1, run_dir), learning.parse_args(command[3:])))
    assert '# resumed ' in log and 'Resuming from ' in log  # the relaunch appended to the log; the run script resumed
    timing = [row['seconds_since_launch'] for row in csv.DictReader(open(run_dir / 'timing.csv'))]
    assert timing[: len(first_seconds)] == first_seconds and all(t == 'nan' for t in timing[len(first_seconds):])
    evaluations = list(csv.DictReader(open(tmp_path / 'results' / 'learning_evaluations.csv')))
    seconds = [float(row['wall_time_s']) for row in evaluations]
    assert seconds[: len(first_seconds)] == [float(s) for s in first_seconds]
    assert all(later > earlier for earlier, later in zip(seconds, seconds[1:]))  # the resumed rows count on from there

    completed = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert '[kept]  ppo CartPole-v1 seed 1' in completed.stdout and '[start]' not in completed.stdout
    assert list(csv.DictReader(open(run_dir / 'results.csv'))) == rows


def test_atari_throughput_repeats_report_each_measurements_median_and_every_steady_rate():
    runs = [{'steady': 500.0, 'csv_rate': 400.0}, {'steady': 450.0, 'csv_rate': 420.0}, {'steady': 520.0, 'csv_rate': 380.0}]
    assert atari_throughput.median_run(runs) == {'steady': 500.0, 'csv_rate': 400.0, 'steady_runs': [500.0, 450.0, 520.0]}


def test_earlier_state_resumes_the_same_command_and_keeps_finished_or_solved_runs(tmp_path):
    run = learning.Run('ppo', 'CartPole-v1', 1, tmp_path / 'run')
    command = ['python', '-m', 'deep_rl_zoo.ppo.run_classic', '--num_iterations=3', f'--train_dir={tmp_path / "run dir"}']
    assert learning.earlier_state(run, command, 3, None) == 'none'  # nothing there
    run.directory.mkdir()
    run.log.write_text(learning._quoted(command) + '\nprogress...\n')
    assert learning.earlier_state(run, command, 3, None) == 'interrupted'  # no row yet: a periodic checkpoint may resume
    run.results_csv.write_text('iteration,env_steps,eval_episode_return\n0,100,10\n1,200,30\n')
    assert learning.earlier_state(run, command, 3, None) == 'interrupted'
    assert learning.earlier_state(run, command, 3, 25.0) == 'finished'  # --stop_when_solved: the threshold was reached
    assert learning.earlier_state(run, command, 2, None) == 'finished'
    assert learning.earlier_state(run, [*command[:-1], '--seed=2'], 3, None) == 'none'  # another command: start clean


def test_optimizer_state_reads_each_weights_gradient_rms_and_the_step_with_epsilon_outside_and_inside_the_root(tmp_path, capsys):
    network = nn.Sequential(nn.Linear(2, 1), nn.BatchNorm1d(1))  # the batch norm's buffers are skipped
    optimizer = torch.optim.RMSprop(network.parameters(), lr=1e-3, alpha=0.99, eps=0.01)
    for parameter, gradient in zip(network.parameters(), ([[0.3, 0.0]], [0.4], [0.0], [0.0])):
        parameter.grad = torch.tensor(gradient)
    optimizer.step()  # square_avg = 0.01 g^2: RMS 0.1 |g|
    path = checkpoint.save_checkpoint(
        str(tmp_path / 'run.ckpt'), agent_name='IMPALA', environment_name='Pong', iteration=0,
        state={'network': network.state_dict(), 'optimizer': optimizer.state_dict()}, counters={}, flags={'optimizer_eps': 0.01},
    )  # fmt: skip
    optimizer_state.main([path])
    lines = capsys.readouterr().out.splitlines()
    # weight RMS (0.03, 0): median 0 (the lower middle), 90th percentile 0.03; steps 1 / 0.01 and 1 / sqrt(0.01); one of
    # two below eps; RMS / (RMS + eps) 0 and 0.75, the lower middle 0
    assert '| 0.weight | 2 | 0.00e+00 | 3.00e-02 | 100.0 | 10.0 | 10.00 | 50% | 0.00 |' in lines
    # bias RMS 0.04: 1 / 0.05 = 20 outside, 1 / sqrt(0.0016 + 0.01) = 9.28 inside; above eps, 0.04 / 0.05 = 0.8 kept
    assert '| 0.bias | 1 | 4.00e-02 | 4.00e-02 | 20.0 | 9.3 | 2.15 | 0% | 0.80 |' in lines
    assert [line.split(' | ')[0] for line in lines if line.startswith('| ') and line[2].isdigit()] == ['| 0.weight', '| 0.bias', '| 1.weight', '| 1.bias']


def test_optimizer_state_takes_adams_eps_from_the_value_agents_flag(tmp_path, capsys):
    network = nn.Linear(1, 2)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-4, eps=1e-3)
    network.weight.grad, network.bias.grad = torch.tensor([[2.0], [1e-5]]), torch.tensor([0.0, 0.0])
    optimizer.step()  # exp_avg_sq = 0.001 g^2: RMS 0.0632 and 3.16e-7
    path = checkpoint.save_checkpoint(
        str(tmp_path / 'run.ckpt'), agent_name='C51', environment_name='Pong', iteration=0,
        state={'network': network.state_dict(), 'optimizer': optimizer.state_dict()}, counters={}, flags={'adam_eps': 1e-3},
    )  # fmt: skip
    optimizer_state.main([path])
    text = capsys.readouterr().out
    assert 'Epsilon 0.001.' in text
    # RMS / (RMS + eps): 0.0632 / 0.0642 = 0.98 and 3.2e-4, the lower middle 3.2e-4; one of two below eps
    assert '| weight | 2 | 3.16e-07 | 6.32e-02 | 999.7 | 31.6 | 31.61 | 50% | 0.00 |' in text.splitlines()
