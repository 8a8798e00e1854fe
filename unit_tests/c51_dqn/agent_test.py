"""C51 agent, in process: the update of a hand-built batch worked out by hand, learning and target refreshes on
CartPole, the networks of make_network, and the --v_min/--v_max check."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo.c51_dqn import settings as c51_settings
from deep_rl_zoo.c51_dqn.agent import C51, build_c51, make_network
from deep_rl_zoo.networks.value import CategoricalQNetwork
from unit_tests import value_agents
from unit_tests.value_agents import BATCH, C51_CARTPOLE_VALUES, table_agent

CARTPOLE = c51_settings.CLASSIC.replace(**C51_CARTPOLE_VALUES)

def test_losses_of_hand_built_batch_use_the_target_network_argmax():
    loss, priorities = table_agent(C51).losses(BATCH)
    # Row 0: the target network's greedy action at state 2 is 1 (Q 1.4 > 0.6): atoms 0.5 + 0.5 [0, 1, 2] with
    # probs [0.2, 0.2, 0.6] project to [0.1, 0.6, 0.3]; the online distribution of action 0 at state 0 is
    # [0.5, 0.25, 0.25]: cross-entropy -(0.1 ln 0.5 + 0.9 ln 0.25) = 1.9 ln 2.
    # Row 1: terminal with r = 3, clipped to 2: target [0, 0, 1]; -ln 0.5 = ln 2.
    ln2 = math.log(2.0)
    assert_close(loss, torch.tensor([1.9 * ln2, ln2]))
    entropy_0 = -(0.1 * math.log(0.1) + 0.6 * math.log(0.6) + 0.3 * math.log(0.3))
    assert_close(priorities, torch.tensor([1.9 * ln2 - entropy_0, ln2]))  # the KL divergence
    assert loss.requires_grad and not priorities.requires_grad


def test_one_sgd_step_on_hand_built_batch_moves_only_the_taken_logits():
    agent = table_agent(C51)
    agent.replay = value_agents.FixedBatchReplay(BATCH)
    before = agent.online_network.table.detach().clone()
    agent.learn()
    # Mean over the batch of 2: gradient (softmax - target) / 2 on the logits of the taken action only.
    expected = before.clone()
    expected[0, 0] -= 0.1 * torch.tensor([0.5 - 0.1, 0.25 - 0.6, 0.25 - 0.3]) / 2
    expected[1, 1] -= 0.1 * torch.tensor([0.25, 0.25, 0.5 - 1.0]) / 2
    assert_close(agent.online_network.table.detach(), expected)
    assert agent.learner_steps == 1
    assert_close(agent.learner_statistics()['loss'], 1.45 * math.log(2.0))




def test_c51_learns_on_cartpole_and_refreshes_its_target():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    try:
        network = make_network(env, CARTPOLE)
        agent = build_c51(network, env, CARTPOLE, torch.device('cpu'))
        initial = [p.detach().clone() for p in agent.online_network.parameters()]
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    # Two streams hold 16 sampleable slots after 9 loop steps; then one update per loop step (of 2 env steps).
    assert agent.env_steps == 40 and agent.learner_steps == 20 - 9 + 1
    assert not any(torch.equal(a, b) for a, b in zip(initial, agent.online_network.parameters()))
    assert not any(torch.equal(a, b) for a, b in zip(initial, agent.target_network.parameters()))  # refreshed at 5, 10
    assert torch.equal(agent.target_network.support, torch.linspace(0, 100, 11))
    assert np.isfinite(agent.learner_statistics()['loss'])


def test_make_network_classic_and_atari():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        network = make_network(env, CARTPOLE)
    finally:
        env.close()
    assert isinstance(network, CategoricalQNetwork) and network.logits(torch.zeros(3, 4)).shape == (3, 2, 11)
    atari = gym_env.create_vector_env('atari', 'Pong', 1, 0, frame_skip=4, frame_stack=4, frame_size=84)
    try:
        network = make_network(atari, CARTPOLE.replace(num_atoms=51, v_min=-10.0, v_max=10.0))
    finally:
        atari.close()
    assert tuple(network.head.weight.shape) == (6 * 51, 512)


@pytest.mark.parametrize('v_min, v_max', [(10.0, 10.0), (5.0, -5.0)])
def test_v_min_must_be_below_v_max(v_min, v_max):
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        with pytest.raises(ValueError, match=rf'--v_min \({v_min}\) must be below --v_max \({v_max}\)'):
            make_network(env, CARTPOLE.replace(v_min=v_min, v_max=v_max))
    finally:
        env.close()
