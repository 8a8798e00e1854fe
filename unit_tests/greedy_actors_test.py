"""Evaluation actors: epsilon-greedy over Q values, the mode / clipped mean of a policy, and the mode of a recurrent
policy carrying its core state."""

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.greedy_actors import (
    EpsilonGreedyActor, PolicyGreedyActor, RecurrentPolicyGreedyActor, SteppedRecurrentGreedyActor, as_tensor, epsilon_greedy,
)
from deep_rl_zoo.gym_env import VectorStep
from deep_rl_zoo.networks.common import MlpTorso
from deep_rl_zoo.networks.policy import RecurrentActorCritic
from deep_rl_zoo.networks.sample_factory import PolicySet, SampleFactoryActorCritic


class FixedQ(nn.Module):
    """Q(s, .) = s: the observation row is the vector of Q values."""

    def forward(self, observation):
        return observation.float()


class Logits(NamedTuple):
    logits: torch.Tensor
    value: torch.Tensor


class Mean(NamedTuple):
    mean: torch.Tensor
    log_std: torch.Tensor
    value: torch.Tensor


class FixedPolicy(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, observation):
        observation = observation.float()
        value = torch.zeros(observation.shape[0])
        if self.kind == 'categorical':
            return Logits(observation, value)
        return Mean(observation, torch.zeros_like(observation), value)


Q_VALUES = np.array([[0.1, 0.9, 0.3, -1.0], [5.0, 1.0, 2.0, 4.0], [-3.0, -2.0, -1.0, -1.5]], np.float32)


def test_as_tensor_shares_memory_on_cpu():
    array = np.arange(6, dtype=np.float32)
    tensor = as_tensor(array, torch.device('cpu'))
    array[0] = 42.0
    assert tensor[0].item() == 42.0


def test_epsilon_zero_is_argmax():
    actor = EpsilonGreedyActor(FixedQ(), epsilon=0.0, seed=3)
    for _ in range(20):
        actions = actor.act(Q_VALUES)
        np.testing.assert_array_equal(actions, [1, 0, 2])
    assert actions.dtype.kind == 'i'


def test_epsilon_one_is_uniform_and_seeded():
    observation = np.tile(Q_VALUES[:1], (4000, 1))  # argmax is always action 1
    actions = EpsilonGreedyActor(FixedQ(), epsilon=1.0, seed=7).act(observation)
    counts = np.bincount(actions, minlength=4)
    # Uniform over 4 actions: 1000 each, standard deviation about 27; a bias to the argmax would show.
    assert counts.sum() == 4000
    assert np.all(np.abs(counts - 1000) < 120), counts
    same_seed = EpsilonGreedyActor(FixedQ(), epsilon=1.0, seed=7).act(observation)
    np.testing.assert_array_equal(actions, same_seed)
    other_seed = EpsilonGreedyActor(FixedQ(), epsilon=1.0, seed=8).act(observation)
    assert not np.array_equal(actions, other_seed)


def test_small_epsilon_explores_at_about_its_rate():
    observation = np.tile(Q_VALUES[:1], (20_000, 1))
    actions = epsilon_greedy(FixedQ(), observation, 0.2, np.random.default_rng(0), torch.device('cpu'))
    # Non-greedy actions: epsilon * 3/4 = 15% (a random draw can also pick the greedy action).
    assert abs(np.mean(actions != 1) - 0.15) < 0.01


def test_epsilon_greedy_actor_ignores_observe():
    actor = EpsilonGreedyActor(FixedQ(), epsilon=0.0)
    assert actor.observe(np.zeros(3), None) is None
    np.testing.assert_array_equal(actor.act(Q_VALUES), [1, 0, 2])


def test_policy_greedy_actor_plays_the_mode_of_categorical_policy():
    actor = PolicyGreedyActor(FixedPolicy('categorical'))
    actions = actor.act(Q_VALUES)
    np.testing.assert_array_equal(actions, [1, 0, 2])
    assert actions.dtype.kind == 'i'


def test_policy_greedy_actor_plays_the_clipped_mean_of_gaussian_policy():
    low, high = np.array([-1.0, 0.0], np.float32), np.array([1.0, 0.5], np.float32)
    actor = PolicyGreedyActor(FixedPolicy('gaussian'), torch.device('cpu'), low, high)
    means = np.array([[0.3, 0.2], [-4.0, 9.0], [2.0, -0.1]], np.float32)
    np.testing.assert_array_equal(actor.act(means), np.array([[0.3, 0.2], [-1.0, 0.5], [1.0, 0.0]], np.float32))


