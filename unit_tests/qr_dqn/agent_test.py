"""QR-DQN agent: its loss of a hand-built batch against a numpy reference (target network, fixed midpoints),
priorities, learning the quantiles of a two-valued reward, and a few steps on CartPole."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import gym_env, main_loop
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.networks.value import QuantileQNetwork, mlp_quantile_q_network
from deep_rl_zoo.qr_dqn.agent import QrDqn, build_qr_dqn, make_network
from deep_rl_zoo.replay import Transition
from deep_rl_zoo.replay_agent import TransitionBatch
from deep_rl_zoo.schedule import LinearSchedule

CARTPOLE_VALUES = {
    'replay_capacity': 300,
    'n_step': 1,
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
    'num_quantiles': 7,
    'huber_param': 1.0,
    'tau_samples_s_tm1': 5,
    'tau_samples_s_t': 6,
    'tau_samples_policy': 4,
    'tau_embed_dim': 8,
}


class FixedBatchReplay:
    """Replay stand-in that returns one hand-built batch."""

    def __init__(self, batch):
        self.batch = batch
        self.size = len(batch.r_t)

    def sample(self, batch_size):
        return self.batch


def numpy_quantile_q_learning(q_tm1, taus, a_tm1, r_t, discount_t, q_t_selector, q_t, kappa):
    """Loops over samples, source and target quantiles: an independent statement of the papers' loss."""
    losses = []
    for b in range(len(r_t)):
        best = np.argmax(q_t_selector[b].mean(axis=0))
        targets = r_t[b] + discount_t[b] * q_t[b, :, best]
        total = 0.0
        for i, tau in enumerate(taus[b]):
            for target in targets:
                u = target - q_tm1[b, i, a_tm1[b]]
                huber = 0.5 * u**2 if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
                penalty = huber / kappa if kappa > 0 else abs(u)
                total += abs(tau - (u < 0)) * penalty / len(targets)
        losses.append(total)
    return np.array(losses)


def make_agent(network, *, huber_param=1.0, replay=None, optimizer=None, batch_size=4):
    replay = replay or replay_lib.UniformReplay(100, (3,), np.float32, discount=0.9, seed=0)
    return QrDqn(
        network=network,
        optimizer=optimizer or torch.optim.Adam(network.parameters(), lr=1e-2),
        replay=replay,
        exploration_epsilon=LinearSchedule(1.0, 0.1, 10),
        min_replay_size=batch_size,
        learn_interval=1,
        target_network_update_interval=1000,
        batch_size=batch_size,
        max_grad_norm=10.0,
        terminal_on_life_loss=False,
        seed=0,
        huber_param=huber_param,
    )


def random_batch(batch_size=6, observation_size=3, num_actions=2, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return TransitionBatch(
        s_tm1=torch.randn(batch_size, observation_size, generator=generator),
        a_tm1=torch.randint(num_actions, (batch_size,), generator=generator),
        r_t=torch.randn(batch_size, generator=generator),
        discount_t=torch.tensor([0.9, 0.0, 0.9, 0.9, 0.5, 0.9])[:batch_size],
        s_t=torch.randn(batch_size, observation_size, generator=generator),
    )


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
        network = make_network(env, CARTPOLE_VALUES)
        agent = build_qr_dqn(network, env, CARTPOLE_VALUES, torch.device('cpu'))
        for _ in itertools.islice(main_loop.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'QRDQN' and agent.huber_param == 1.0
    assert isinstance(network, QuantileQNetwork) and network.num_quantiles == 7
    assert network.quantiles(torch.zeros(3, 4)).shape == (3, 7, 2)
    assert agent.env_steps == 40 and agent.learner_steps > 0
    assert np.isfinite(agent.learner_statistics()['loss'])
