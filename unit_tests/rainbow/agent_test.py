"""Rainbow agent, in process: double-Q categorical update of a hand-built batch worked out by hand, prioritized
replay and noisy acting on CartPole, the networks of make_network."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import gym_env, main_loop, replay
from deep_rl_zoo.networks.value import NoisyLinear, RainbowQNetwork
from deep_rl_zoo.rainbow.agent import Rainbow, build_rainbow, make_network
from unit_tests.value_agents import BATCH, C51_CARTPOLE_VALUES as CARTPOLE_VALUES, table_agent

RAINBOW_VALUES = {
    **CARTPOLE_VALUES,
    'n_step': 3,
    'exploration_epsilon_begin_value': 0.0,
    'exploration_epsilon_end_value': 0.0,
    'priority_exponent': 0.5,
    'priority_eps': 1e-6,
    'importance_sampling_exponent_begin_value': 0.4,
    'importance_sampling_exponent_end_value': 1.0,
    'importance_sampling_exponent_decay_step': 100,
    'noisy_sigma': 0.5,
}


def test_losses_of_hand_built_batch_select_with_online_and_evaluate_with_target():
    loss, priorities = table_agent(Rainbow).losses(BATCH)
    # Row 0: at state 2 the online Q-values are [1.4, 0.6], so the online network picks action 0 where the target
    # network's own argmax would be 1 (its Q-values are [0.6, 1.4]); the target's distribution of action 0, [0.6, 0.2, 0.2],
    # on atoms [0.5, 1, 1.5] projects to [0.3, 0.6, 0.1]: cross-entropy with [0.5, 0.25, 0.25] is 1.7 ln 2.
    # Row 1 is terminal: ln 2 as for C51.
    ln2 = math.log(2.0)
    assert_close(loss, torch.tensor([1.7 * ln2, ln2]))
    entropy_0 = -(0.3 * math.log(0.3) + 0.6 * math.log(0.6) + 0.1 * math.log(0.1))
    assert_close(priorities, torch.tensor([1.7 * ln2 - entropy_0, ln2]))


def run_on_cartpole(num_steps, values=RAINBOW_VALUES):
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        torch.manual_seed(0)
        agent = build_rainbow(make_network(env, values), env, values, torch.device('cpu'))
        for _ in itertools.islice(main_loop.run_env_loop(agent, env), num_steps):
            pass
    finally:
        env.close()
    return agent


def test_rainbow_learns_from_prioritized_n_step_replay():
    agent = run_on_cartpole(40)
    assert isinstance(agent.replay, replay.PrioritizedReplay) and agent.prioritized
    # 3-step transitions: slot t is sampleable once step t + 3 is in; 16 of them after 19 steps.
    assert agent.env_steps == 40 and agent.learner_steps == 40 - 19 + 1
    # Priorities came back from the updates: the largest one given so far is the KL of some transition, not 1.
    assert agent.replay.max_priority != 1.0
    statistics = agent.agent_statistics()
    assert statistics['exploration_epsilon'] == 0.0
    assert statistics['importance_sampling_exponent'] == 0.4 + 0.6 * 40 / 100
    # Mean |sigma| starts at 0.5 / sqrt(fan in) for every noisy weight and moves as sigma learns.
    assert statistics['noisy_weight_sigma'] > 0 and statistics['noisy_weight_sigma'] != pytest.approx(0.5 / math.sqrt(128), abs=1e-9)
    assert np.isfinite(agent.learner_statistics()['loss'])


def test_rainbow_explores_only_with_its_noise():
    values = {**RAINBOW_VALUES, 'noisy_sigma': 5.0, 'min_replay_size': 10**6}  # loud noise, no learning
    agent = run_on_cartpole(1, values)
    assert agent.epsilon == 0.0
    observation = np.zeros((1, 4), np.float32)
    actions = {int(agent.act(observation)[0]) for _ in range(50)}
    assert actions == {0, 1}  # the same observation gets both actions: the noise explores
    quiet = run_on_cartpole(1, {**values, 'noisy_sigma': 0.0})
    assert len({int(quiet.act(observation)[0]) for _ in range(20)}) == 1  # no noise, no epsilon: always greedy


def test_make_network_classic_and_atari():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        network = make_network(env, RAINBOW_VALUES)
    finally:
        env.close()
    assert isinstance(network, RainbowQNetwork) and network.logits(torch.zeros(3, 4)).shape == (3, 2, 11)
    assert network.value_stream[0].weight_sigma[0, 0].item() == pytest.approx(0.5 / math.sqrt(128))  # sigma_0 / sqrt(p)
    atari = gym_env.create_vector_env('atari', 'Pong', 1, 0, frame_skip=4, frame_stack=4, frame_size=84)
    try:
        network = make_network(atari, {**RAINBOW_VALUES, 'num_atoms': 51})
    finally:
        atari.close()
    assert tuple(network.advantage_stream[2].weight_mu.shape) == (6 * 51, 512)
    assert sum(isinstance(module, NoisyLinear) for module in network.modules()) == 4
