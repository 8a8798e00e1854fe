"""experiment.Experiment in process: keep-N and milestones, the best checkpoint, a failed checkpoint write, the
checkpoint at a stop, evaluation that notices the stop, budgets, resuming from an older checkpoint (results rows,
wall time, newer checkpoints), restart behaviours, the saved config with explicit overrides, config.json and
log.txt, and the progress line. End-to-end runs (kill -9 and resume) are in experiment_resume_test.py."""

import csv
import errno
import io
import json
import math
import os
import sys
import threading
import time
import types

import gymnasium
import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.summary.writer import event_file_writer

from deep_rl_zoo import checkpoint, experiment, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.dqn.settings import DqnSettings
from deep_rl_zoo.experiment import Experiment, RunSettings
from unit_tests.helpers import snapshot

VECTOR_ENV = types.SimpleNamespace(frames_per_step=1, single_observation_space=gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32))
OBSERVATION = np.zeros((1, 4), np.float32)
NAME = 'DQN_CartPole-v1'


def settings(tmp_path, **overrides):
    values = dict(
        agent_name='DQN',
        environment_name='CartPole-v1',
        num_iterations=10,
        num_train_steps=10,
        num_eval_steps=5,
        checkpoint_dir=str(tmp_path / 'experiment'),
        results_csv_path=str(tmp_path / 'experiment' / 'results.csv'),
        episodes_csv_path='',
        load_checkpoint_file='',
        use_tensorboard=False,
        runs_dir=str(tmp_path / 'runs'),
        tag='',
        debug_screenshots_interval=0,
        progress=False,
        flags={'environment_name': 'CartPole-v1', 'environment_kind': 'classic', 'seed': 1},
        experiment_name='exp',
        experiment_dir=str(tmp_path / 'experiment'),
    )
    values.update(overrides)
    return RunSettings(**values)


def state(value=0.0):
    return {'network': {'weight': torch.full((2,), float(value))}}


def files(tmp_path):
    return sorted(name for name in os.listdir(tmp_path / 'experiment') if name.endswith('.ckpt'))


def rows(tmp_path):
    with open(tmp_path / 'experiment' / 'results.csv', newline='') as file:
        return list(csv.DictReader(file))


