"""RecurrentActorCritic (IMPALA's LSTM core): shapes, unrolling equals stepping, an episode start resets exactly that
environment (state, previous action and reward), the previous action and clipped reward are inputs, bad input."""

import pytest
import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso
from deep_rl_zoo.networks.policy import RecurrentActorCritic

T, B, OBSERVATION_SIZE, NUM_ACTIONS, CORE = 6, 2, 3, 4, 8


def network(seed=0):
    torch.manual_seed(seed)
    return RecurrentActorCritic(MlpTorso(OBSERVATION_SIZE, (16,), nn.Tanh), NUM_ACTIONS, core_size=CORE)


def inputs(seed=1, num_steps=T):
    generator = torch.Generator().manual_seed(seed)
    observation = torch.randn(num_steps, B, OBSERVATION_SIZE, generator=generator)
    prev_action = torch.randint(NUM_ACTIONS, (num_steps, B), generator=generator)
    prev_reward = torch.randn(num_steps, B, generator=generator)
    episode_start = torch.zeros(num_steps, B, dtype=torch.bool)
    state = (torch.randn(B, CORE, generator=generator), torch.randn(B, CORE, generator=generator))
    return observation, prev_action, prev_reward, episode_start, state


def test_shapes_and_zero_initial_state():
    net = network()
    h, c = net.initial_state(5)
    assert h.shape == c.shape == (5, CORE) and not h.any() and not c.any()
    output = net(*inputs())
    assert output.logits.shape == (T, B, NUM_ACTIONS) and output.value.shape == (T, B)
    assert output.state[0].shape == output.state[1].shape == (B, CORE)
    assert output._fields == ('logits', 'value', 'state')
    assert isinstance(net.core, nn.LSTMCell) and net.core.input_size == 16 + NUM_ACTIONS + 1  # torso, one-hot a, r


def test_the_default_core_has_the_papers_256_units():
    assert RecurrentActorCritic(MlpTorso(OBSERVATION_SIZE, (16,)), NUM_ACTIONS).core.hidden_size == 256


def test_unrolling_a_sequence_equals_stepping_with_the_carried_state():
    net = network()
    observation, prev_action, prev_reward, episode_start, state = inputs()
    episode_start[2, 1] = True
    unrolled = net(observation, prev_action, prev_reward, episode_start, state)
    logits = []
    for t in range(T):
        step = slice(t, t + 1)
        output = net(observation[step], prev_action[step], prev_reward[step], episode_start[step], state)
        logits.append(output.logits)
        state = output.state
    torch.testing.assert_close(torch.cat(logits), unrolled.logits)
    torch.testing.assert_close(state, unrolled.state)


def test_an_episode_start_zeroes_the_state_and_the_previous_action_and_reward_of_that_environment_only():
    """Env 1 starts an episode at step 3: from there its outputs are exactly those of a fresh sequence starting at step
    3 (zero state, no previous action or reward), whatever its carried state and the inputs stored at that step."""
    net = network()
    observation, prev_action, prev_reward, episode_start, state = inputs()
    episode_start[3, 1] = True
    prev_action[3, 1], prev_reward[3, 1] = 3, 0.7  # an episode's first step has none: these must be ignored
    output = net(observation, prev_action, prev_reward, episode_start, state)

    fresh_start = torch.ones(T - 3, B, dtype=torch.bool)
    fresh_start[1:] = False
    fresh_action, fresh_reward = prev_action[3:].clone(), prev_reward[3:].clone()
    fresh_action[0], fresh_reward[0] = 0, 0.0
    fresh = net(observation[3:], fresh_action, fresh_reward, fresh_start, net.initial_state(B))
    # Equal up to float rounding only: a batch of 3 x 2 rows sums in another order than one of 6 x 2.
    close = dict(rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(output.logits[3:, 1], fresh.logits[:, 1], **close)
    torch.testing.assert_close(output.value[3:, 1], fresh.value[:, 1], **close)
    torch.testing.assert_close((output.state[0][1], output.state[1][1]), (fresh.state[0][1], fresh.state[1][1]), **close)
    # Env 0 goes on with its carried state: not a fresh start.
    assert not torch.allclose(output.value[3:, 0], fresh.value[:, 0])

    # Bit for bit: a sequence of the same length with another history before the start (observations, actions,
    # rewards, initial state) gives the very same numbers from the start on.
    other_observation, other_action, other_reward, _, other_state = inputs(seed=2)
    other_observation[3:], other_action[3:], other_reward[3:] = observation[3:], prev_action[3:], prev_reward[3:]
    other_action[3, 1], other_reward[3, 1] = 1, -0.3
    other = net(other_observation, other_action, other_reward, episode_start, other_state)
    assert torch.equal(output.logits[3:, 1], other.logits[3:, 1]) and torch.equal(output.value[3:, 1], other.value[3:, 1])
    assert torch.equal(output.state[0][1], other.state[0][1]) and torch.equal(output.state[1][1], other.state[1][1])
    assert not torch.equal(output.value[:3, 1], other.value[:3, 1])


def test_the_previous_action_and_the_clipped_previous_reward_are_inputs():
    net = network()
    observation, prev_action, prev_reward, episode_start, state = inputs()
    base = net(observation, prev_action, prev_reward, episode_start, state)
    other_action = net(observation, (prev_action + 1) % NUM_ACTIONS, prev_reward, episode_start, state)
    assert not torch.allclose(base.value, other_action.value)
    big, clipped = torch.full((T, B), 5.0), torch.full((T, B), 1.0)
    def value(reward):
        return net(observation, prev_action, reward, episode_start, state).value

    assert torch.equal(value(big), value(clipped))
    assert not torch.allclose(value(clipped * 0.5), value(clipped))


def test_the_heads_start_near_uniform_and_bad_shapes_are_refused():
    net = network()
    output = net(*inputs())
    assert output.logits.abs().max() < 0.1  # policy head gain 0.01
    observation, prev_action, prev_reward, episode_start, state = inputs()
    with pytest.raises(ValueError, match=r'prev_action must have shape \[T, B\]'):
        net(observation, prev_action[0], prev_reward, episode_start, state)
    with pytest.raises(ValueError, match='episode_start must have shape'):
        net(observation, prev_action, prev_reward, episode_start[:-1], state)
    with pytest.raises(ValueError, match='core_size must be >= 1'):
        RecurrentActorCritic(MlpTorso(3, (4,)), 2, core_size=0)
