"""main_loop: run_env_loop with a scripted actor on real CartPole, play_episodes counting, Experiment bookkeeping,
the order in which run_actors_and_learner hands rollouts to the learner."""

import csv
import itertools
import math
import multiprocessing
import os
import time
import types

import gymnasium
import numpy as np
import pytest
import torch

from deep_rl_zoo import checkpoint, distributed, gym_env, main_loop, trackers
from deep_rl_zoo import experiment as experiment_lib
from deep_rl_zoo.greedy_actors import PolicyGreedyActor
from deep_rl_zoo.episodes import play_episodes, run_env_loop
from deep_rl_zoo.main_loop import Experiment, RunSettings
from deep_rl_zoo.settings import ActorsAndLearner, Common
from unit_tests.helpers import RESULT_COLUMNS, snapshot, wait_until_asleep


class ScriptedActor:
    """Plays a fixed cycle of actions and records everything it is shown."""

    def __init__(self, num_envs, script=(0, 1, 1, 0, 1)):
        self.num_envs = num_envs
        self.script = itertools.cycle(script)
        self.acted_on = []
        self.actions = []
        self.observed = []

    def act(self, observation):
        self.acted_on.append(observation.copy())
        action = np.full(self.num_envs, next(self.script), dtype=np.int64)
        self.actions.append(action)
        return action

    def observe(self, action, step):
        self.observed.append((action, step))


class AlwaysLeft:
    def act(self, observation):
        return np.zeros(len(observation), dtype=np.int64)

    def observe(self, action, step):
        pass



# What Experiment reads of an environment: frames per step and the observation space.
VECTOR_ENV = types.SimpleNamespace(frames_per_step=1, single_observation_space=gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32))
ATARI_ENV = types.SimpleNamespace(frames_per_step=4, single_observation_space=gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8))

def cartpole(num_envs=1, seed=0):
    return gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed)


# ------------------------------------------------------------------------------------- run_env_loop


def test_run_env_loop_acts_observes_and_yields_every_step():
    num_envs, num_steps = 2, 40
    actor = ScriptedActor(num_envs)
    env = cartpole(num_envs, seed=3)
    try:
        yielded = list(itertools.islice(run_env_loop(actor, env), num_steps))
    finally:
        env.close()
    assert len(actor.actions) == len(actor.observed) == len(yielded) == num_steps
    for t, step in enumerate(yielded):
        observed_action, observed_step = actor.observed[t]
        assert observed_step is step  # observe sees exactly the step the loop yields
        np.testing.assert_array_equal(observed_action, actor.actions[t])
        if t + 1 < num_steps:  # the next action is chosen from this step's observation (the reset one at episode ends)
            np.testing.assert_array_equal(actor.acted_on[t + 1], step.observation)
    assert any(step.terminated.any() for step in yielded), 'CartPole should end episodes within 40 steps of this script'

    # The same seed and the same actions replay the same trajectory when stepped by hand.
    reference = cartpole(num_envs, seed=3)
    try:
        np.testing.assert_array_equal(reference.reset(), actor.acted_on[0])
        for t in range(num_steps):
            step = reference.step(actor.actions[t])
            np.testing.assert_array_equal(step.observation, yielded[t].observation)
            np.testing.assert_array_equal(step.terminated, yielded[t].terminated)
            np.testing.assert_array_equal(step.final_observation, yielded[t].final_observation)
    finally:
        reference.close()