def run_iteration(run, evaluation=None, steps=10, periodic=0):
    """The next iteration, of `steps` env steps with `periodic` periodic checkpoints spread over it; returns the row."""
    if not hasattr(run, 'left'):
        run.left = run.iterations
    iteration = next(run.left)
    for index in range(steps):
        run.record_train_step(1, [], OBSERVATION)
        if periodic and (index + 1) % (steps // periodic) == 0 and run.steps_left() > 0:
            run.save_periodic(state(run.env_steps), run.env_steps)
    return run.end_iteration(iteration, state(run.env_steps), run.env_steps, {}, {}, lambda: evaluation or {})


# ------------------------------------------------------------------------------------------- keep-N, milestones


def test_keep_checkpoints_prunes_old_periodic_checkpoints_and_keeps_milestones(tmp_path):
    run = Experiment(settings(tmp_path, keep_checkpoints=2), VECTOR_ENV).begin()
    run_iteration(run, periodic=3)  # periodic at 3, 6, 9 env steps, then milestone 0
    run_iteration(run, periodic=3)
    run.close()
    assert files(tmp_path) == [f'{NAME}_0.ckpt', f'{NAME}_1.ckpt', f'{NAME}_1_at16.ckpt', f'{NAME}_1_at19.ckpt']
    periodic = checkpoint.load_checkpoint(str(tmp_path / 'experiment' / f'{NAME}_1_at16.ckpt'))
    assert periodic['iteration'] == 1 and periodic['counters'] == {'env_steps': 16, 'learner_steps': 16, 'iteration': 1}
    assert periodic['extra']['experiment']['periodic'] is True
    assert periodic['extra']['experiment']['iteration_start_env_steps'] == 10


def test_a_periodic_checkpoint_is_due_every_save_every_sec_of_the_clock_counted_from_the_last_save(tmp_path, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(experiment.time, 'monotonic', lambda: clock[0])
    run = Experiment(settings(tmp_path, save_every_sec=2.0), VECTOR_ENV).begin()
    next(run.iterations)
    due = []
    for now in (101.0, 101.99, 102.0, 103.0):
        clock[0] = now
        due.append(run.periodic_save_due())
    run.save_periodic(state(), 0)  # at 103.0: the next one is due at 105.0
    for now in (104.99, 105.0):
        clock[0] = now
        due.append(run.periodic_save_due())
    assert due == [False, False, True, True, False, True]
    assert not Experiment(settings(tmp_path / 'never', save_every_sec=0.0), VECTOR_ENV).begin().periodic_save_due()  # 0: never
    run.close()


def test_without_milestones_only_the_newest_checkpoints_are_kept(tmp_path):
    run = Experiment(settings(tmp_path, keep_checkpoints=2, keep_milestones=False), VECTOR_ENV).begin()
    for _ in range(3):
        run_iteration(run, periodic=2)
    run.close()
    assert files(tmp_path) == [f'{NAME}_2.ckpt', f'{NAME}_2_at25.ckpt']
    assert [file.path for file in checkpoint.list_checkpoints(str(tmp_path / 'experiment'), 'DQN', 'CartPole-v1')][-1].endswith('_2.ckpt')


# --------------------------------------------------------------------------------------------------------- best


def best_metric(tmp_path):
    loaded = checkpoint.load_checkpoint(str(tmp_path / 'experiment' / f'{NAME}_best.ckpt'))
    return loaded['iteration'], loaded['extra']['experiment']['best_metric']


def test_the_best_checkpoint_is_replaced_only_on_improvement_after_save_best_after(tmp_path, capsys):
    run = Experiment(settings(tmp_path, save_best_metric='eval_return', save_best_after=15), VECTOR_ENV).begin()
    run_iteration(run, {'episode_return': 9.0, 'num_episodes': 1})  # 10 env steps < save_best_after
    assert f'{NAME}_best.ckpt' not in files(tmp_path)
    run_iteration(run, {'episode_return': 5.0, 'num_episodes': 1})
    assert best_metric(tmp_path) == (1, 5.0)
    run_iteration(run, {'episode_return': 3.0, 'num_episodes': 1})
    run_iteration(run, {'episode_return': float('nan'), 'num_episodes': 0})  # no finished episode: no score
    assert best_metric(tmp_path) == (1, 5.0)
    run_iteration(run, {'episode_return': 7.0, 'num_episodes': 1})
    run.close()
    assert best_metric(tmp_path) == (4, 7.0)
    loaded = checkpoint.load_checkpoint(str(tmp_path / 'experiment' / f'{NAME}_best.ckpt'))
    assert loaded['counters']['env_steps'] == 50 and loaded['state']['network']['weight'][0].item() == 50.0
    assert 'new best eval_return 7.00 at iteration 4' in capsys.readouterr().out
    # A later session knows the best so far: 6 is no improvement.
    again = Experiment(settings(tmp_path, save_best_metric='eval_return'), VECTOR_ENV).begin()
    run_iteration(again, {'episode_return': 6.0, 'num_episodes': 1})
    again.close()
    assert best_metric(tmp_path) == (4, 7.0)


def test_the_best_checkpoint_goes_where_checkpoint_dir_says_and_resumes_from_there(tmp_path, capsys):
    elsewhere = tmp_path / 'elsewhere'
    options = dict(checkpoint_dir=str(elsewhere), results_csv_path=str(elsewhere / 'results.csv'), save_best_metric='eval_return')
    run = Experiment(settings(tmp_path, **options), VECTOR_ENV).begin()
    for value in (1.0, 8.0, 2.0):
        run_iteration(run, {'episode_return': value, 'num_episodes': 1})
    run.close()
    assert f'{NAME}_best.ckpt' in os.listdir(elsewhere) and f'{NAME}_best.ckpt' not in os.listdir(tmp_path / 'experiment')
    resumed = Experiment(settings(tmp_path, load_checkpoint_kind='best', **options), VECTOR_ENV).begin()
    resumed.close()
    assert f'Resuming from {elsewhere}/{NAME}_best.ckpt: iteration 2, 20 env steps' in capsys.readouterr().out


def test_a_restart_with_checkpoint_dir_elsewhere_moves_the_old_best_aside_too(tmp_path):
    """Otherwise the restarted run would keep the old run's best checkpoint and compare its own against that metric."""
    elsewhere = tmp_path / 'elsewhere'
    options = dict(checkpoint_dir=str(elsewhere), results_csv_path=str(elsewhere / 'results.csv'), save_best_metric='eval_return')
    run = Experiment(settings(tmp_path, **options), VECTOR_ENV).begin()
    run_iteration(run, {'episode_return': 8.0, 'num_episodes': 1})
    run.close()
    restarted = Experiment(settings(tmp_path, restart_behavior='restart', **options), VECTOR_ENV).begin()
    run_iteration(restarted, {'episode_return': 2.0, 'num_episodes': 1})
    restarted.close()
    (old,) = [name for name in os.listdir(elsewhere) if name.startswith('old_')]
    assert f'{NAME}_best.ckpt' in os.listdir(elsewhere / old)
    best = checkpoint.load_checkpoint(str(elsewhere / f'{NAME}_best.ckpt'))
    assert best['extra']['experiment']['best_metric'] == 2.0  # the restarted run's own best, not the old 8


def test_resuming_from_the_best_checkpoint_drops_later_rows_and_moves_later_checkpoints_aside(tmp_path, capsys):
    run = Experiment(settings(tmp_path, save_best_metric='eval_return'), VECTOR_ENV).begin()
    for value in (1.0, 8.0, 2.0, 3.0):
        row = run_iteration(run, {'episode_return': value, 'num_episodes': 1})
    run.close()
    wall_time = float(row['wall_time'])
    resumed = Experiment(settings(tmp_path, save_best_metric='eval_return', load_checkpoint_kind='best'), VECTOR_ENV).begin()
    out = capsys.readouterr().out
    assert f'Resuming from {tmp_path}/experiment/{NAME}_best.ckpt: iteration 2, 20 env steps' in out
    assert resumed.env_steps == 20 and resumed.first_iteration == 2
    assert [row['iteration'] for row in rows(tmp_path)] == ['0', '1']  # rows of iterations 2 and 3 are trained again
    assert files(tmp_path) == [f'{NAME}_0.ckpt', f'{NAME}_1.ckpt', f'{NAME}_best.ckpt']
    (superseded,) = [name for name in os.listdir(tmp_path / 'experiment') if name.startswith('superseded_')]
    assert sorted(os.listdir(tmp_path / 'experiment' / superseded)) == [f'{NAME}_2.ckpt', f'{NAME}_3.ckpt']
    row = run_iteration(resumed, {'episode_return': 1.0, 'num_episodes': 1})
    resumed.close()
    assert [(row['iteration'], row['env_steps']) for row in rows(tmp_path)] == [('0', '10'), ('1', '20'), ('2', '30')]
    assert float(row['wall_time']) >= float(rows(tmp_path)[1]['wall_time'])  # wall time continues
    assert float(rows(tmp_path)[1]['wall_time']) <= wall_time


def test_a_resumed_run_counts_its_wall_time_on_from_the_row_so_its_next_row_comes_later(tmp_path, monkeypatch):
    """The row and the checkpoints written with it carry one clock reading. With a reading taken before a slow
    checkpoint write, a run resumed from it started earlier than its row, and on a machine where an iteration trains
    faster than a checkpoint writes, its next row had a smaller wall time than the one before (the CI's failure)."""
    clock = [100.0]
    monkeypatch.setattr(experiment.time, 'monotonic', lambda: clock[0])
    save = checkpoint.save_checkpoint

    def slow_save(*args, **kwargs):
        clock[0] += 2.0  # a slow disk
        return save(*args, **kwargs)

    monkeypatch.setattr(checkpoint, 'save_checkpoint', slow_save)
    run = Experiment(settings(tmp_path, save_best_metric='eval_return'), VECTOR_ENV).begin()
    clock[0] += 1.0  # the first iteration trains for 1 s
    row = run_iteration(run, {'episode_return': 1.0, 'num_episodes': 1})
    run.close()
    assert row['wall_time'] == 1.0
    for name in (f'{NAME}_0.ckpt', f'{NAME}_best.ckpt'):
        assert checkpoint.load_checkpoint(str(tmp_path / 'experiment' / name))['extra']['experiment']['wall_time'] == 1.0
    resumed = Experiment(settings(tmp_path, save_best_metric='eval_return'), VECTOR_ENV).begin()
    clock[0] += 0.5  # training that takes less time than a checkpoint write
    next_row = run_iteration(resumed, {'episode_return': 0.0, 'num_episodes': 1})
    resumed.close()
    assert next_row['wall_time'] == 1.5


def test_a_run_killed_during_an_evaluation_resumes_before_it_and_evaluates_that_iteration(tmp_path):
    """The milestone checkpoint marks an iteration finished, so it is written after the evaluation: a run that dies
    within the evaluation of iteration 1 (here the evaluation raises: a killed process never returns from it)
    resumes from iteration 1's periodic checkpoint, not after iteration 1 with its evaluation lost."""
    run = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    run_iteration(run, {'episode_return': 1.0, 'num_episodes': 1})

    def killed() -> dict:
        raise KeyboardInterrupt

    iteration = next(run.left)
    for _ in range(10):
        run.record_train_step(1, [], OBSERVATION)
    run.save_periodic(state(run.env_steps), run.env_steps)
    with pytest.raises(KeyboardInterrupt):
        run.end_iteration(iteration, state(run.env_steps), run.env_steps, {}, {}, killed)
    run.close()
    assert files(tmp_path) == [f'{NAME}_0.ckpt', f'{NAME}_1_at20.ckpt']
    assert [row['iteration'] for row in rows(tmp_path)] == ['0']
    resumed = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    assert (resumed.first_iteration, resumed.env_steps) == (1, 20)
    assert next(resumed.iterations) == 1 and resumed.steps_left() == 0
    resumed.end_iteration(1, state(20), 20, {}, {}, lambda: {'episode_return': 2.0, 'num_episodes': 1})
    resumed.close()
    assert [(row['iteration'], row['eval_episode_return']) for row in rows(tmp_path)] == [('0', '1.0'), ('1', '2.0')]
    assert f'{NAME}_1.ckpt' in files(tmp_path)


def test_resuming_best_without_a_best_checkpoint_is_refused(tmp_path):
    run = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()
    with pytest.raises(checkpoint.CheckpointError, match='holds no best checkpoint yet.*--load_checkpoint_kind=latest'):
        Experiment(settings(tmp_path, load_checkpoint_kind='best'), VECTOR_ENV)


# ------------------------------------------------------------------------------------------------- failed write


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, 'No space left on device')


def _read_only(*args, **kwargs):
    raise PermissionError(errno.EACCES, 'Permission denied')


@pytest.mark.parametrize('failure, patched, reason', [
    (_disk_full, 'torch.save', 'No space left on device'),
    (_read_only, 'tempfile.mkstemp', 'Permission denied'),
])  # fmt: skip
def test_a_failed_checkpoint_write_keeps_the_previous_one_and_ends_with_one_line(tmp_path, monkeypatch, failure, patched, reason):
    run = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    run_iteration(run)
    monkeypatch.setattr(f'deep_rl_zoo.checkpoint.{patched}', failure)
    with pytest.raises(checkpoint.CheckpointError) as error:
        run_iteration(run)
    run.close()
    message = str(error.value)
    previous = tmp_path / 'experiment' / f'{NAME}_0.ckpt'
    assert message == (
        f'could not write checkpoint {tmp_path}/experiment/{NAME}_1.ckpt ({reason}); the previous checkpoint {previous} '
        'is intact: free disk space or fix the directory, then run the same command to resume'
    )
    assert files(tmp_path) == [f'{NAME}_0.ckpt']  # no partial file, no temporary file
    assert not [name for name in os.listdir(tmp_path / 'experiment') if '.tmp' in name]
    assert checkpoint.load_checkpoint(str(previous))['counters']['env_steps'] == 10
    assert [row['iteration'] for row in rows(tmp_path)] == ['0']  # no row for an iteration without its checkpoint


# ----------------------------------------------------------------------------------------------- stop, budgets


class StopRequest:
    signal_name = 'SIGTERM'

    def __bool__(self):
        return True


def test_a_stop_writes_a_checkpoint_of_the_state_at_the_stop_and_exits_130(tmp_path, capsys):
    run = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    next(iter(run.iterations))
    for _ in range(4):
        run.record_train_step(1, [], OBSERVATION)
    run.stop_request = StopRequest()
    assert run.should_stop()
    with pytest.raises(SystemExit) as exit_:
        run.stop(state(4), 3, stopping='stopping 2 actors; ')
    run.close()
    assert exit_.value.code == 130
    assert files(tmp_path) == [f'{NAME}_0_at4.ckpt']
    err = capsys.readouterr().err
    assert f'Checkpoint at the stop: {tmp_path}/experiment/{NAME}_0_at4.ckpt' in err
    assert f'Interrupted (SIGTERM): stopping 2 actors; the last checkpoint is in {tmp_path}/experiment' in err
    resumed = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    assert (resumed.first_iteration, resumed.env_steps) == (0, 4)
    assert next(resumed.iterations) == 0 and resumed.steps_left() == 6  # the rest of iteration 0
    resumed.close()


def test_a_checkpoint_at_the_stop_that_cannot_finish_in_time_is_abandoned(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(experiment, 'STOP_SAVE_SECONDS', 0.2)
    release = threading.Event()
    monkeypatch.setattr(experiment.checkpoint, 'save_checkpoint', lambda *args, **kwargs: release.wait(5))
    run = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    run.stop_request = StopRequest()
    start = time.monotonic()
    with pytest.raises(SystemExit):
        run.stop(state(), 0)
    release.set()
    run.close()
    assert time.monotonic() - start < 1.0
    assert 'The checkpoint at the stop did not finish within 0.2 s and was abandoned; no earlier checkpoint exists' in capsys.readouterr().err


def replay_holder(steps):
    """An agent stand-in whose replay holds `steps` one-stream CartPole-sized steps."""
    replay = replay_lib.UniformReplay(100, (4,), np.float32, discount=0.9, seed=0)
    for t in range(steps):
        replay.add(np.full((1, 4), t, np.float32), np.array([t % 2]), np.array([1.0], np.float32), np.array([False]), np.array([False]))
    return types.SimpleNamespace(replay=replay)


def test_with_save_replay_at_stop_only_the_checkpoint_at_the_stop_holds_the_replay(tmp_path, capsys):
    holder = replay_holder(7)
    run = Experiment(settings(tmp_path, save_replay_at_stop=True), VECTOR_ENV).begin()
    next(iter(run.iterations))
    for _ in range(4):
        run.record_train_step(1, [], OBSERVATION)
    periodic = run.save_periodic(state(1), 2, holder)
    assert 'replay' not in checkpoint.load_checkpoint(periodic)['extra']
    for _ in range(2):
        run.record_train_step(1, [], OBSERVATION)
    run.stop_request = StopRequest()
    with pytest.raises(SystemExit):
        run.stop(state(6), 3, holder)
    run.close()
    assert files(tmp_path) == [f'{NAME}_0_at4.ckpt', f'{NAME}_0_at6.ckpt'] and not [n for n in os.listdir(tmp_path / 'experiment') if '.tmp' in n]
    err = capsys.readouterr().err
    assert f'Checkpoint at the stop: {tmp_path}/experiment/{NAME}_0_at6.ckpt' in err
    assert 'Adding the replay memory (6 samples) to it (--save_replay_at_stop, at most 60 s)' in err
    assert 'Replay memory added in ' in err
    at_stop = checkpoint.load_checkpoint(str(tmp_path / 'experiment' / f'{NAME}_0_at6.ckpt'))
    assert at_stop['counters']['env_steps'] == 6 and at_stop['state']['network']['weight'].tolist() == [6.0, 6.0]
    restored = replay_holder(0).replay
    replay_lib.load_replay_state(restored, at_stop['extra']['replay'])
    assert restored.size == holder.replay.size > 0
    resumed = Experiment(settings(tmp_path, save_replay_at_stop=True), VECTOR_ENV).begin()
    assert resumed.resumed_replay is not None and resumed.env_steps == 6
    resumed.close()


def test_a_replay_too_slow_to_write_at_the_stop_leaves_the_checkpoint_without_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(experiment, 'STOP_REPLAY_SAVE_SECONDS', 0.2)
    release, save = threading.Event(), checkpoint.save_checkpoint

    def slow_with_a_replay(*args, **kwargs):
        if 'replay' in kwargs['extra']:
            release.wait(5)
            return None
        return save(*args, **kwargs)

    monkeypatch.setattr(experiment.checkpoint, 'save_checkpoint', slow_with_a_replay)
    run = Experiment(settings(tmp_path, save_replay_at_stop=True), VECTOR_ENV).begin()
    run.record_train_step(1, [], OBSERVATION)
    run.stop_request = StopRequest()
    start = time.monotonic()
    with pytest.raises(SystemExit):
        run.stop(state(1), 0, replay_holder(3))
    release.set()
    run.close()
    assert time.monotonic() - start < 2.0
    assert 'The replay memory did not fit in 0.2 s: the checkpoint at the stop holds none' in capsys.readouterr().err
    assert 'replay' not in checkpoint.load_checkpoint(str(tmp_path / 'experiment' / f'{NAME}_0_at1.ckpt'))['extra']


def test_evaluation_notices_the_stop(tmp_path):
    run = Experiment(settings(tmp_path, num_eval_steps=100_000), VECTOR_ENV).begin()
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, 0)
    actions = []
    actor = types.SimpleNamespace(act=lambda observation: actions.append(0) or np.zeros(1, np.int64), observe=lambda action, step: None)
    requests = iter([False] * 30 + [True] * 1000)
    run.stop_request = type('Later', (), {'__bool__': lambda self: next(requests)})()
    try:
        assert run.evaluate(actor, env) == {}
    finally:
        env.close()
        run.close()
    assert len(actions) == 31  # asked after every step: 30 steps with no stop, then the step after which it came


def test_evaluation_plays_on_one_torch_thread_and_gives_the_learner_its_threads_back(tmp_path):
    run = Experiment(settings(tmp_path, num_eval_steps=30), VECTOR_ENV).begin()
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, 0)
    threads_while_acting = set()

    def act(observation):
        threads_while_acting.add(torch.get_num_threads())
        return np.zeros(1, np.int64)

    learner_threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        run.evaluate(types.SimpleNamespace(act=act, observe=lambda action, step: None), env)
        assert threads_while_acting == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(learner_threads)
        env.close()
        run.close()


