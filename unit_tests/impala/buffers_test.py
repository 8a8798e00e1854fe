"""The rollout buffers of the asynchronous loop (IMPALA's run scripts): a batch larger than the buffers can hold is
refused at start in one line, and the default buffer count lets the actors collect while the learner trains.

The overlap is read from timestamps, not from durations: each fake rollout records when its collection started and
ended, each fake update when it started and ended (CLOCK_MONOTONIC, one clock for every process of the machine), and
a rollout counts as collected during an update when the two intervals intersect."""

import os
import re
import time
import types

import gymnasium
import numpy as np
import pytest
import torch

from deep_rl_zoo import main_loop
from deep_rl_zoo.main_loop import AsyncSettings, Experiment, RunSettings
from deep_rl_zoo.settings import ActorsAndLearner, Asynchronous
from unit_tests.helpers import TRACEBACK, run_module, stderr_lines

COLLECT_SECONDS = 0.1
UPDATE_SECONDS = 0.4
NUM_ROLLOUTS = 40


@pytest.fixture(scope='module')
def script_defaults():
    """IMPALA's run scripts' defaults of the asynchronous loop's flags, as their --help prints them."""
    defaults = {}
    for script in ('run_atari', 'run_classic'):
        proc = run_module(f'deep_rl_zoo.impala.{script}', '--help')
        assert proc.returncode == 0, proc.stderr[-2000:]
        printed = dict(re.findall(r'^  --(\w+)=(\S*)', proc.stdout, re.M))
        defaults[script] = asynchronous(*(int(printed[name]) for name in ('num_actors', 'batch_rollouts', 'num_buffers_per_actor')))
    return defaults


def asynchronous(num_actors, batch_rollouts, num_buffers_per_actor):
    return Asynchronous(num_actors=num_actors, batch_rollouts=batch_rollouts, num_buffers_per_actor=num_buffers_per_actor, max_policy_lag=100)


def test_the_default_buffer_count_holds_two_batches():
    assert AsyncSettings.from_settings(asynchronous(2, 4, 0)).num_buffers_per_actor == 4  # IMPALA's Atari defaults: 8 buffers
    assert AsyncSettings.from_settings(asynchronous(2, 2, 0)).num_buffers_per_actor == 2  # run_classic's: 4 buffers
    assert AsyncSettings.from_settings(asynchronous(1, 3, 0)).num_buffers_per_actor == 6  # the command runs
    assert AsyncSettings.from_settings(asynchronous(8, 1, 0)).num_buffers_per_actor == 2  # never fewer than 2
    assert AsyncSettings.from_settings(asynchronous(1, 3, 3)).num_buffers_per_actor == 3  # given: taken as it is


def test_buffers_that_cannot_hold_one_batch_are_refused_naming_the_three_flags():
    with pytest.raises(ValueError) as refused:
        AsyncSettings.from_settings(asynchronous(1, 3, 2))
    assert str(refused.value) == (
        '--batch_rollouts=3 is more rollouts than --num_actors=1 x --num_buffers_per_actor=2 = 2 buffers hold, so the learner '
        'would wait forever for a full batch: take --num_buffers_per_actor >= 3 (0, the default, takes 6: two batches) or --batch_rollouts <= 2'
    )


@pytest.mark.slow  # the scripts' --help in subprocesses
def test_the_run_scripts_default_to_buffers_for_two_batches(script_defaults):
    for script, defaults in script_defaults.items():
        settings = AsyncSettings.from_settings(defaults)
        assert defaults.num_actors * settings.num_buffers_per_actor >= 2 * settings.batch_rollouts, script


@pytest.mark.slow
def test_a_batch_larger_than_the_buffers_is_refused_before_anything_starts(tmp_path):
    """Before: the learner waited forever for a third rollout that no actor could deliver, without a word."""
    started = time.monotonic()
    proc = run_module(
        'deep_rl_zoo.impala.run_classic', '--num_actors=1', '--batch_rollouts=3', '--num_buffers_per_actor=2', '--num_iterations=1',
        '--num_train_steps=240', '--num_eval_steps=0', '--noprogress', f'--train_dir={tmp_path}/train', f'--runs_dir={tmp_path}/runs',
        cwd=str(tmp_path), timeout=60,
    )  # fmt: skip
    print(f'refused in {time.monotonic() - started:.1f} s')
    assert proc.returncode == 1
    assert TRACEBACK not in proc.stderr
    assert stderr_lines(proc)[-1] == (
        'error: --batch_rollouts=3 is more rollouts than --num_actors=1 x --num_buffers_per_actor=2 = 2 buffers hold, so the learner '
        'would wait forever for a full batch: take --num_buffers_per_actor >= 3 (0, the default, takes 6: two batches) or --batch_rollouts <= 2'
    )
    assert os.listdir(tmp_path) == []  # no experiment directory, checkpoint or TensorBoard run was created