def test_an_actor_that_wants_new_episodes_gets_every_environment_reset_before_its_next_act():
    class RestartingActor(ScriptedActor):
        """Asks for new episodes after its 3rd and 7th steps, like REINFORCE after an update."""

        resets = 0
        wants_new_episodes = False

        def observe(self, action, step):
            super().observe(action, step)
            self.wants_new_episodes = len(self.observed) in (3, 7)

        def reset(self):
            self.resets += 1
            self.wants_new_episodes = False

    actor, restarts = RestartingActor(num_envs=2), []
    env = cartpole(2, seed=5)
    tracker = trackers.EpisodeTracker(2)

    def on_restart():
        restarts.append(len(actor.observed))
        tracker.abandon_running()

    try:
        for step in itertools.islice(run_env_loop(actor, env, on_restart=on_restart), 9):
            assert tracker.step(step.raw_reward, step.terminated | step.truncated) == []  # CartPole lasts > 4 steps
    finally:
        env.close()
    assert actor.resets == 3 and restarts == [3, 7]  # the first reset is the loop's start
    assert tracker.current(0) == tracker.current(1) == (2.0, 2)  # only steps 8 and 9, of the games begun after step 7
    reference = cartpole(2, seed=5)
    try:
        first, second, third = reference.reset(), reference.reset(), reference.reset()  # the same seeded streams
    finally:
        reference.close()
    np.testing.assert_array_equal(actor.acted_on[0], first)
    np.testing.assert_array_equal(actor.acted_on[3], second)  # step 4 acts on new games, not on step 3's observation
    np.testing.assert_array_equal(actor.acted_on[7], third)
    assert not np.array_equal(actor.acted_on[3], actor.observed[2][1].observation)


def test_abandoned_episodes_score_nothing():
    tracker = trackers.EpisodeTracker(2)
    tracker.step(np.array([1.0, 2.0]), np.array([False, False]))
    tracker.abandon_running()  # the environments were reset mid-game
    assert tracker.step(np.array([3.0, 4.0]), np.array([True, False])) == [(3.0, 1)]
    assert tracker.current(1) == (4.0, 1)


# ------------------------------------------------------------------------------------ play_episodes


def episode_lengths_by_hand(num_steps, seed=0):
    """Lengths of the CartPole episodes that always pushing left finishes within num_steps."""
    env = cartpole(seed=seed)
    lengths, length = [], 0
    try:
        env.reset()
        for _ in range(num_steps):
            step = env.step(np.zeros(1, np.int64))
            length += 1
            if step.terminated[0] or step.truncated[0]:
                lengths.append(length)
                length = 0
    finally:
        env.close()
    return lengths


def test_play_episodes_counts_whole_episodes_within_the_step_budget():
    expected = episode_lengths_by_hand(60)
    env = cartpole()
    try:
        played = play_episodes(AlwaysLeft(), env, num_steps=60)
    finally:
        env.close()
    assert played['steps'] == 60 and played['partial'] is False
    assert len(expected) >= 3
    # CartPole pays 1 per step, so each finished episode's return equals its length; the unfinished tail is dropped.
    assert played['finished'] == [(float(length), length) for length in expected]


def test_play_episodes_stops_after_num_episodes():
    expected = episode_lengths_by_hand(60)[:2]
    env = cartpole()
    try:
        played = play_episodes(AlwaysLeft(), env, num_steps=1, num_episodes=2)
    finally:
        env.close()
    assert played['finished'] == [(float(length), length) for length in expected]
    assert played['steps'] == sum(expected) and played['partial'] is False


def test_play_episodes_reports_the_unfinished_episode_when_none_ended():
    env = cartpole()
    try:
        played = play_episodes(AlwaysLeft(), env, num_steps=4)
    finally:
        env.close()
    assert played == {'finished': [(4.0, 4)], 'partial': True, 'steps': 4}


def test_play_episodes_counts_steps_of_all_environments():
    env = cartpole(num_envs=3)
    try:
        played = play_episodes(AlwaysLeft(), env, num_steps=30)
    finally:
        env.close()
    assert played['steps'] == 30  # 10 vector steps of 3 environments
    assert all(episode_return == length for episode_return, length in played['finished'])
    assert sum(length for _, length in played['finished']) <= 30


# ---------------------------------------------------------------------------------------- Experiment