def test_train_for_seconds_bounds_the_evaluation_too_and_a_long_one_shows_progress(tmp_path, monkeypatch, capsys):
    now = [1000.0]  # the experiment's clock, moved by hand: each evaluation step takes 1 s however fast the machine is
    clock = types.ModuleType('time')
    clock.__dict__.update(vars(time), monotonic=lambda: now[0])
    monkeypatch.setattr(experiment, 'time', clock)
    run = Experiment(settings(tmp_path, num_eval_steps=27_000, train_for_seconds=30, progress=True), VECTOR_ENV).begin()
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, 0)
    played = []

    def act(observation):
        now[0] += 1.0
        played.append(observation)
        return np.zeros(1, np.int64)  # always left: CartPole episodes of about 10 steps

    actor = types.SimpleNamespace(act=act, observe=lambda action, step: None)
    now[0] += 5.0  # 5 s of training, then the evaluation
    try:
        performance = run.evaluate(actor, env)
    finally:
        env.close()
        run.close()
    assert len(played) == 25  # 5 + 25 s: the budget of 30 s is spent
    out = capsys.readouterr().out
    assert 'evaluation steps 10/27,000 (0.0%) | n/a steps/s | return n/a | ETA n/a' in out  # 10 s into the evaluation
    episodes = performance['num_episodes']
    assert episodes >= 1 and f'evaluation: cut at 25 of --num_eval_steps=27000 by --train_for_seconds=30 (it bounds the whole run); {episodes:g} whole episodes scored' in out


