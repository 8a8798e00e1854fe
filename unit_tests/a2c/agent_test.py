"""Tests of the A2C learner (deep_rl_zoo/a2c/agent.py): one gradient step on a tiny hand-made batch checked against
numbers worked out by hand, every collected sample used exactly once, the learning-rate schedule and checkpoints.
"""

import copy
import math

import gymnasium
import numpy as np
import pytest
import torch
from torch import nn
from torch.testing import assert_close

from deep_rl_zoo import gym_env
from deep_rl_zoo.a2c import agent
from deep_rl_zoo.a2c.settings import ATARI, A2cGradientSettings, A2cSettings
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput
from deep_rl_zoo.rollouts import OnPolicyActor
from unit_tests import bf16_learning


class LinearActorCritic(nn.Module):
    """logits = W obs, V = u . obs, both zero at the start (so pi is uniform and V = 0); records its inputs."""

    def __init__(self, observation_size=2, num_actions=2):
        super().__init__()
        self.policy = nn.Linear(observation_size, num_actions, bias=False)
        self.value = nn.Linear(observation_size, 1, bias=False)
        nn.init.zeros_(self.policy.weight)
        nn.init.zeros_(self.value.weight)
        self.inputs = []

    def forward(self, observation):
        self.inputs.append(observation.detach().clone())
        observation = observation.float()
        return CategoricalActorCriticOutput(self.policy(observation), self.value(observation).squeeze(-1))


LEARNER_SETTINGS = dict(
    learning_rate=0.01,
    entropy_coef=0.01,
    value_coef=0.5,
    gae_lambda=1.0,
    max_grad_norm=0.0,
    total_updates=10,
    anneal_learning_rate=False,
    optimizer='rmsprop',
    rmsprop_alpha=0.99,
    optimizer_eps=0.1,
)


def make_learner(network, **overrides):
    return agent.A2cLearner(network, **{**LEARNER_SETTINGS, **overrides})


def two_actor_buffers():
    """Two actors' rollouts of T=2 steps from one environment each (the shapes of `rollout_spec`).

    Actor 0: rewards 1, 1, discounts 0.9, 0.9, bootstrap V(s_2) = 2    -> returns 3.52, 2.8
    Actor 1: rewards 0, 2, discounts 0.9, 0 (the episode ends), V = 5   -> returns 1.8, 2.0
    """
    actor0 = {
        'observation': torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]]),
        'action': torch.tensor([[0], [1]]),
        'log_prob': torch.full((2, 1), math.log(0.5)),
        'value': torch.tensor([[0.0], [0.0], [2.0]]),
        'reward': torch.tensor([[1.0], [1.0]]),
        'discount': torch.tensor([[0.9], [0.9]]),
    }
    actor1 = {
        'observation': torch.tensor([[[1.0, 1.0]], [[2.0, 0.0]]]),
        'action': torch.tensor([[1], [0]]),
        'log_prob': torch.full((2, 1), math.log(0.5)),
        'value': torch.tensor([[0.0], [0.0], [5.0]]),
        'reward': torch.tensor([[0.0], [2.0]]),
        'discount': torch.tensor([[0.9], [0.0]]),
    }
    return [actor0, actor1]


# The batch in learner order (time-major, actors side by side): t0a0, t0a1, t1a0, t1a1.
OBSERVATIONS = [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [2.0, 0.0]]
ACTIONS = [0, 1, 1, 0]
RETURNS = [3.52, 1.8, 2.8, 2.0]  # 1 + 0.9 (1 + 0.9 * 2), 0 + 0.9 * 2, 1 + 0.9 * 2, 2 + 0 * 5
# By hand, with pi = (1/2, 1/2) and V = 0, so every advantage is its return, over B = 4 samples:
# d(mean policy loss)/d logits_i = -(onehot(a_i) - 1/2) A_i / 4; summed against the observations,
POLICY_GRADIENT = [[-0.715, 0.575], [0.715, -0.575]]  # row 0: -0.44 [1,0] + 0.225 [1,1] + 0.35 [0,1] - 0.25 [2,0]
# d(0.5 * mean 0.5 (R - V)^2)/du = -0.5 / 4 * sum_i R_i obs_i = -0.125 [9.32, 4.6]
VALUE_GRADIENT = [-1.165, -0.575]
# The entropy is at its maximum log 2 for a uniform policy: its gradient is 0.


