"""The n-step actor-critic agent in process: its update worked out by hand on a tiny linear network, how it
treats terminations, time limits and lost lives, and its schedule on real CartPoles."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import gym_env
from deep_rl_zoo.actor_critic.agent import ActorCritic, build_agent, make_network
from deep_rl_zoo.actor_critic.settings import CLASSIC
from deep_rl_zoo.gym_env import VectorStep
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput


class LinearActorCritic(nn.Module):
    """logits = s Wp (Wp [2 obs, 2 actions]), V(s) = s . wv, no biases."""

    def __init__(self, policy_weight, value_weight):
        super().__init__()
        self.policy_weight = nn.Parameter(torch.tensor(policy_weight, dtype=torch.float32))
        self.value_weight = nn.Parameter(torch.tensor(value_weight, dtype=torch.float32))

    def forward(self, observation):
        observation = observation.float()
        return CategoricalActorCriticOutput(observation @ self.policy_weight, observation @ self.value_weight)


S0, S1, S2 = [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]
DISCOUNT = 0.9


def hand_agent(unroll_length=2, entropy_coef=0.1, terminal_on_life_loss=False, normalize_advantages=False):
    """Uniform policy (Wp = 0), V(s) = s . [1, 2], plain SGD at learning rate 1 so parameters move by -gradient."""
    network = LinearActorCritic([[0.0, 0.0], [0.0, 0.0]], [1.0, 2.0])
    return ActorCritic(
        network,
        torch.optim.SGD(network.parameters(), lr=1.0),
        unroll_length=unroll_length,
        discount=DISCOUNT,
        entropy_coef=entropy_coef,
        value_coef=0.5,
        max_grad_norm=0.0,
        terminal_on_life_loss=terminal_on_life_loss,
        normalize_advantages=normalize_advantages,
    )


def fake_step(observation, reward, terminated=False, truncated=False, life_loss=False, final_observation=None):
    observation = np.array([observation], np.float32)
    return VectorStep(
        observation=observation,
        reward=np.array([reward], np.float32),
        raw_reward=np.array([reward], np.float32),
        terminated=np.array([terminated]),
        truncated=np.array([truncated]),
        life_loss=np.array([life_loss]),
        final_observation=np.array([final_observation], np.float32) if final_observation is not None else observation,
    )


def play_two_steps(agent, first_step):
    """s0 --action 0--> first_step, then s1 --action 1, reward 2--> s2: one unroll of 2 steps."""
    agent.act(np.array([S0], np.float32))  # the sampled action is replaced by the one we choose
    agent.observe(np.array([0]), first_step)
    assert agent.learner_steps == 0
    agent.act(np.array([S1], np.float32))
    agent.observe(np.array([1]), fake_step(S2, 2.0))
    assert agent.learner_steps == 1 and agent.env_steps == 2


def parameters(agent):
    network = agent.online_network
    return network.policy_weight.detach().numpy(), network.value_weight.detach().numpy()


def test_two_step_update_by_hand():
    # V(s0) = 1, V(s1) = 2, V(s2) = 3. n = 2 returns: G1 = 2 + 0.9 * 3 = 4.7, G0 = 1 + 0.9 * 4.7 = 5.23.
    # Advantages (TD): A0 = 5.23 - 1 = 4.23, A1 = 4.7 - 2 = 2.7.
    # Value gradient: 0.5 * mean(-(G - V) s) = 0.5 * -(4.23 [1, 0] + 2.7 [0, 1]) / 2 = [-1.0575, -0.675].
    # Policy gradient wrt logits, uniform pi: -A (onehot(a) - 0.5) / 2; the entropy term's gradient is 0 at the
    # uniform policy. Row s0 (a=0): -4.23 [0.5, -0.5] / 2 = [-1.0575, 1.0575]; row s1 (a=1): [0.675, -0.675].
    agent = hand_agent()
    play_two_steps(agent, fake_step(S1, 1.0))
    policy_weight, value_weight = parameters(agent)
    np.testing.assert_allclose(value_weight, [1 + 1.0575, 2 + 0.675], rtol=1e-5)
    np.testing.assert_allclose(policy_weight, [[1.0575, -1.0575], [-0.675, 0.675]], rtol=1e-5)
    # loss = mean(ln2 * A) + 0.5 * mean(0.5 A^2) - 0.1 ln2 = 2.401757 + 3.147863 - 0.069315 = 5.480305.
    statistics = agent.learner_statistics()
    assert statistics['loss'] == pytest.approx(5.480305, rel=1e-5)
    assert statistics['policy_loss'] == pytest.approx(math.log(2) * (4.23 + 2.7) / 2, rel=1e-5)
    assert statistics['value_loss'] == pytest.approx((4.23**2 + 2.7**2) / 4, rel=1e-5)  # unweighted
    assert statistics['entropy'] == pytest.approx(math.log(2), rel=1e-5)
    assert statistics['advantage'] == pytest.approx((4.23 + 2.7) / 2, rel=1e-5)
    assert agent.learner_statistics() == {}  # averaged since the last call


def test_normalized_advantages_weigh_the_policy_term_by_the_standardised_td_advantage():
    # The update above with --normalize_advantages: A = (4.23, 2.7) standardised over the update's 2 steps is
    # (1, -1) (mean 3.465, population std 0.765), so the policy rows move by -(+-1) (onehot(a) - 0.5) / 2 while the
    # critic moves as before.
    agent = hand_agent(normalize_advantages=True)
    play_two_steps(agent, fake_step(S1, 1.0))
    policy_weight, value_weight = parameters(agent)
    np.testing.assert_allclose(value_weight, [1 + 1.0575, 2 + 0.675], rtol=1e-5)
    np.testing.assert_allclose(policy_weight, [[0.25, -0.25], [0.25, -0.25]], rtol=1e-5)
    assert agent.learner_statistics()['advantage'] == pytest.approx((4.23 + 2.7) / 2, rel=1e-5)  # reported unstandardised


def test_termination_is_not_bootstrapped():
    # The first step ends its episode: G0 = r0 = 1 = V(s0), so A0 = 0 and s0's row does not move.
    agent = hand_agent()
    play_two_steps(agent, fake_step(S1, 1.0, terminated=True))
    policy_weight, value_weight = parameters(agent)
    np.testing.assert_allclose(value_weight, [1.0, 2.675], rtol=1e-5)
    np.testing.assert_allclose(policy_weight, [[0.0, 0.0], [-0.675, 0.675]], atol=1e-6)


def test_time_limit_is_bootstrapped_from_the_final_observation():
    # Truncated after the first step, final observation [2, 0] with V = 2: G0 = 1 + 0.9 * 2 = 2.8 (the next
    # episode's s1 is not looked at), A0 = 1.8. Value gradient [-0.45, -0.675]; s0's policy row -1.8 [0.5, -0.5] / 2.
    agent = hand_agent()
    play_two_steps(agent, fake_step(S1, 1.0, truncated=True, final_observation=[2.0, 0.0]))
    policy_weight, value_weight = parameters(agent)
    np.testing.assert_allclose(value_weight, [1.45, 2.675], rtol=1e-5)
    np.testing.assert_allclose(policy_weight, [[0.45, -0.45], [-0.675, 0.675]], rtol=1e-5)


def test_terminated_and_truncated_together_is_a_termination():
    agent = hand_agent()
    play_two_steps(agent, fake_step(S1, 1.0, terminated=True, truncated=True, final_observation=[2.0, 0.0]))
    np.testing.assert_allclose(parameters(agent)[1], [1.0, 2.675], rtol=1e-5)


@pytest.mark.parametrize('terminal_on_life_loss, expected_value_weight', [(True, [1.0, 2.675]), (False, [2.0575, 2.675])])
def test_lost_life_is_terminal_only_when_asked(terminal_on_life_loss, expected_value_weight):
    agent = hand_agent(terminal_on_life_loss=terminal_on_life_loss)
    play_two_steps(agent, fake_step(S1, 1.0, life_loss=True))
    np.testing.assert_allclose(parameters(agent)[1], expected_value_weight, rtol=1e-5)


def test_one_step_actor_critic_uses_the_td_error():
    # n = 1: every step is its own update; A = r + 0.9 V(s') - V(s) = 1 + 0.9 * 2 - 1 = 1.8 for s0 -> s1.
    agent = hand_agent(unroll_length=1, entropy_coef=0.0)
    agent.act(np.array([S0], np.float32))
    agent.observe(np.array([0]), fake_step(S1, 1.0))
    assert agent.learner_steps == 1
    assert agent.learner_statistics()['advantage'] == pytest.approx(1.8, rel=1e-6)
    # Value: 0.5 * -(1.8 [1, 0]) -> wv = [1.9, 2]; policy row s0: -1.8 [0.5, -0.5] -> [0.9, -0.9].
    policy_weight, value_weight = parameters(agent)
    np.testing.assert_allclose(value_weight, [1.9, 2.0], rtol=1e-6)
    np.testing.assert_allclose(policy_weight, [[0.9, -0.9], [0.0, 0.0]], rtol=1e-6)


def test_entropy_bonus_pushes_towards_uniform():
    # Only the entropy term (no advantage: V matches every return) moves a skewed policy towards uniform.
    network = LinearActorCritic([[2.0, 0.0], [0.0, 0.0]], [0.0, 0.0])
    agent = ActorCritic(network, torch.optim.SGD(network.parameters(), lr=0.1), 1, DISCOUNT, 1.0, 0.5, 0.0)
    agent.act(np.array([S0], np.float32))
    agent.observe(np.array([0]), fake_step(S1, 0.0, terminated=True))
    first_row = network.policy_weight.detach()[0]
    assert first_row[0] < 2.0 and first_row[1] > 0.0


SETTINGS = CLASSIC.replace(learning_rate=1e-3, unroll_length=5, discount=0.99, entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5)


def test_every_step_is_used_once_on_cartpoles():
    env = gym_env.create_vector_env('classic', 'CartPole-v1', 2, 0)
    torch.manual_seed(0)
    agent = build_agent(make_network(env, SETTINGS), env, SETTINGS, torch.device('cpu'))
    before = {name: tensor.clone() for name, tensor in agent.online_network.state_dict().items()}
    observation = env.reset()
    for _ in range(42):
        action = agent.act(observation)
        step = env.step(action)
        agent.observe(action, step)
        observation = step.observation
    env.close()
    assert agent.env_steps == 84 and agent.learner_steps == 8  # 42 vector steps: 8 unrolls of 5, 2 steps pending
    assert len(agent._unroll['reward']) == 2
    after = agent.online_network.state_dict()
    assert not torch.equal(after['policy_head.weight'], before['policy_head.weight'])
    assert not torch.equal(after['value_head.weight'], before['value_head.weight'])
    assert set(agent.learner_statistics()) == {'loss', 'policy_loss', 'value_loss', 'entropy', 'advantage'}


def test_state_dict_round_trip():
    agent = hand_agent()
    play_two_steps(agent, fake_step(S1, 1.0))
    state = agent.state_dict()
    assert set(state) == {'network', 'optimizer', 'env_steps', 'learner_steps'}
    other = hand_agent()
    other.load_state_dict(state)
    assert other.env_steps == 2 and other.learner_steps == 1
    np.testing.assert_array_equal(parameters(other)[0], parameters(agent)[0])


def test_networks_for_vectors_and_frames():
    cartpole = gym_env.create_vector_env('classic', 'CartPole-v1', 1, 0)
    network = make_network(cartpole, SETTINGS)
    cartpole.close()
    output = network(torch.zeros(3, 4))
    assert output.logits.shape == (3, 2) and output.value.shape == (3,)
    assert network.value_torso is not None  # separate MLPs for policy and value


def test_unroll_length_must_be_positive():
    with pytest.raises(ValueError, match='unroll_length'):
        hand_agent(unroll_length=0)