def test_train_for_env_steps_ends_the_iteration_early_with_its_checkpoint_and_row(tmp_path, capsys):
    run = Experiment(settings(tmp_path, train_for_env_steps=25), VECTOR_ENV).begin()
    ended = []
    for iteration in run.iterations:
        while run.steps_left() > 0 and not run.should_stop():
            run.record_train_step(1, [], OBSERVATION)
        ended.append(run.end_iteration(iteration, state(), 0, {}, {}, lambda: {})['env_steps'])
    run.close()
    assert ended == [10, 20, 25]
    assert files(tmp_path) == [f'{NAME}_0.ckpt', f'{NAME}_1.ckpt', f'{NAME}_2.ckpt']
    out = capsys.readouterr().out
    assert 'Stopping during iteration 2: 25 env steps reached --train_for_env_steps=25; it ends here with a checkpoint and a results row' in out
    assert out.count('Stopping') == 1


# -------------------------------------------------------------------------------------- restarts, saved config


def experiment_flags(tmp_path, **overrides):
    """The experiment's flags as a command line gives them."""
    values = {
        'environment_name': 'CartPole-v1', 'tag': '', 'experiment': '', 'train_dir': str(tmp_path / 'train'),
        'checkpoint_dir': '', 'runs_dir': str(tmp_path / 'runs'), 'results_csv_path': '', 'restart_behavior': 'resume',
        'load_checkpoint_kind': 'latest', 'load_checkpoint_file': '', 'learning_rate': 1e-3, 'num_iterations': 2,
    }  # fmt: skip
    values.update(overrides)
    return values