def settings(tmp_path, **overrides):
    values = dict(
        agent_name='DQN',
        environment_name='CartPole-v1',
        num_iterations=2,
        num_train_steps=10,
        num_eval_steps=5,
        checkpoint_dir=str(tmp_path / 'checkpoints'),
        results_csv_path=str(tmp_path / 'results.csv'),
        episodes_csv_path=str(tmp_path / 'episodes.csv'),
        load_checkpoint_file='',
        use_tensorboard=False,
        runs_dir=str(tmp_path / 'runs'),
        tag='',
        debug_screenshots_interval=0,
        progress=False,
        flags={'environment_name': 'CartPole-v1', 'environment_kind': 'classic', 'seed': 1},
    )
    values.update(overrides)
    return RunSettings(**values)


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))




def test_run_settings_default_results_csv_into_checkpoint_dir():
    settings = Common(
        environment_name='ALE/Pong-v5', num_iterations=3, num_train_steps=100, num_eval_steps=10, checkpoint_dir='ckpts', results_csv_path='',
        use_tensorboard=False, runs_dir='runs', progress=False,
    )  # fmt: skip
    run_settings = RunSettings.from_settings('DQN', settings)
    assert run_settings.results_csv_path == 'ckpts/DQN_ALE_Pong-v5_results.csv'
    assert run_settings.flags == settings.flag_values() and run_settings.num_iterations == 3


def test_run_settings_from_settings_run_with_the_core_settings_and_keep_the_flag_values():
    from deep_rl_zoo.dqn import settings as dqn_settings

    dqn = dqn_settings.CLASSIC.replace(num_iterations=3, checkpoint_dir='ckpts')
    run_settings = RunSettings.from_settings('DQN', dqn)
    assert run_settings.flags == dqn.core_settings().flag_values() and run_settings.config_flags == dqn.flag_values()
    assert run_settings.num_iterations == 3 and run_settings.results_csv_path == 'ckpts/DQN_CartPole-v1_results.csv'


def test_end_iteration_writes_csv_row_and_checkpoint(tmp_path):
    experiment = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    assert list(experiment.iterations) == [0, 1]
    experiment.record_train_step(4, [], np.zeros((1, 4), np.float32))
    experiment.record_train_step(4, [(10.0, 5), (20.0, 3)], np.zeros((1, 4), np.float32))
    experiment.record_train_step(2, [], np.zeros((1, 4), np.float32))
    assert experiment.env_steps == 10
    evaluations = []

    def evaluate():
        evaluations.append(experiment.env_steps)
        return {'episode_return': 7.5, 'num_episodes': 2}

    state = {'network': torch.nn.Linear(4, 2).state_dict(), 'env_steps': 10}
    row = experiment.end_iteration(0, state, 7, {'loss': 0.25}, {'exploration_epsilon': 0.5}, evaluate)
    experiment.close()

    assert evaluations == [10]
    path = str(tmp_path / 'checkpoints' / 'DQN_CartPole-v1_0.ckpt')
    assert row['checkpoint'] == path
    rows = read_csv(tmp_path / 'results.csv')
    assert len(rows) == 1 and list(rows[0]) == RESULT_COLUMNS
    written = rows[0]
    assert (written['iteration'], written['env_steps'], written['learner_steps']) == ('0', '10', '7')
    assert float(written['train_episode_return']) == 15.0 and written['train_num_episodes'] == '2'
    assert float(written['eval_episode_return']) == 7.5 and written['eval_num_episodes'] == '2'
    assert written['checkpoint'] == path
    assert float(written['wall_time']) >= 0

    loaded = checkpoint.load_checkpoint(path, agent_name='DQN', environment_name='CartPole-v1')
    assert loaded['iteration'] == 0
    assert loaded['counters'] == {'env_steps': 10, 'learner_steps': 7, 'iteration': 0}
    assert loaded['flags'] == {'environment_name': 'CartPole-v1', 'environment_kind': 'classic', 'seed': 1}
    torch.testing.assert_close(loaded['state']['network']['weight'], state['network']['weight'])

    episodes = read_csv(tmp_path / 'episodes.csv')
    assert [(row['env_steps'], float(row['return']), row['steps']) for row in episodes] == [('8', 10.0, '5'), ('8', 20.0, '3')]


