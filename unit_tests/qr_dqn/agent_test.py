"""QR-DQN agent: its loss of a hand-built batch against a numpy reference (target network, fixed midpoints),
priorities, learning the quantiles of a two-valued reward, and a few steps on CartPole. The numpy reference and the
stand-ins (shared with IQN) are in unit_tests/value_agents.py."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo.networks.value import QuantileQNetwork, mlp_quantile_q_network
from deep_rl_zoo.qr_dqn import settings as qr_dqn_settings
from deep_rl_zoo.qr_dqn.agent import QrDqn, build_qr_dqn, make_network
from deep_rl_zoo.replay import Transition
from unit_tests import value_agents
from unit_tests.value_agents import FixedBatchReplay, numpy_quantile_q_learning, random_batch

CARTPOLE = qr_dqn_settings.CLASSIC.replace(**value_agents.CARTPOLE_VALUES).replace(num_quantiles=7, huber_param=1.0)


def make_agent(network, **kwargs):
    return value_agents.quantile_agent(QrDqn, network, **kwargs)


@pytest.mark.parametrize('huber_param', [0.0, 1.0])
def test_losses_match_numpy_reference_with_target_network_at_next_state(huber_param):
    torch.manual_seed(0)
    agent = make_agent(mlp_quantile_q_network(3, 2, 5, hidden_sizes=(8,)), huber_param=huber_param)
    torch.manual_seed(1)
    agent.target_network.load_state_dict(mlp_quantile_q_network(3, 2, 5, hidden_sizes=(8,)).state_dict())
    batch = random_batch()
    loss, priorities = agent.losses(batch)

    with torch.no_grad():
        q_tm1 = agent.online_network.quantiles(batch.s_tm1).numpy()
        q_t = agent.target_network.quantiles(batch.s_t).numpy()
        online_q_t = agent.online_network.quantiles(batch.s_t).numpy()
    taus = np.tile([0.1, 0.3, 0.5, 0.7, 0.9], (6, 1))
    args = (batch.a_tm1.numpy(), batch.r_t.numpy(), batch.discount_t.numpy())
    expected = numpy_quantile_q_learning(q_tm1, taus, *args, q_t, q_t, huber_param)
    np.testing.assert_allclose(loss.detach().numpy(), expected, rtol=1e-5)
    assert not np.allclose(expected, numpy_quantile_q_learning(q_tm1, taus, *args, online_q_t, online_q_t, huber_param))
    assert loss.requires_grad and not priorities.requires_grad
    torch.testing.assert_close(priorities, loss.detach())


def test_learns_the_quantiles_of_a_two_valued_reward():
    """One state, one action, no bootstrap, rewards 0 and 1 equally often: with kappa 0 the tau = .25 quantile
    is 0 and the tau = .75 quantile is 1; Q is their mean, 0.5."""
    torso = nn.Identity()
    torso.output_size = 1
    network = QuantileQNetwork(torso, num_actions=1, num_quantiles=2)
    batch = Transition(
        s_tm1=np.ones((4, 1), np.float32),
        a_tm1=np.zeros(4, np.int64),
        r_t=np.array([0, 1, 0, 1], np.float32),
        discount_t=np.zeros(4, np.float32),
        s_t=np.ones((4, 1), np.float32),
    )
    agent = make_agent(network, huber_param=0.0, replay=FixedBatchReplay(batch), optimizer=torch.optim.SGD(network.parameters(), lr=0.02))
    for _ in range(300):
        agent.learn()
    with torch.no_grad():
        quantiles = network.quantiles(torch.ones(1, 1))[0, :, 0]
    torch.testing.assert_close(quantiles, torch.tensor([0.0, 1.0]), atol=0.03, rtol=0)
    assert network(torch.ones(1, 1)).item() == pytest.approx(0.5, abs=0.03)


def test_learns_on_cartpole_and_acts_on_mean_quantiles():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    try:
        network = make_network(env, CARTPOLE)
        agent = build_qr_dqn(network, env, CARTPOLE, torch.device('cpu'))
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'QRDQN' and agent.huber_param == 1.0
    assert isinstance(network, QuantileQNetwork) and network.num_quantiles == 7
    assert network.quantiles(torch.zeros(3, 4)).shape == (3, 7, 2)
    assert agent.env_steps == 40 and agent.learner_steps > 0
    assert np.isfinite(agent.learner_statistics()['loss'])
