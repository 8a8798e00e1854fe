"""IQN agent: its loss of a hand-built batch against a numpy reference (fresh taus for s_tm1, s_t and the policy,
a* chosen by the target network), priorities, learning the quantile function of a two-valued reward, and a few
steps on CartPole."""

import itertools

import numpy as np
import pytest
import torch

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo.iqn import settings as iqn_settings
from deep_rl_zoo.iqn.agent import Iqn, build_iqn, make_network
from deep_rl_zoo.networks.value import ImplicitQuantileNetwork, mlp_iqn_network
from deep_rl_zoo.replay import Transition
from unit_tests.value_agents import CARTPOLE_VALUES, FixedBatchReplay, numpy_quantile_q_learning, quantile_agent, random_batch

N, N_PRIME, K = 5, 6, 4


def make_agent(network, **kwargs):
    return quantile_agent(Iqn, network, tau_samples_s_tm1=N, tau_samples_s_t=N_PRIME, tau_samples_policy=K, **kwargs)


@pytest.mark.parametrize('huber_param', [0.0, 1.0])
def test_losses_match_numpy_reference_with_fresh_taus_and_target_network_selection(huber_param):
    torch.manual_seed(0)
    agent = make_agent(mlp_iqn_network(3, 2, tau_embed_dim=8, tau_samples_policy=K, hidden_size=16), huber_param=huber_param)
    torch.manual_seed(1)
    agent.target_network.load_state_dict(mlp_iqn_network(3, 2, 8, K, 16).state_dict())
    batch = random_batch()
    torch.manual_seed(2)
    loss, priorities = agent.losses(batch)

    torch.manual_seed(2)  # the agent draws N taus for s_tm1, then N' + K for s_t
    tau_tm1, tau_t = torch.rand(6, N), torch.rand(6, N_PRIME + K)
    with torch.no_grad():
        q_tm1 = agent.online_network.quantile_values(batch.s_tm1, tau_tm1).numpy()
        q_t = agent.target_network.quantile_values(batch.s_t, tau_t[:, :N_PRIME]).numpy()
        q_t_selector = agent.target_network.quantile_values(batch.s_t, tau_t[:, N_PRIME:]).numpy()
    args = (batch.a_tm1.numpy(), batch.r_t.numpy(), batch.discount_t.numpy())
    expected = numpy_quantile_q_learning(q_tm1, tau_tm1.numpy(), *args, q_t_selector, q_t, huber_param)
    np.testing.assert_allclose(loss.detach().numpy(), expected, rtol=1e-5)
    assert loss.requires_grad and not priorities.requires_grad
    torch.testing.assert_close(priorities, loss.detach())
    # The taus are fresh each update.
    assert not torch.equal(agent.losses(batch)[0], loss)


@pytest.mark.slow
def test_learns_the_quantile_function_of_a_two_valued_reward():
    """One state, one action, no bootstrap, rewards 0 and 1 equally often: Z_tau is 0 below tau = 1/2 and 1 above."""
    torch.manual_seed(0)
    network = mlp_iqn_network(1, 1, tau_embed_dim=16, tau_samples_policy=K, hidden_size=32)
    batch = Transition(
        s_tm1=np.ones((8, 1), np.float32),
        a_tm1=np.zeros(8, np.int64),
        r_t=np.array([0, 1] * 4, np.float32),
        discount_t=np.zeros(8, np.float32),
        s_t=np.ones((8, 1), np.float32),
    )
    agent = make_agent(network, huber_param=0.0, replay=FixedBatchReplay(batch, strict=False), optimizer=torch.optim.Adam(network.parameters(), lr=3e-3))
    for _ in range(500):
        agent.learn()
    with torch.no_grad():
        values = network.quantile_values(torch.ones(1, 1), torch.tensor([[0.1, 0.3, 0.7, 0.9]]))[0, :, 0]
    torch.testing.assert_close(values, torch.tensor([0.0, 0.0, 1.0, 1.0]), atol=0.1, rtol=0)


def test_learns_on_cartpole_and_acts_on_mean_quantiles():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    settings = iqn_settings.CLASSIC.replace(**CARTPOLE_VALUES).replace(huber_param=1.0, tau_samples_s_tm1=5, tau_samples_s_t=6, tau_samples_policy=4, tau_embed_dim=8)
    try:
        network = make_network(env, settings)
        agent = build_iqn(network, env, settings, torch.device('cpu'))
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 20):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'IQN'
    assert (agent.huber_param, agent.tau_samples_s_tm1, agent.tau_samples_s_t, agent.tau_samples_policy) == (1.0, 5, 6, 4)
    assert isinstance(network, ImplicitQuantileNetwork) and network.tau_samples_policy == 4
    assert network.tau_embedding.num_cosines == 8
    assert network(torch.zeros(3, 4)).shape == (3, 2)
    assert agent.env_steps == 40 and agent.learner_steps > 0
    assert np.isfinite(agent.learner_statistics()['loss'])