# ---------------------------------------------------------------------- collection during updates


class _TimedActor:
    """Takes COLLECT_SECONDS per rollout and writes into it when its collection started and ended."""

    def __init__(self, actor_id):
        self.network = torch.nn.Linear(1, 1)

    def collect(self, buffer):
        started = time.monotonic()
        time.sleep(COLLECT_SECONDS)
        buffer['collected'].copy_(torch.tensor([started, time.monotonic()], dtype=torch.float64))
        return []


class _TimedLearner:
    """Takes UPDATE_SECONDS per update; keeps when each update started and ended, and the collection times of the
    rollouts it trained on."""

    agent_name = 'IMPALA'

    def __init__(self):
        self.network = torch.nn.Linear(1, 1)
        self.learner_steps = 0
        self.updates = []
        self.collections = []

    def update(self, buffers):
        started = time.monotonic()
        self.collections += [tuple(buffer['collected'].tolist()) for buffer in buffers]
        time.sleep(UPDATE_SECONDS)
        self.learner_steps += 1
        self.updates.append((started, time.monotonic()))

    def state_dict(self):
        return {'network': self.network.state_dict()}

    def learner_statistics(self):
        return {}

    def agent_statistics(self):
        return {}


def run_timed(tmp_path, settings):
    """NUM_ROLLOUTS rollouts of one step each through the asynchronous loop with IMPALA's Atari actors and batch."""
    spec = {'observation': ((1, 1, 4), torch.float32), 'reward': ((1, 1), torch.float32), 'collected': ((2,), torch.float64)}
    run = RunSettings(
        agent_name='IMPALA', environment_name='CartPole-v1', num_iterations=1, num_train_steps=NUM_ROLLOUTS, num_eval_steps=0,
        checkpoint_dir=str(tmp_path / 'checkpoints'), results_csv_path=str(tmp_path / 'results.csv'), episodes_csv_path='',
        load_checkpoint_file='', use_tensorboard=False, runs_dir=str(tmp_path / 'runs'), tag='', debug_screenshots_interval=0,
        progress=False, flags={'environment_name': 'CartPole-v1', 'environment_kind': 'classic', 'seed': 1},
    )  # fmt: skip
    environment = types.SimpleNamespace(frames_per_step=1, single_observation_space=gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32))
    learner = _TimedLearner()
    main_loop.run_actors_and_learner(
        Experiment(run, environment), learner, lambda actor_id, device: _TimedActor(actor_id), spec, ActorsAndLearner(num_actors=2), None,
        types.SimpleNamespace(close=lambda: None), settings,
    )  # fmt: skip
    collected_during_updates = sum(
        any(collect_start < update_end and collect_end > update_start for update_start, update_end in learner.updates)
        for collect_start, collect_end in learner.collections
    )
    starts = [update_start for update_start, _ in learner.updates]
    seconds_per_update = (starts[-1] - starts[0]) / (len(starts) - 1)
    return learner, collected_during_updates, seconds_per_update


@pytest.mark.slow
def test_with_the_default_buffers_actors_collect_while_the_learner_trains(tmp_path, script_defaults):
    """IMPALA's Atari defaults (2 actors, batches of 4 rollouts) with a collect of 0.1 s and an update of 0.4 s.

    With 2 buffers per actor (the old default) the learner holds all 4 during each update, so no rollout can be
    collected during one, whatever the machine's speed: actors and learner take turns. The default now holds two
    batches, and the actors fill the second while the learner trains on the first."""
    defaults = script_defaults['run_atari']
    assert (defaults.num_actors, defaults.batch_rollouts) == (2, 4)
    old = AsyncSettings.from_settings(defaults.replace(num_buffers_per_actor=2))
    new = AsyncSettings.from_settings(defaults)
    results = {}
    for name, settings in (('old', old), ('new', new)):
        learner, during, seconds_per_update = run_timed(tmp_path / name, settings)
        assert len(learner.collections) == NUM_ROLLOUTS and learner.learner_steps == NUM_ROLLOUTS // 4
        results[name] = (settings.num_buffers_per_actor, during, seconds_per_update)
    print(' '.join(f'{name}: {buffers} buffers per actor, {during} of {NUM_ROLLOUTS} rollouts collected during updates, '
                   f'{seconds:.3f} s per update;' for name, (buffers, during, seconds) in results.items()))  # fmt: skip
    assert results['old'][1] == 0
    assert results['new'][1] > 0