def test_end_iteration_without_eval_steps_skips_evaluation(tmp_path):
    experiment = Experiment(settings(tmp_path, num_eval_steps=0, episodes_csv_path=''), VECTOR_ENV).begin()
    experiment.record_train_step(10, [], np.zeros((1, 4), np.float32))

    def evaluate():
        raise AssertionError('evaluate must not run with num_eval_steps=0')

    experiment.end_iteration(0, {'x': torch.zeros(1)}, 0, {}, {}, evaluate)
    experiment.close()
    written = read_csv(tmp_path / 'results.csv')[0]
    assert math.isnan(float(written['eval_episode_return'])) and written['eval_num_episodes'] == '0'
    assert math.isnan(float(written['train_episode_return'])) and written['train_num_episodes'] == '0'
    assert not (tmp_path / 'episodes.csv').exists()
    assert not (tmp_path / 'runs').exists()  # use_tensorboard=False writes no event files


def test_experiment_resumes_counters_from_checkpoint(tmp_path):
    first = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    first.record_train_step(10, [], np.zeros((1, 4), np.float32))
    first.end_iteration(0, {'x': torch.ones(1)}, 3, {}, {}, lambda: {})
    first.close()
    resumed = Experiment(
        settings(tmp_path, num_iterations=3, load_checkpoint_file=str(tmp_path / 'checkpoints' / 'DQN_CartPole-v1_0.ckpt')), VECTOR_ENV).begin()
    assert resumed.env_steps == 10 and resumed.first_iteration == 1
    assert list(resumed.iterations) == [1, 2]
    torch.testing.assert_close(resumed.resumed_state['x'], torch.ones(1))
    resumed.close()


def test_experiment_refuses_checkpoint_of_other_environment(tmp_path):
    first = Experiment(settings(tmp_path), VECTOR_ENV).begin()
    first.end_iteration(0, {'x': torch.ones(1)}, 0, {}, {}, lambda: {})
    first.close()
    with pytest.raises(checkpoint.CheckpointError, match='written for environment CartPole-v1, not Acrobot-v1'):
        Experiment(
            settings(
                tmp_path,
                environment_name='Acrobot-v1',
                load_checkpoint_file=str(tmp_path / 'checkpoints' / 'DQN_CartPole-v1_0.ckpt'),
            ), VECTOR_ENV)


def evaluate_always_left(tmp_path, **overrides):
    """An evaluation of always pushing left on CartPole by an experiment of `settings(tmp_path, **overrides)`."""
    experiment = Experiment(settings(tmp_path, **overrides), VECTOR_ENV).begin()
    env = cartpole()
    try:
        return experiment.evaluate(AlwaysLeft(), env)
    finally:
        env.close()
        experiment.close()


def test_evaluate_logs_whole_episodes(tmp_path):
    result = evaluate_always_left(tmp_path, num_eval_steps=60)
    expected = episode_lengths_by_hand(60)
    assert result['num_episodes'] == len(expected)
    assert result['episode_return'] == pytest.approx(np.mean(expected))
    assert result['episode_steps'] == pytest.approx(np.mean(expected))


def test_evaluate_ends_after_max_eval_episodes_within_its_steps(tmp_path):
    result = evaluate_always_left(tmp_path, num_eval_steps=200, max_eval_episodes=3)
    expected = episode_lengths_by_hand(200)
    assert len(expected) > 3  # always pushing left ends a CartPole episode in about ten steps
    assert result['num_episodes'] == 3
    assert result['episode_return'] == pytest.approx(np.mean(expected[:3]))
    assert result['episode_steps'] == pytest.approx(np.mean(expected[:3]))


class NoopLogits(torch.nn.Module):
    """An Atari policy whose most likely action is always NOOP (action 0): a greedy policy that never fires."""

    def forward(self, observation):
        logits = torch.zeros(observation.shape[0], 4)
        logits[:, 0] = 1.0
        return types.SimpleNamespace(logits=logits)