def rmsprop_first_step(gradient, learning_rate=0.01, alpha=0.99, eps=0.1):
    """PyTorch RMSProp's first step from a zero square average: p -= lr g / (sqrt((1 - alpha) g^2) + eps)."""
    gradient = np.asarray(gradient)
    return -learning_rate * gradient / (np.sqrt((1 - alpha) * gradient**2) + eps)


@pytest.mark.slow
def test_one_update_is_one_rmsprop_step_on_the_hand_computed_a2c_gradient():
    network = LinearActorCritic()
    learner = make_learner(network)
    learner.update(two_actor_buffers())

    assert_close(learner.returns({name: torch.cat([b[name] for b in two_actor_buffers()], 1) for name in ('reward', 'discount', 'value')}).flatten(), torch.tensor(RETURNS))
    assert_close(network.policy.weight.detach(), torch.tensor(rmsprop_first_step(POLICY_GRADIENT), dtype=torch.float32))
    assert_close(network.value.weight.detach(), torch.tensor(rmsprop_first_step([VALUE_GRADIENT]), dtype=torch.float32))

    statistics = learner.learner_statistics()
    assert statistics['policy_loss'] == pytest.approx(math.log(2) * sum(RETURNS) / 4)
    assert statistics['value_loss'] == pytest.approx(sum(0.5 * r * r for r in RETURNS) / 4)  # 3.4338
    assert statistics['entropy'] == pytest.approx(math.log(2))
    norm = math.sqrt(sum(g * g for row in POLICY_GRADIENT for g in row) + sum(g * g for g in VALUE_GRADIENT))
    assert statistics['grad_norm'] == pytest.approx(norm)
    assert statistics['learning_rate'] == pytest.approx(0.01)
    assert learner.learner_statistics() == {}  # cleared once read


def test_the_gradient_norm_is_clipped_before_the_step():
    network = LinearActorCritic()
    make_learner(network, max_grad_norm=0.5).update(two_actor_buffers())
    norm = math.sqrt(sum(g * g for row in POLICY_GRADIENT for g in row) + sum(g * g for g in VALUE_GRADIENT))  # about 1.73
    scale = 0.5 / norm
    assert_close(network.policy.weight.detach(), torch.tensor(rmsprop_first_step(np.array(POLICY_GRADIENT) * scale), dtype=torch.float32))
    assert_close(network.value.weight.detach(), torch.tensor(rmsprop_first_step(np.array([VALUE_GRADIENT]) * scale), dtype=torch.float32))


def test_adam_takes_a_step_of_the_learning_rate_against_the_gradient_sign():
    network = LinearActorCritic()
    make_learner(network, optimizer='adam', optimizer_eps=1e-8).update(two_actor_buffers())
    # Adam's first step is lr * g / (|g| + eps): the learning rate against each gradient's sign.
    assert_close(network.policy.weight.detach(), -0.01 * torch.sign(torch.tensor(POLICY_GRADIENT)))
    assert_close(network.value.weight.detach(), -0.01 * torch.sign(torch.tensor([VALUE_GRADIENT])))


def test_lambda_below_one_uses_gae_and_lambda_zero_is_the_one_step_td_target():
    learner = make_learner(LinearActorCritic(), gae_lambda=0.0)
    batch = {'reward': torch.tensor([[1.0], [2.0]]), 'discount': torch.tensor([[0.5], [0.0]]), 'value': torch.tensor([[3.0], [4.0], [9.0]])}
    assert_close(learner.returns(batch), torch.tensor([[1.0 + 0.5 * 4.0], [2.0]]))  # r + d V(s'), cut at the end
    learner = make_learner(LinearActorCritic(), gae_lambda=0.5)
    # A_1 = 2 - 4 = -2; A_0 = (1 + 0.5 * 4 - 3) + 0.5 * 0.5 * A_1 = -0.5; returns A + V.
    assert_close(learner.returns(batch), torch.tensor([[-0.5 + 3.0], [-2.0 + 4.0]]))