def vector_step(observation, reward, terminated):
    false = np.zeros(len(observation), bool)
    return VectorStep(observation, reward, reward, terminated, false, false, observation)


def test_recurrent_policy_greedy_actor_carries_the_core_state_and_restarts_it_at_episode_ends_and_reset():
    """Three steps of two environments, env 1's episode ending at the first: the actor plays the mode of the network
    unrolled over the same observations with the previous actions and rewards, and restarts from zeros on reset()."""
    torch.manual_seed(0)
    network = RecurrentActorCritic(MlpTorso(3, (8,), nn.Tanh), 4, core_size=6)
    with torch.no_grad():  # larger logits, so the modes differ from step to step
        network.policy_head.weight.mul_(300.0)
    observations = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    rewards = np.array([[0.5, -2.0], [1.0, 0.0], [0.0, 3.0]], np.float32)
    ends = np.array([[False, True], [False, False], [False, False]])
    actor = RecurrentPolicyGreedyActor(network)
    actor.reset()
    played = []
    for t in range(3):
        played.append(actor.act(observations[t]))
        actor.observe(played[-1], vector_step(observations[t + 1], rewards[t], ends[t]))
    played = np.stack(played)

    prev_action = torch.zeros(3, 2, dtype=torch.int64)
    prev_action[1:] = torch.from_numpy(played[:-1])
    prev_reward = torch.zeros(3, 2)
    prev_reward[1:] = torch.from_numpy(rewards[:-1])
    start = torch.zeros(3, 2, dtype=torch.bool)
    start[0] = True
    start[1:] = torch.from_numpy(ends[:-1])
    prev_action[start], prev_reward[start] = 0, 0.0
    with torch.no_grad():
        expected = network(torch.from_numpy(observations[:3]), prev_action, prev_reward, start, network.initial_state(2))
    np.testing.assert_array_equal(played, expected.logits.argmax(-1).numpy())
    torch.testing.assert_close(actor.state, expected.state)
    assert len(set(played[:, 0].tolist())) > 1 or len(set(played[:, 1].tolist())) > 1

    actor.reset()  # the environments restart: the first step again from zeros
    again = actor.act(observations[0])
    np.testing.assert_array_equal(again, played[0])
    with torch.no_grad():
        no_action, no_reward, start = torch.zeros(1, 2, dtype=torch.int64), torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool)
        first = network(torch.from_numpy(observations[:1]), no_action, no_reward, start, network.initial_state(2))
    torch.testing.assert_close(actor.state, first.state)


def test_stepped_recurrent_greedy_actor_zeroes_the_state_where_episodes_end_and_on_reset():
    """Sample Factory's recurrent network (`step(observation, state)`), two environments, env 1's episode ending at the
    first of three steps: the actor plays the mode of the core unrolled over the same observations with the state
    zeroed before env 1's second step, and starts from zeros again after reset()."""
    torch.manual_seed(0)
    network = PolicySet([SampleFactoryActorCritic((3,), 4, [8], [8], nonlinearity='tanh', rnn_type='gru', rnn_size=6)])
    with torch.no_grad():  # larger logits, so the modes differ from step to step
        network.policies[0].policy_head.weight.mul_(300.0)
    observations = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    ends = np.array([[False, True], [False, False], [False, False]])
    actor = SteppedRecurrentGreedyActor(network)
    played = []
    for t in range(3):
        played.append(actor.act(observations[t]))
        actor.observe(played[-1], vector_step(observations[t + 1], np.zeros(2, np.float32), ends[t]))
    start = torch.zeros(3, 2, dtype=torch.bool)
    start[1:] = torch.from_numpy(ends[:-1])
    with torch.no_grad():
        expected = network.policies[0].unroll(torch.from_numpy(observations[:3]), network.initial_state(2), start)
    np.testing.assert_array_equal(np.stack(played), expected.logits.argmax(-1).numpy())
    assert len(set(np.stack(played).flatten().tolist())) > 1
    actor.reset()
    np.testing.assert_array_equal(actor.act(observations[0]), played[0])