@pytest.mark.slow
@pytest.mark.parametrize('use_python_wrappers', [False, True])  # training's evaluation env, eval_agent's
def test_greedy_evaluation_of_breakout_ends_whole_games(tmp_path, use_python_wrappers):
    """A greedy policy that never presses FIRE still ends Breakout games (the environment fires after a lost life),
    so the evaluation scores whole games instead of nan."""
    flags = {'environment_name': 'Breakout', 'environment_kind': 'atari', 'seed': 1}
    experiment = Experiment(settings(tmp_path, environment_name='Breakout', num_eval_steps=200, flags=flags), ATARI_ENV).begin()
    env = gym_env.create_atari_vector_env('Breakout', 1, seed=main_loop.EVAL_SEED_OFFSET, use_python_wrappers=use_python_wrappers)
    try:
        result = experiment.evaluate(PolicyGreedyActor(NoopLogits()), env)
    finally:
        env.close()
        experiment.close()
    assert result['num_episodes'] >= 1
    assert result['episode_return'] == 0.0  # a ball that is never hit scores nothing
    assert 100 < result['episode_steps'] < 200


def test_screenshot_of_atari_frame_stack_is_logged(tmp_path):
    experiment = Experiment(settings(tmp_path, debug_screenshots_interval=5, use_tensorboard=True), ATARI_ENV).begin()
    written = []
    experiment.train_logger.write_screenshot = lambda env_steps, image: written.append((env_steps, image.shape))
    frames = np.zeros((1, 4, 84, 84), np.uint8)
    for _ in range(6):
        experiment.record_train_step(2, [], frames)
    experiment.close()
    assert written == [(6, (4, 84, 84)), (12, (4, 84, 84))]


def test_screenshot_interval_with_vector_observations_is_refused(tmp_path):
    with pytest.raises(ValueError, match='--debug_screenshots_interval needs image observations'):
        Experiment(settings(tmp_path, debug_screenshots_interval=5, use_tensorboard=True), VECTOR_ENV)


def test_progress_with_nothing_left_to_train(tmp_path):
    experiment = Experiment(settings(tmp_path, num_train_steps=0, num_iterations=1, progress=True), VECTOR_ENV).begin()
    assert list(experiment.iterations) == [0]
    experiment.close()


@pytest.mark.slow
@pytest.mark.parametrize('render', [False, True])
def test_create_environment_plays_sticky_actions_when_the_flag_asks(render):
    from deep_rl_zoo.dqn import settings as dqn_settings

    def trajectory(action, probability):
        sticky = dqn_settings.ATARI.replace(repeat_action_probability=probability, max_noop_actions=0)
        with main_loop.create_environment(sticky, 1, 3, render=render) as env:
            env.reset()
            return np.stack([env.step(np.array([action])).observation for _ in range(40)])

    np.testing.assert_array_equal(trajectory(2, 1.0), trajectory(0, 1.0))  # every frame repeats the reset's NOOP
    assert not np.array_equal(trajectory(2, 0.0), trajectory(0, 0.0))


def test_create_environment_refuses_unknown_kind_and_non_square_frames():
    from deep_rl_zoo.dqn import settings as dqn_settings

    with pytest.raises(ValueError, match=r"classic.*atari.*continuous.*'board'|'board'.*classic.*atari.*continuous"):
        main_loop.create_environment(dqn_settings.CLASSIC.replace(environment_kind='board'), 1, 0)
    with pytest.raises(ValueError, match='--environment_height and --environment_width must be equal'):
        main_loop.create_environment(dqn_settings.ATARI.replace(environment_height=84, environment_width=80), 1, 0)