def dqn_settings(tmp_path, **overrides):
    """DQN's settings with the experiment's flags (`experiment_flags`)."""
    return DqnSettings().with_values(experiment_flags(tmp_path, **overrides))


def run_settings(dqn, **overrides):
    """The settings of a run of DQN of the settings `dqn`, a short one."""
    short = dict(num_train_steps=10, num_eval_steps=0, episodes_csv_path='', use_tensorboard=True, debug_screenshots_interval=0, progress=False)
    return RunSettings.from_settings('DQN', dqn.replace(**short | overrides))


def make_experiment_files(tmp_path, dqn):
    """A finished iteration of the experiment `dqn` names: checkpoint, config.json, log.txt, TensorBoard run."""
    run = Experiment(run_settings(dqn), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()


def begin_session(dqn):
    """A session of the experiment `dqn` names that begins and ends at once, without TensorBoard; returns the
    snapshot of `train_dir` and `runs_dir` taken after the experiment was made, before it began."""
    run = Experiment(run_settings(dqn, use_tensorboard=False), VECTOR_ENV)
    before = {**snapshot(dqn.train_dir), **snapshot(dqn.runs_dir)}
    run.begin()
    run.close()
    return before


def test_an_output_directory_must_be_a_writable_directory_or_creatable(tmp_path):
    (tmp_path / 'file').write_text('')
    experiment.check_output_directory('train_dir', str(tmp_path / 'new' / 'deeper'))  # created later: fine
    experiment.check_output_directory('checkpoint_dir', '')  # not given: fine
    with pytest.raises(ValueError, match=rf'^--checkpoint_dir={tmp_path}/file is a file, not a directory: pass a directory'):
        experiment.check_output_directory('checkpoint_dir', str(tmp_path / 'file'))
    with pytest.raises(ValueError, match=rf'^--runs_dir={tmp_path}/file/x is under the file {tmp_path}/file, not a directory'):
        experiment.check_output_directory('runs_dir', str(tmp_path / 'file' / 'x'))


def test_default_experiment_name_directory_and_files(tmp_path):
    dqn = dqn_settings(tmp_path, tag='lr3', environment_name='ALE/Pong-v5')
    assert experiment.experiment_name('DQN', dqn) == 'DQN_ALE-Pong-v5_lr3'
    make_experiment_files(tmp_path, dqn)
    directory = tmp_path / 'train' / 'DQN_ALE-Pong-v5_lr3'
    assert sorted(os.listdir(directory)) == ['DQN_ALE-Pong-v5_0.ckpt', 'DQN_ALE_Pong-v5_results.csv', 'config.json', 'log.txt']
    assert os.listdir(tmp_path / 'runs') == ['DQN_ALE-Pong-v5_lr3']  # TensorBoard: runs/<experiment>/{train,eval}
    assert sorted(os.listdir(tmp_path / 'runs' / 'DQN_ALE-Pong-v5_lr3')) == ['eval', 'train']
    config = json.loads((directory / 'config.json').read_text())
    assert config['flags']['learning_rate'] == 1e-3 and config['flags']['train_dir'] == str(tmp_path / 'train')
    assert config['experiment'] == 'DQN_ALE-Pong-v5_lr3' and config['agent_name'] == 'DQN'
    assert config['versions']['torch'] and 'git_commit' in config and 'git_dirty' in config
    log = (directory / 'log.txt').read_text()
    assert log.startswith('=== ') and f'iteration 0: env steps 10, train return nan, eval return nan, checkpoint {directory}' in log


def test_restart_moves_the_experiment_aside_and_overwrite_deletes_it_when_the_run_begins(tmp_path, capsys):
    dqn = dqn_settings(tmp_path)
    make_experiment_files(tmp_path, dqn)
    directory = tmp_path / 'train' / NAME
    unchanged = {**snapshot(tmp_path / 'train'), **snapshot(tmp_path / 'runs')}
    restart = dqn.replace(restart_behavior='restart')
    assert experiment.prepare(restart, frozenset()) == restart
    assert begin_session(restart) == unchanged  # nothing moves before the run begins
    (moved,) = [path for path in (tmp_path / 'train').iterdir() if path.name.startswith(f'{NAME}_old_')]
    assert f'{NAME}_0.ckpt' in os.listdir(moved) and 'config.json' in os.listdir(moved)
    assert sorted(os.listdir(directory)) == ['config.json', 'log.txt']  # the new session's
    assert f'restart: moved {directory} of experiment {NAME} to {moved}' in capsys.readouterr().out

    (board,) = [name for name in os.listdir(tmp_path / 'runs') if name.startswith(f'{NAME}_old_')]  # its TensorBoard folder too
    assert sorted(os.listdir(tmp_path / 'runs')) == [board] and sorted(os.listdir(tmp_path / 'runs' / board)) == ['eval', 'train']

    make_experiment_files(tmp_path, dqn)
    overwrite = dqn.replace(restart_behavior='overwrite')
    experiment.prepare(overwrite, frozenset())
    assert (directory / f'{NAME}_0.ckpt').exists() and (tmp_path / 'runs' / NAME).exists()
    begin_session(overwrite)
    assert sorted(os.listdir(directory)) == ['config.json', 'log.txt'] and moved.exists()  # only the experiment's own files go
    assert os.listdir(tmp_path / 'runs') == [board]
    out = capsys.readouterr().out
    assert f'overwrite: deleted {directory} of experiment {NAME}' in out and f'overwrite: deleted {tmp_path / "runs" / NAME} of experiment' in out


def test_restart_with_a_separate_checkpoint_dir_moves_only_this_runs_files(tmp_path):
    dqn = dqn_settings(tmp_path, checkpoint_dir=str(tmp_path / 'ck'))
    make_experiment_files(tmp_path, dqn)
    (tmp_path / 'ck' / 'other.txt').write_text('not ours')
    begin_session(dqn.replace(restart_behavior='restart'))
    names = sorted(os.listdir(tmp_path / 'ck'))
    assert names[1] == 'other.txt' and names[0].startswith('old_') and len(names) == 2
    assert sorted(os.listdir(tmp_path / 'ck' / names[0])) == [f'{NAME}_0.ckpt', 'DQN_CartPole-v1_results.csv']


def test_a_session_that_never_begins_changes_nothing_of_the_experiment(tmp_path, capsys):
    """Issue 23: a session whose run fails to start (no Ray cluster answers, ...) is made and closed without `begin()`.
    Had it begun, resuming from iteration 0 would have moved iteration 1's checkpoint aside, dropped its results row,
    hidden its TensorBoard events, written config.json and log.txt."""
    dqn = dqn_settings(tmp_path, num_iterations=3)
    first = Experiment(run_settings(dqn), VECTOR_ENV).begin()
    run_iteration(first)
    run_iteration(first)
    first.close()
    unchanged = {**snapshot(tmp_path / 'train'), **snapshot(tmp_path / 'runs')}
    older = str(tmp_path / 'train' / NAME / f'{NAME}_0.ckpt')
    capsys.readouterr()

    never = Experiment(run_settings(dqn.replace(load_checkpoint_file=older, learning_rate=0.5)), VECTOR_ENV)
    assert isinstance(sys.stdout, experiment._Tee)  # the console is recorded for the log from here on
    assert (never.first_iteration, never.env_steps) == (1, 10) and never.resumed_state is not None  # read, and checked
    with pytest.raises(RuntimeError, match=r'call Experiment.begin\(\) once the run has started'):
        next(never.iterations)
    never.close()
    assert not isinstance(sys.stdout, experiment._Tee) and not isinstance(sys.stderr, experiment._Tee)
    assert {**snapshot(tmp_path / 'train'), **snapshot(tmp_path / 'runs')} == unchanged
    assert capsys.readouterr().out == f'Resuming from {older}: iteration 1, 10 env steps\n'

    begun = Experiment(run_settings(dqn.replace(load_checkpoint_file=older, learning_rate=0.5)), VECTOR_ENV).begin()
    begun.close()  # the same session begun: now it does all that
    assert f'{NAME}_1.ckpt' not in os.listdir(tmp_path / 'train' / NAME)
    assert json.loads((tmp_path / 'train' / NAME / 'config.json').read_text())['flags']['learning_rate'] == 0.5


def test_resume_reloads_the_saved_config_and_explicit_flags_override_it(tmp_path, capsys):
    make_experiment_files(tmp_path, dqn_settings(tmp_path, learning_rate=1e-3, num_iterations=2))
    capsys.readouterr()
    later = dqn_settings(tmp_path, learning_rate=5e-4, num_iterations=3)  # the run script's defaults differ now
    resolved = experiment.prepare(later, frozenset({'num_iterations'}))
    assert resolved.learning_rate == 1e-3 and resolved.num_iterations == 3
    config = tmp_path / 'train' / NAME / 'config.json'
    assert capsys.readouterr().out.splitlines() == [f'resume: --num_iterations=3 from the command line overrides 2 of {config}']
    # Nothing to resume from, or a checkpoint named on the command line: this command's flags as they are.
    assert experiment.prepare(later.replace(load_checkpoint_file='x.ckpt'), frozenset()) == later.replace(load_checkpoint_file='x.ckpt')
    assert experiment.prepare(dqn_settings(tmp_path, experiment='new'), frozenset()) == dqn_settings(tmp_path, experiment='new')


def appo_script_values(tmp_path, **overrides):
    """APPO's run script's flag values (Sample Factory's names, untranslated), with the experiment's."""
    values = {
        **experiment_flags(tmp_path, environment_name='atari_amidar', num_iterations=10), 'use_rnn': False, 'num_policies': 1, 'rollout': 128,
        'num_envs_per_worker': 2, 'num_workers': 16, 'batch_size': 1024, 'num_batches_per_epoch': 8, 'num_epochs': 4, 'recurrence': 1,
        'async_rl': True, 'num_batches_to_accumulate': 2, 'max_policy_lag': 1000, 'gamma': 0.99, 'train_for_env_steps': 100_000_000,
        'env_frameskip': 4, 'env_framestack': 4, 'summaries_use_frameskip': True, 'num_train_steps': 1_000_000, 'num_eval_steps': 0,
        'episodes_csv_path': '', 'use_tensorboard': False, 'debug_screenshots_interval': 0, 'progress': False,
    }  # fmt: skip
    values.update(overrides)
    return values


def test_appo_resumes_from_its_saved_sample_factory_flags_translated_again(tmp_path, capsys):
    from deep_rl_zoo import flags
    from deep_rl_zoo.appo import settings as appo_settings

    settings = flags.settled(appo_settings.ATARI, appo_script_values(tmp_path), frozenset({'environment_name'}))
    core = settings.core_settings()
    assert (core.environment_name, core.num_iterations, core.train_for_env_steps, core.max_policy_lag) == ('Amidar', 25, 25_000_000, 31)
    run = Experiment(RunSettings.from_settings('APPO', settings), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()
    config = tmp_path / 'train' / 'APPO_Amidar' / 'config.json'
    saved = json.loads(config.read_text())['flags']
    assert (saved['environment_name'], saved['train_for_env_steps'], saved['max_policy_lag']) == ('atari_amidar', 100_000_000, 1000)  # as given
    capsys.readouterr()

    # The same command again, now with --num_iterations=30, while the script's defaults have changed: the saved flags
    # come back, the explicit one overrides them, and the translation starts from Sample Factory's values again.
    later = appo_script_values(tmp_path, num_iterations=30, num_epochs=1, max_policy_lag=50, train_for_env_steps=0)
    settings = flags.settled(appo_settings.ATARI, later, frozenset({'environment_name', 'num_iterations'}))
    core = settings.core_settings()
    assert (settings.num_epochs, settings.max_policy_lag, settings.train_for_env_steps, settings.num_iterations) == (4, 1000, 100_000_000, 30)
    assert (core.num_iterations, core.train_for_env_steps, core.max_policy_lag, core.num_actors) == (30, 25_000_000, 31, 16)
    assert capsys.readouterr().out.splitlines() == [f'resume: --num_iterations=30 from the command line overrides 10 of {config}']
    again = Experiment(RunSettings.from_settings('APPO', settings), VECTOR_ENV).begin()
    again.close()
    assert again.first_iteration == 1 and again.env_steps == 10


class LaterEventFiles:
    """TensorBoard reads a folder's event files in name order, which starts with the second the file was made: the
    sessions of a test, within one second of one process, are each named `offset` seconds later than the last."""

    def __init__(self):
        self.offset = 0

    def __getattr__(self, name):
        return getattr(time, name)

    def time(self):
        return time.time() + self.offset


def train_returns(tmp_path):
    """(env steps, return) of the train stream of runs/exp/ as TensorBoard shows them."""
    accumulator = event_accumulator.EventAccumulator(str(tmp_path / 'runs' / 'exp' / 'train'), size_guidance={'scalars': 0})
    accumulator.Reload()
    return [(event.step, event.value) for event in accumulator.Scalars('performance(env_steps)/episode_return')]


def test_tensorboard_shows_one_continuing_curve_per_experiment_over_its_sessions(tmp_path, monkeypatch):
    later = LaterEventFiles()
    monkeypatch.setattr(event_file_writer, 'time', later)

    def session(returns, **overrides):
        later.offset += 10
        run = Experiment(settings(tmp_path, use_tensorboard=True, **overrides), VECTOR_ENV).begin()
        for value, iteration in zip(returns, run.iterations):
            run.record_train_step(10, [(value, 10)], OBSERVATION)
            run.end_iteration(iteration, state(), 0, {}, {}, lambda: {})
        run.close()

    session([1.0, 2.0, 3.0])
    assert os.listdir(tmp_path / 'runs') == ['exp'] and train_returns(tmp_path) == [(10, 1.0), (20, 2.0), (30, 3.0)]
    # Resumed from iteration 0 and stopped before its next iteration ended: what came after iteration 0 is hidden.
    session([], load_checkpoint_file=str(tmp_path / 'experiment' / f'{NAME}_0.ckpt'))
    assert train_returns(tmp_path) == [(10, 1.0)]
    session([5.0])  # the same command again: on from iteration 0's checkpoint, in the same folder
    assert os.listdir(tmp_path / 'runs') == ['exp'] and sorted(os.listdir(tmp_path / 'runs' / 'exp')) == ['eval', 'train']
    assert train_returns(tmp_path) == [(10, 1.0), (20, 5.0)]


@pytest.mark.parametrize('ending, last_line', [
    (lambda: sys.exit('error: could not write checkpoint x'), 'error: could not write checkpoint x'),  # as flags.run ends
    (lambda: 1 / 0, 'ZeroDivisionError: division by zero'),  # a crash: its traceback
])  # fmt: skip
def test_the_log_holds_what_the_console_showed_before_the_experiment_started_and_the_last_line(tmp_path, ending, last_line):
    make_experiment_files(tmp_path, dqn_settings(tmp_path))
    dqn = dqn_settings(tmp_path, num_iterations=3)
    with pytest.raises((SystemExit, ZeroDivisionError)):
        with experiment.console_log():
            print('preset CartPole-v1 (...): --learning_rate=0.001')  # printed before the experiment directory is known
            resolved = experiment.prepare(dqn, frozenset({'num_iterations'}))
            run = Experiment(run_settings(resolved, use_tensorboard=False), VECTOR_ENV).begin()
            run_iteration(run)
            run.close()
            print('after the run')
            ending()
    assert not isinstance(sys.stdout, experiment._Tee) and not isinstance(sys.stderr, experiment._Tee)  # the console is given back
    config = tmp_path / 'train' / NAME / 'config.json'
    session = (tmp_path / 'train' / NAME / 'log.txt').read_text().split('=== ')[-1].splitlines()
    assert session[1:4] == [
        'preset CartPole-v1 (...): --learning_rate=0.001',
        f'resume: --num_iterations=3 from the command line overrides 2 of {config}',
        f'Resuming from {tmp_path}/train/{NAME}/{NAME}_0.ckpt: iteration 1, 10 env steps',
    ]
    assert session[4].startswith('iteration 1: env steps 20,') and session[5] == 'after the run'
    assert session[-1] == last_line and (session[6] == 'Traceback (most recent call last):') == last_line.startswith('ZeroDivisionError')


# ------------------------------------------------------------------------------------------------ progress line


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_iteration_lines_start_on_their_own_line_after_the_live_progress_line(tmp_path, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr('sys.stdout', terminal)
    run = Experiment(settings(tmp_path, progress=True, experiment_dir=''), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()
    text = terminal.getvalue()
    assert '\r' in text and '\niteration 0: env steps 10,' in text
    assert not any(line.startswith('\r') and 'iteration 0' in line for line in text.split('\n'))


def test_a_resumed_run_shows_the_whole_run_s_counts_on_its_progress_line(tmp_path, capsys):
    run = Experiment(settings(tmp_path, num_iterations=3), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()
    capsys.readouterr()
    again = Experiment(settings(tmp_path, num_iterations=3, progress=True), VECTOR_ENV).begin()
    next(again.iterations)
    again.record_train_step(1, [], OBSERVATION)  # the first update prints at once
    again.close()
    assert 'env steps 11/30 (36.7%) | n/a steps/s | return n/a | ETA n/a' in capsys.readouterr().out


def test_the_no_learning_note_counts_sequences_for_a_sequence_replay(tmp_path):
    flags = {'environment_name': 'CartPole-v1', 'min_replay_size': 100, 'unroll_length': 16, 'priority_eta': 0.9}
    run = Experiment(settings(tmp_path, flags=flags), VECTOR_ENV).begin()
    assert run.learning_not_started_note(0) == (
        'no learning yet: learning starts once replay holds --min_replay_size=100 sequences of --unroll_length=16 steps; this run is at env step 0'
    )
    assert run.learning_not_started_note(1) == ''
    run.close()


def test_running_a_finished_experiment_again_says_how_to_train_on(tmp_path, capsys):
    run = Experiment(settings(tmp_path, num_iterations=1), VECTOR_ENV).begin()
    run_iteration(run)
    run.close()
    again = Experiment(settings(tmp_path, num_iterations=1), VECTOR_ENV).begin()
    assert list(again.iterations) == []
    again.close()
    assert capsys.readouterr().out.splitlines()[-1] == (
        'Nothing to train: the experiment has finished its 1 iterations; pass a larger --num_iterations to train on, '
        'or --restart_behavior=restart to start again'
    )


def test_an_evaluation_without_a_finished_episode_and_a_replay_agent_yet_to_learn_say_why(tmp_path, capsys):
    run = Experiment(settings(tmp_path, num_eval_steps=5, flags={'environment_name': 'CartPole-v1', 'environment_kind': 'classic', 'seed': 1, 'min_replay_size': 1000}), VECTOR_ENV).begin()
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, 0)
    actor = types.SimpleNamespace(act=lambda observation: np.zeros(1, np.int64), observe=lambda action, step: None)
    try:
        iteration = next(run.iterations)
        run.record_train_step(10, [(9.0, 9), (12.0, 12)], OBSERVATION)
        row = run.end_iteration(iteration, state(), 0, {}, {}, lambda: run.evaluate(actor, env))
    finally:
        env.close()
        run.close()
    out = capsys.readouterr().out
    assert math.isnan(row['eval_episode_return'])
    # Always pushing left, CartPole falls within about 10 steps, but not within 5.
    assert ('evaluation: no episode ended within --num_eval_steps=5 (the greedy episode under way had 5 steps), so its return is nan; '
            'an episode needs at least 13, the longest training episode so far: raise --num_eval_steps') in out  # fmt: skip
    assert 'no learning yet: learning starts once replay holds --min_replay_size=1000 transitions (about env step 1000); this run is at env step 10' in out
