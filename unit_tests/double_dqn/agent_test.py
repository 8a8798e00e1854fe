"""Double DQN agent, in process: the double Q-learning update of a hand-built batch worked out by hand, and the
agent built from flag values learning on CartPole. Acting, replay and schedules are the shared base's
(`replay_agent.ReplayAgent`), tested in unit_tests/dqn/agent_test.py. The hand-built batch, its worked-out TD
errors and losses, and the linear agent over it are in unit_tests/value_agents.py (Prioritized DQN uses them too)."""

import itertools

import pytest
import torch

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.double_dqn import settings as double_dqn_settings
from deep_rl_zoo.double_dqn.agent import DoubleDqn, build_double_dqn, make_network
from unit_tests.value_agents import (
    CARTPOLE_VALUES,
    HAND_BATCH,
    HAND_LOSSES,
    HAND_TD_ERRORS,
    TARGET_WEIGHT,
    FixedBatchReplay,
    as_batch,
    linear_agent,
)

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
    settings = double_dqn_settings.CLASSIC.replace(**CARTPOLE_VALUES).replace(n_step=2)
    agent = build_double_dqn(make_network(env, settings), env, settings, torch.device('cpu'))
    try:
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'DoubleDQN' and isinstance(agent, DoubleDqn)
    assert type(agent.replay) is replay_lib.UniformReplay and not agent.prioritized
    assert agent.env_steps == 40 and agent.learner_steps > 0
    assert 'loss' in agent.learner_statistics()