@pytest.mark.slow
def test_create_environment_counts_montezumas_rooms_when_asked():
    from deep_rl_zoo.dqn import settings as dqn_settings

    atari = dqn_settings.ATARI.replace(max_noop_actions=0, max_episode_frames=1000, clip_reward=False)
    counting = main_loop.create_environment(atari.replace(environment_name='MontezumaRevenge'), 2, 0, count_rooms=True)
    counting.reset()
    counting.step(np.zeros(2, np.int64))
    assert isinstance(counting, gym_env.RoomCounter) and counting.take_counts().shape == (1, 2)
    counting.close()
    for name, count_rooms in (('MontezumaRevenge', False), ('Pong', True)):  # not asked, or another game: the C++ vector env
        env = main_loop.create_environment(atari.replace(environment_name=name), 2, 0, count_rooms=count_rooms)
        assert not isinstance(env, gym_env.RoomCounter)
        env.close()


# ------------------------------------------------------------------------------ run_actors_and_learner

TWO_ACTORS = ActorsAndLearner(num_actors=2)  # local processes on the CPU


class _ActorDeliveringInReverse:
    """Writes its id into the buffer. Actor 0 fills its buffer only once actor 1 has filled its own this round and
    sleeps waiting for the next parameters (its rollout sent), so actor 1's always arrives first however fast either
    runs. `rounds` and `pids`: shared arrays of the rollouts each actor made and of their pids."""

    def __init__(self, actor_id, rounds, pids):
        self.actor_id, self.rounds, self.pids = actor_id, rounds, pids
        self.network = torch.nn.Linear(1, 1)
        pids[actor_id] = os.getpid()

    def collect(self, buffer):
        if self.actor_id == 0:
            while self.rounds[1] <= self.rounds[0]:
                time.sleep(0.01)
            wait_until_asleep(self.pids[1])
        buffer['actor'].fill_(self.actor_id)
        self.rounds[self.actor_id] += 1
        return []


class _OrderRecordingLearner:
    agent_name = 'DQN'

    def __init__(self):
        self.network = torch.nn.Linear(1, 1)
        self.learner_steps = 0
        self.orders = []

    def update(self, buffers):
        self.orders.append([int(buffer['actor'].item()) for buffer in buffers])
        self.learner_steps += 1

    def state_dict(self):
        return {'network': self.network.state_dict()}

    def learner_statistics(self):
        return {}

    def agent_statistics(self):
        return {}


def test_the_learner_gets_the_rollouts_in_actor_order_whatever_order_they_arrive_in(tmp_path):
    """A learner with a replay keeps one stream per actor environment: buffer i must always be actor i's."""
    spec = {'observation': ((1, 1, 4), torch.float32), 'reward': ((1, 1), torch.float32), 'actor': ((1,), torch.int64)}
    experiment = Experiment(settings(tmp_path, num_iterations=1, num_train_steps=6, num_eval_steps=0), VECTOR_ENV)
    learner = _OrderRecordingLearner()
    eval_env = types.SimpleNamespace(close=lambda: None)
    rounds, pids = multiprocessing.get_context('fork').Array('i', 2), multiprocessing.get_context('fork').Array('i', 2)
    main_loop.run_actors_and_learner(
        experiment, learner, lambda actor_id, device: _ActorDeliveringInReverse(actor_id, rounds, pids), spec, TWO_ACTORS, AlwaysLeft(), eval_env
    )
    assert learner.orders == [[0, 1], [0, 1], [0, 1]]  # 6 steps: 3 updates of one step from each of 2 actors


def _actor_that_cannot_be_built(actor_id, device):
    raise OSError(f'no environment for actor {actor_id} (fake)')


