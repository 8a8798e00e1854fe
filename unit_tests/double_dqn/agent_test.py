"""Double DQN agent, in process: the double Q-learning update of a hand-built batch worked out by hand, and the
agent built from flag values learning on CartPole. Acting, replay and schedules are the shared base's
(`replay_agent.ReplayAgent`), tested in unit_tests/dqn/agent_test.py."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import gym_env, main_loop
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.double_dqn.agent import DoubleDqn, build_double_dqn, make_network
from deep_rl_zoo.replay import Transition
from deep_rl_zoo.replay_agent import TransitionBatch
from deep_rl_zoo.schedule import LinearSchedule

# Linear Q(s) = W s, no bias. Online W = [[0.5, 0.2], [0.1, 0.3]], target W- = [[1, 2], [3, -1]].
ONLINE_WEIGHT = [[0.5, 0.2], [0.1, 0.3]]
TARGET_WEIGHT = [[1.0, 2.0], [3.0, -1.0]]
HAND_BATCH = Transition(
    s_tm1=np.array([[1, 0], [0, 1]], np.float32),
    a_tm1=np.array([0, 1], np.int64),
    r_t=np.array([1, -1], np.float32),
    discount_t=np.array([0.9, 0.5], np.float32),
    s_t=np.array([[0, 1], [1, 1]], np.float32),
)
# sample 0: Q(s, 0) = 0.5. At s' = [0, 1] the online net gives [0.2, 0.3] -> action 1, which the target net
#   values at -1 (its values are [2, -1]): target 1 + 0.9 * -1 = 0.1 (DQN's max would give 2.8). td -0.4.
# sample 1: Q(s, 1) = 0.3. At s' = [1, 1] the online net gives [0.7, 0.4] -> action 0, valued 3 by the target
#   net: target -1 + 0.5 * 3 = 0.5. td 0.2.
# Huber (delta 1) of -0.4 and 0.2: 0.08 and 0.02.
HAND_TD_ERRORS = [-0.4, 0.2]
HAND_LOSSES = [0.08, 0.02]


def linear_agent(agent_class, replay, optimizer_lr=0.1, **kwargs):
    """An agent over the hand-built linear networks, learning with plain SGD."""
    network = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        network.weight.copy_(torch.tensor(ONLINE_WEIGHT))
    agent = agent_class(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=optimizer_lr),
        replay=replay,
        exploration_epsilon=LinearSchedule(1.0, 0.1, 10),
        min_replay_size=2,
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=2,
        max_grad_norm=0.0,
        terminal_on_life_loss=False,
        seed=0,
        **kwargs,
    )
    with torch.no_grad():
        agent.target_network.weight.copy_(torch.tensor(TARGET_WEIGHT))
    return agent


def as_batch(transition):
    return TransitionBatch(*(torch.from_numpy(field) for field in transition))


class FixedBatchReplay:
    """Uniform replay stand-in that returns one hand-built batch."""

    def __init__(self, batch):
        self.batch = batch
        self.size = len(batch.r_t)

    def sample(self, batch_size):
        assert batch_size == self.size
        return self.batch


def test_losses_of_hand_built_batch_use_the_online_argmax_and_the_target_value():
    agent = linear_agent(DoubleDqn, FixedBatchReplay(HAND_BATCH))
    loss, priorities = agent.losses(as_batch(HAND_BATCH))
    torch.testing.assert_close(loss, torch.tensor(HAND_LOSSES))
    torch.testing.assert_close(priorities, torch.tensor(HAND_TD_ERRORS).abs())
    assert loss.requires_grad and not priorities.requires_grad


def test_update_of_hand_built_batch_matches_hand_math():
    """Mean loss 0.05. d loss / d Q(s, a) = -td / B = 0.2 and -0.1, so dW[0, 0] = 0.2 and dW[1, 1] = -0.1 (the
    online net's choice of the next action takes no gradient); W <- W - 0.1 dW = [[0.48, 0.2], [0.1, 0.31]]."""
    agent = linear_agent(DoubleDqn, FixedBatchReplay(HAND_BATCH))
    agent.learn()
    torch.testing.assert_close(agent.online_network.weight.detach(), torch.tensor([[0.48, 0.2], [0.1, 0.31]]))
    torch.testing.assert_close(agent.target_network.weight.detach(), torch.tensor(TARGET_WEIGHT))
    assert agent.learner_statistics()['loss'] == pytest.approx(0.05, abs=1e-6)


def test_agent_from_flag_values_learns_on_cartpole():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    values = {
        'replay_capacity': 300,
        'n_step': 2,
        'discount': 0.99,
        'compress_replay': False,
        'seed': 0,
        'learning_rate': 1e-3,
        'adam_eps': 1e-8,
        'exploration_epsilon_begin_value': 1.0,
        'exploration_epsilon_end_value': 0.0,
        'exploration_epsilon_decay_step': 30,
        'min_replay_size': 16,
        'learn_interval': 2,
        'target_network_update_interval': 5,
        'batch_size': 8,
        'max_grad_norm': 10.0,
    }
    agent = build_double_dqn(make_network(env, values), env, values, torch.device('cpu'))
    try:
        for _ in itertools.islice(main_loop.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'DoubleDQN' and isinstance(agent, DoubleDqn)
    assert type(agent.replay) is replay_lib.UniformReplay and not agent.prioritized
    assert agent.env_steps == 40 and agent.learner_steps > 0
    assert 'loss' in agent.learner_statistics()
