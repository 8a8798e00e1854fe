"""ObscuredObservations (DRQN's flickering screens): blanking statistics, per-environment independence, seeding,
final observations, pass-through, bad input, and main_loop.create_environment applying it from the flag."""

import numpy as np
import pytest

from deep_rl_zoo import gym_env, main_loop
from deep_rl_zoo.double_dqn import settings as double_dqn_settings
from deep_rl_zoo.drqn import settings as drqn_settings
from deep_rl_zoo.gym_env import ObscuredObservations, VectorStep


class CountingEnv:
    """A fake vector env whose observations are never zero: step k shows k % 100 + 1 everywhere, final observations
    200; episodes end every 3 steps."""

    num_envs = 4
    single_observation_space = 'space'
    single_action_space = 'actions'
    frames_per_step = 4

    def __init__(self):
        self.steps = 0
        self.closed = False

    def reset(self):
        return np.ones((self.num_envs, 2, 2), np.uint8)

    def step(self, actions):
        self.steps += 1
        observation = np.full((self.num_envs, 2, 2), self.steps % 100 + 1, np.uint8)
        ended = np.full(self.num_envs, self.steps % 3 == 0)
        final = np.where(ended[:, None, None], 200, observation).astype(np.uint8)
        zeros = np.zeros(self.num_envs, np.float32)
        return VectorStep(observation, zeros, zeros, ended, np.zeros(self.num_envs, bool), np.zeros(self.num_envs, bool), final)

    def render(self):
        return 'frame'

    def close(self):
        self.closed = True


def blanked(observation):
    """[N] bool: which rows are all zeros."""
    return ~observation.reshape(len(observation), -1).any(axis=1)


def test_each_observation_is_blanked_with_the_probability_independently_per_env():
    env = ObscuredObservations(CountingEnv(), 0.5, seed=0)
    rows = np.array([blanked(env.step(np.zeros(4)).observation) for _ in range(2500)])  # 10,000 draws
    assert abs(rows.mean() - 0.5) < 0.02  # 4 binomial standard deviations
    assert 0.45 < rows.mean(axis=0).min() and rows.mean(axis=0).max() < 0.55  # every env flickers alike...
    both = (rows[:, 0] & rows[:, 1]).mean()
    assert abs(both - 0.25) < 0.03  # ...and independently of the others


def test_shown_observations_are_unchanged_and_probability_zero_or_one():
    env = ObscuredObservations(CountingEnv(), 0.3, seed=1)
    for k in range(1, 20):
        observation = env.step(np.zeros(4)).observation
        shown = ~blanked(observation)
        assert (observation[shown] == k + 1).all()
    never, always = ObscuredObservations(CountingEnv(), 0.0, seed=0), ObscuredObservations(CountingEnv(), 1.0, seed=0)
    assert not blanked(never.reset()).any() and blanked(always.reset()).all()
    for _ in range(5):
        assert not blanked(never.step(np.zeros(4)).observation).any()
        step = always.step(np.zeros(4))
        assert blanked(step.observation).all() and blanked(step.final_observation).all()


def test_final_observations_are_drawn_on_their_own_where_an_episode_ended():
    env = ObscuredObservations(CountingEnv(), 0.5, seed=2)
    finals, mismatches = [], 0
    for _ in range(300):
        step = env.step(np.zeros(4))
        if step.terminated.any():
            finals.append(blanked(step.final_observation))
            assert set(np.unique(step.final_observation[~blanked(step.final_observation)])) <= {200}
            mismatches += int(np.sum(blanked(step.final_observation) != blanked(step.observation)))
        else:
            assert step.final_observation is step.observation  # no copy on ordinary steps
    assert abs(np.mean(finals) - 0.5) < 0.1
    assert mismatches > 0  # not the same draw as the next episode's first observation


def test_same_seed_same_flicker_other_seed_other_flicker():
    def pattern(seed):
        env = ObscuredObservations(CountingEnv(), 0.5, seed)
        return np.array([blanked(env.reset())] + [blanked(env.step(np.zeros(4)).observation) for _ in range(50)])

    np.testing.assert_array_equal(pattern(7), pattern(7))
    assert not np.array_equal(pattern(7), pattern(8))


def test_everything_else_passes_through():
    inner = CountingEnv()
    with ObscuredObservations(inner, 0.5, seed=0) as env:
        assert (env.num_envs, env.single_observation_space, env.single_action_space, env.frames_per_step) == (4, 'space', 'actions', 4)
        assert env.render() == 'frame'
        step = env.step(np.zeros(4))
        assert step.observation.dtype == np.uint8 and step.observation.shape == (4, 2, 2)
    assert inner.closed


def test_bad_probability_is_refused():
    with pytest.raises(ValueError, match=r'--obscure_probability must be in \[0, 1\], got 1.5'):
        ObscuredObservations(CountingEnv(), 1.5, seed=0)


@pytest.mark.parametrize('probability', [0.0, 0.5])
def test_create_environment_obscures_when_the_flag_asks(probability):
    env = main_loop.create_environment(drqn_settings.CLASSIC.replace(environment_name='CartPole-v1', obscure_probability=probability), 2, seed=3)
    plain = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=3)
    try:
        assert isinstance(env, ObscuredObservations) == (probability > 0)
        observation, reference = env.reset(), plain.reset()
        rows = []
        for _ in range(40):
            shown = ~blanked(observation)
            np.testing.assert_array_equal(observation[shown], reference[shown])  # same seeded environments underneath
            rows.append(~shown)
            actions = np.array([0, 1])
            observation, reference = env.step(actions).observation, plain.step(actions).observation
        assert np.mean(rows) == pytest.approx(probability, abs=0.2)
    finally:
        env.close()
        plain.close()


def test_create_environment_shows_every_observation_to_agents_without_the_setting():
    env = main_loop.create_environment(double_dqn_settings.CLASSIC, 2, seed=3)
    try:
        assert not isinstance(env, ObscuredObservations)
    finally:
        env.close()