def test_an_actor_that_cannot_be_built_ends_the_run_before_the_experiment_writes_anything(tmp_path):
    """The local pool's `start` waits for every actor to be built (as Ray's does), so the run stops before
    `Experiment.begin`: no config, log, checkpoint, results row or TensorBoard folder, and no actor left running."""
    spec = {'observation': ((1, 1, 4), torch.float32), 'reward': ((1, 1), torch.float32), 'actor': ((1,), torch.int64)}
    experiment = Experiment(settings(tmp_path, num_iterations=1, num_train_steps=6, num_eval_steps=0, experiment_dir=str(tmp_path / 'exp')), VECTOR_ENV)
    with pytest.raises(distributed.ActorCrashError, match=r'^actor [01] could not be built: OSError: no environment for actor [01] \(fake\)'):
        main_loop.run_actors_and_learner(
            experiment, _OrderRecordingLearner(), _actor_that_cannot_be_built, spec, TWO_ACTORS, AlwaysLeft(), types.SimpleNamespace(close=lambda: None)
        )  # fmt: skip
    assert snapshot(tmp_path) == {}
    assert not multiprocessing.active_children()


class _ActorReportingItsParameter:
    """Writes its network's weight (set by the learner to its update count) into the buffer, quickly."""

    def __init__(self, actor_id, pids):
        self.network = torch.nn.Linear(1, 1, bias=False)
        pids[actor_id] = os.getpid()

    def collect(self, buffer):
        time.sleep(0.01)
        buffer['made_by'].fill_(self.network.weight.item())
        return []


class _SlowLearner(_OrderRecordingLearner):
    """Sets its weight to its update count, so a rollout made by version v (published after v - 1 updates) holds
    v - 1; records, for every rollout it trains on, how many updates old its parameters were. With `actor_pids`, each
    update lasts until every actor has filled all its free buffers and sleeps waiting for one: the slowest learner."""

    def __init__(self, seconds_per_update, actor_pids=None):
        super().__init__()
        self.network = torch.nn.Linear(1, 1, bias=False)
        torch.nn.init.zeros_(self.network.weight)
        self.seconds_per_update = seconds_per_update
        self.actor_pids = actor_pids
        self.lags = []

    def update(self, buffers):
        self.lags += [self.learner_steps - int(buffer['made_by'].item()) for buffer in buffers]
        time.sleep(self.seconds_per_update)
        for pid in self.actor_pids or ():
            wait_until_asleep(pid)
        self.learner_steps += 1
        torch.nn.init.constant_(self.network.weight, float(self.learner_steps))


def run_asynchronous(tmp_path, learner, max_policy_lag, batch_rollouts=1, num_train_steps=60, actor_pids=None):
    spec = {'observation': ((1, 1, 4), torch.float32), 'reward': ((1, 1), torch.float32), 'made_by': ((1,), torch.float32)}
    experiment = Experiment(settings(tmp_path, num_iterations=1, num_train_steps=num_train_steps, num_eval_steps=0), VECTOR_ENV)
    logged = {}
    end_iteration = experiment.end_iteration
    experiment.end_iteration = lambda iteration, state, steps, learner_statistics, *rest: (
        logged.update(learner_statistics) or end_iteration(iteration, state, steps, learner_statistics, *rest)
    )
    asynchronous = main_loop.AsyncSettings(num_buffers_per_actor=3, batch_rollouts=batch_rollouts, max_policy_lag=max_policy_lag)
    main_loop.run_actors_and_learner(
        experiment, learner, lambda actor_id, device: _ActorReportingItsParameter(actor_id, actor_pids or [0, 0]), spec, TWO_ACTORS, AlwaysLeft(),
        types.SimpleNamespace(close=lambda: None), asynchronous,
    )  # fmt: skip
    return logged


@pytest.mark.slow
def test_a_slow_asynchronous_learner_drops_and_counts_rollouts_that_lag_too_far(tmp_path):
    actor_pids = multiprocessing.get_context('fork').Array('i', 2)
    learner = _SlowLearner(seconds_per_update=0.0, actor_pids=actor_pids)
    logged = run_asynchronous(tmp_path, learner, max_policy_lag=1, actor_pids=actor_pids)
    assert learner.lags and max(learner.lags) <= 1
    assert logged['dropped_rollouts'] > 0  # 2 actors x 3 buffers of rollouts queue up behind a slow learner
    assert logged['dropped_rollouts'] + len(learner.lags) == 60  # every rollout received is trained on or dropped
    assert logged['dropped_fraction'] == logged['dropped_rollouts'] / 60
    assert logged['version_diff_min'] == min(learner.lags)
    assert logged['version_diff_max'] == max(learner.lags)
    assert logged['version_diff_mean'] == pytest.approx(np.mean(learner.lags))