def test_the_learner_uses_every_collected_sample_exactly_once():
    """Two real actors on CartPole (3 and 2 environments, 7 steps each): one update is one forward pass over all
    35 (observation, action) samples, in rollout order, none repeated, none dropped."""
    unroll_length = 7
    buffers = []
    for actor_id, num_envs in enumerate((3, 2)):
        env = gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=10 * actor_id)
        network = agent.make_network(env, A2cSettings())
        spec = agent.rollout_spec(env, num_envs, unroll_length)
        buffer = {name: torch.full(shape, -7, dtype=dtype) for name, (shape, dtype) in spec.items()}
        OnPolicyActor(network, env, unroll_length, 0.99, False, seed=actor_id).collect(buffer)
        env.close()
        buffers.append(buffer)

    network = LinearActorCritic(observation_size=4)
    learner = make_learner(network)
    learner.update(buffers)
    assert len(network.inputs) == 1
    seen = network.inputs[0]
    assert seen.shape == (unroll_length * 5, 4)
    expected = torch.cat([buffer['observation'] for buffer in buffers], dim=1).flatten(0, 1)
    assert torch.equal(seen, expected)
    assert len({tuple(row.tolist()) for row in seen}) == 35  # 35 distinct CartPole states
    assert learner.samples_used == 35 and learner.learner_steps == 1

    learner.update(buffers)
    assert learner.samples_used == 70 and learner.learner_steps == 2


def test_the_learning_rate_decays_linearly_to_zero_over_the_run():
    network = LinearActorCritic()
    learner = make_learner(network, total_updates=4, anneal_learning_rate=True)
    rates = []
    for _ in range(4):
        learner.update(two_actor_buffers())
        rates.append(learner.optimizer.param_groups[0]['lr'])
    assert rates == pytest.approx([0.01, 0.0075, 0.005, 0.0025])


def test_state_dict_round_trip_keeps_network_optimizer_and_counters():
    learner = make_learner(LinearActorCritic())
    learner.update(two_actor_buffers())
    other = make_learner(LinearActorCritic())
    other.load_state_dict(copy.deepcopy(learner.state_dict()))  # as written to and read from a checkpoint
    assert other.learner_steps == 1 and other.samples_used == 4
    assert torch.equal(other.network.policy.weight, learner.network.policy.weight)
    assert other.optimizer.state_dict()['state'][0]['square_avg'].shape == (2, 2)
    learner.update(two_actor_buffers())
    other.update(two_actor_buffers())
    assert torch.equal(other.network.policy.weight, learner.network.policy.weight)


def test_make_network_refuses_continuous_actions_with_a_clear_message():
    env = gym_env.create_continuous_vector_env('Pendulum-v1', 1, seed=0)
    with pytest.raises(ValueError, match='discrete actions only'):
        agent.make_network(env, A2cSettings())
    env.close()


def test_normalize_observations_puts_a_running_normaliser_in_front_that_the_learner_updates():
    """rl-baselines3-zoo's `normalize` for A2C on classic control: the statistics the actors act with are folded in
    after each gradient step; Atari frames and the gradient variant (whose learner sees no observations) refuse it."""
    env = gym_env.create_classic_vector_env('MountainCar-v0', 2, seed=3)
    network = agent.make_network(env, A2cSettings(normalize_observations=True))
    normalizer = network.observation_normalizer
    assert agent.make_network(env, A2cSettings()).observation_normalizer is None  # off by default: checkpoints keep their keys
    unroll_length = 5
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in agent.rollout_spec(env, 2, unroll_length).items()}
    OnPolicyActor(network, env, unroll_length, 0.99, terminal_on_life_loss=False, seed=1, scale_rewards=True).collect(buffer)
    observations = buffer['observation'].reshape(-1, 2).double()
    learner = make_learner(network)
    learner.update([buffer])
    assert normalizer.count.item() == pytest.approx(unroll_length * 2)
    assert_close(normalizer.mean.double(), observations.mean(0), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="gradient variant .* deep_rl_zoo.a2c.run_classic takes it"):
        agent.make_gradient_network(env, A2cGradientSettings(normalize_observations=True))
    env.close()

    class AtariShaped:
        single_observation_space = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        single_action_space = gymnasium.spaces.Discrete(6)

    with pytest.raises(ValueError, match='vector observations only .* Atari frames'):
        agent.make_network(AtariShaped(), A2cSettings(normalize_observations=True))


@pytest.mark.slow
def test_bf16_learning_runs_the_learners_nature_cnn_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (8 steps x 4 envs of random frames) of run_atari's learner from the same network, without and with
    --bf16_learning: the torso's first convolution computes in float32, then bfloat16; the loss moves by 0.2% (seeds
    0-2: 0.04-0.2%), the gradient keeps its direction (cosine 0.9995)."""

    bf16_learning.check_the_nature_cnn_update(agent, ATARI)