def test_with_max_policy_lag_zero_every_rollout_trained_on_comes_from_the_current_parameters(tmp_path):
    learner = _SlowLearner(seconds_per_update=0.02)
    logged = run_asynchronous(tmp_path, learner, max_policy_lag=0, batch_rollouts=2)
    assert len(learner.lags) >= 2 and set(learner.lags) == {0}
    assert logged['version_diff_max'] == 0


def test_a_fast_asynchronous_learner_trains_on_batches_in_arrival_order_without_dropping(tmp_path):
    learner = _SlowLearner(seconds_per_update=0.0)
    logged = run_asynchronous(tmp_path, learner, max_policy_lag=100, batch_rollouts=3)
    assert logged['dropped_rollouts'] == 0 and len(learner.lags) == 60 and learner.learner_steps == 20


def test_no_iteration_starts_after_train_for_seconds(tmp_path, capsys, monkeypatch):
    now = [1000.0]  # the experiment's clock, moved by hand: each iteration takes 0.15 s however fast the machine is
    clock = types.ModuleType('time')
    clock.__dict__.update(vars(time), monotonic=lambda: now[0])
    monkeypatch.setattr(experiment_lib, 'time', clock)
    experiment = Experiment(settings(tmp_path, num_iterations=5, train_for_seconds=0.2), VECTOR_ENV).begin()
    started = []
    for iteration in experiment.iterations:
        started.append(iteration)
        now[0] += 0.15
    assert started == [0, 1]  # 0.15 s in, iteration 1 may start; 0.3 s in, iteration 2 may not
    assert 'Stopping after iteration 1: 0 s of training reached the budget of 0 s' in capsys.readouterr().out
    experiment.close()
    unbounded = Experiment(settings(tmp_path, num_iterations=3), VECTOR_ENV).begin()
    assert list(unbounded.iterations) == [0, 1, 2]  # 0: no budget
    unbounded.close()


def test_a_run_that_cannot_be_built_closes_the_environments_it_opened(monkeypatch, tmp_path):
    from deep_rl_zoo.dqn import settings as dqn_settings
    from deep_rl_zoo.ppo import agent as ppo_agent
    from deep_rl_zoo.ppo import settings as ppo_settings

    opened = []
    create = main_loop.create_environment

    def recording_create_environment(*args, **kwargs):
        env = create(*args, **kwargs)
        opened.append(env)
        closed = env.close
        env.close = lambda: (setattr(env, 'was_closed', True), closed())
        return env

    def refuse(*_args, **_kwargs):
        raise ValueError('cannot be built')

    monkeypatch.setattr(main_loop, 'create_environment', recording_create_environment)
    directories = dict(train_dir=str(tmp_path), checkpoint_dir=str(tmp_path / 'checkpoints'), results_csv_path=str(tmp_path / 'results.csv'))
    with pytest.raises(ValueError, match='cannot be built'):
        main_loop.train_value_agent(dqn_settings.CLASSIC.replace(**directories), refuse)
    assert len(opened) == 2 and all(getattr(env, 'was_closed', False) for env in opened)  # training and evaluation envs
    opened.clear()
    with pytest.raises(ValueError, match='cannot be built'):
        main_loop.train_actors_and_learner(ppo_settings.CLASSIC.replace(**directories), ppo_agent.make_network, refuse, ppo_agent.build_actor, ppo_agent.rollout_spec)
    assert len(opened) == 1 and opened[0].was_closed  # the evaluation env the learner is shaped by


def test_the_stopping_note_counts_actors_in_words():
    assert main_loop.stopping_note(1) == 'stopping 1 actor; '
    assert main_loop.stopping_note(16) == 'stopping 16 actors; '
