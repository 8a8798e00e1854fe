"""IMPALA's learner: its loss against V-trace worked out independently (on-policy, where V-trace is the n-step return,
and off-policy with every ratio 1/2 or 2), one update, state round trip, and the network choice."""

import math
import types

import gymnasium
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import multistep
from deep_rl_zoo.impala import agent
from deep_rl_zoo.networks.policy import mlp_actor_critic
from deep_rl_zoo.rollouts import policy_distribution

T, B, OBSERVATION_SIZE = 4, 2, 3
GAMMA = 0.9


def make_batch(seed=0):
    """A rollout [T, B] whose column 0 ends an episode after step 1, and its actions drawn from `network`."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    network = mlp_actor_critic(OBSERVATION_SIZE, 2)
    observation = torch.randn(T, B, OBSERVATION_SIZE, generator=generator)
    last_observation = torch.randn(B, OBSERVATION_SIZE, generator=generator)
    with torch.no_grad():
        distribution = policy_distribution(network(observation.flatten(0, 1)))
        action = distribution.sample().view(T, B)
        log_prob = distribution.log_prob(action.flatten()).view(T, B)
    discount = torch.full((T, B), GAMMA)
    discount[1, 0] = 0.0
    batch = {
        'observation': observation,
        'last_observation': last_observation,
        'action': action,
        'log_prob': log_prob,
        'reward': torch.randn(T, B, generator=generator),
        'discount': discount,
    }
    return network, batch


def make_learner(network, **overrides):
    settings = dict(learning_rate=0.01, entropy_coef=0.0, value_coef=1.0, max_grad_norm=0.0, total_updates=10, anneal_learning_rate=True)
    settings.update(overrides)
    return agent.ImpalaLearner(network, **settings)


def current(network, batch):
    """log pi(a|x) [T, B], V(x) [T, B], V(x_T) [B] of the learner's network now."""
    with torch.no_grad():
        output = network(batch['observation'].flatten(0, 1))
        log_prob = policy_distribution(output).log_prob(batch['action'].flatten()).view(T, B)
        return log_prob, output.value.view(T, B), network(batch['last_observation']).value


def expected_losses(batch, log_prob, values, bootstrap, rho):
    """Policy and value losses for the same importance ratio `rho` (<= 1, so unclipped) at every step, with
    V-trace's recursion written out step by step."""
    reward, discount = batch['reward'].numpy(), batch['discount'].numpy()
    values, bootstrap = values.numpy(), bootstrap.numpy()
    vs = np.zeros((T, B))
    next_vs, next_value, correction = bootstrap, bootstrap, np.zeros(B)
    for s in reversed(range(T)):
        delta = rho * (reward[s] + discount[s] * next_value - values[s])
        correction = delta + discount[s] * rho * correction
        vs[s] = values[s] + correction
        next_value = values[s]
    next_vs = np.concatenate([vs[1:], bootstrap[None]])
    pg_advantage = rho * (reward + discount * next_vs - values)
    policy_loss = -(pg_advantage * log_prob.numpy()).mean()
    value_loss = (0.5 * (vs - values) ** 2).mean()
    return vs, policy_loss, value_loss


def test_on_policy_the_targets_are_n_step_returns_and_the_loss_is_a2c():
    network, batch = make_batch()
    learner = make_learner(network)
    log_prob, values, bootstrap = current(network, batch)
    _, statistics = learner.loss(batch)
    returns = multistep.discounted_returns(batch['reward'], batch['discount'], bootstrap)  # V-trace on-policy
    assert_close(statistics['policy_loss'], -((returns - values) * log_prob).mean())
    assert_close(statistics['value_loss'], (0.5 * (returns - values) ** 2).mean())
    assert statistics['importance_weight_mean'].item() == pytest.approx(1.0)
    assert statistics['importance_weight_clipped_fraction'].item() == 0.0


def test_off_policy_ratios_are_pi_over_mu_and_clipped_at_rho_bar():
    network, batch = make_batch(seed=1)
    learner = make_learner(network)
    log_prob, values, bootstrap = current(network, batch)

    # mu gave every action twice pi's probability: rho = 1/2 everywhere, below every clip.
    half = dict(batch, log_prob=log_prob + math.log(2.0))
    _, statistics = learner.loss(half)
    _, policy_loss, value_loss = expected_losses(batch, log_prob, values, bootstrap, rho=0.5)
    assert statistics['importance_weight_mean'].item() == pytest.approx(0.5)
    assert statistics['policy_loss'].item() == pytest.approx(policy_loss, rel=1e-5)
    assert statistics['value_loss'].item() == pytest.approx(value_loss, rel=1e-5)

    # mu gave every action half pi's probability: rho = 2 everywhere, clipped to 1: the on-policy targets.
    double = dict(batch, log_prob=log_prob - math.log(2.0))
    _, statistics = learner.loss(double)
    _, policy_loss, value_loss = expected_losses(batch, log_prob, values, bootstrap, rho=1.0)
    assert statistics['importance_weight_mean'].item() == pytest.approx(2.0)
    assert statistics['importance_weight_clipped_fraction'].item() == 1.0
    assert statistics['policy_loss'].item() == pytest.approx(policy_loss, rel=1e-5)
    assert statistics['value_loss'].item() == pytest.approx(value_loss, rel=1e-5)

    # Without clipping the ratios of 2 weigh in fully: the loss differs from the clipped one.
    _, unclipped = make_learner(network, clip_rho_threshold=None, clip_pg_rho_threshold=None, clip_c_threshold=None).loss(double)
    assert unclipped['importance_weight_clipped_fraction'].item() == 0.0
    assert unclipped['policy_loss'].item() != pytest.approx(policy_loss, rel=1e-3)


def test_entropy_bonus_and_value_weight_enter_the_loss():
    network, batch = make_batch(seed=2)
    loss, statistics = make_learner(network, entropy_coef=0.1, value_coef=0.5).loss(batch)
    expected = statistics['policy_loss'] + 0.5 * statistics['value_loss'] - 0.1 * statistics['entropy']
    assert_close(loss.detach(), expected)


def test_update_takes_one_step_from_concatenated_rollouts_and_the_state_round_trips():
    network, batch = make_batch(seed=3)
    learner = make_learner(network, optimizer='rmsprop', optimizer_eps=0.01, max_grad_norm=40.0)
    before = [parameter.detach().clone() for parameter in network.parameters()]
    halves = [{name: value[:, i : i + 1] if name != 'last_observation' else value[i : i + 1] for name, value in batch.items()} for i in range(B)]
    learner.update(halves)  # two rollouts of one environment each, as two actors would send them
    assert learner.learner_steps == 1
    assert any(not torch.equal(old, new) for old, new in zip(before, network.parameters()))
    statistics = learner.learner_statistics()
    assert statistics['learning_rate'] == pytest.approx(0.01)  # the first step's rate; annealed linearly after
    assert learner.learning_rate(5) == pytest.approx(0.005)
    assert math.isfinite(statistics['grad_norm'])

    restored = make_learner(mlp_actor_critic(OBSERVATION_SIZE, 2), optimizer='rmsprop', optimizer_eps=0.01)
    restored.load_state_dict(learner.state_dict())
    assert restored.learner_steps == 1
    for mine, theirs in zip(restored.network.parameters(), network.parameters()):
        assert torch.equal(mine, theirs)
    assert 'square_avg' in restored.optimizer.state_dict()['state'][0]


def fake_env(observation_shape, num_actions=4):
    observation_space = gymnasium.spaces.Box(0, 255, observation_shape, np.uint8)
    return types.SimpleNamespace(single_observation_space=observation_space, single_action_space=gymnasium.spaces.Discrete(num_actions))


def test_make_network_builds_the_chosen_torso_and_refuses_it_for_vectors():
    assert type(agent.make_network(fake_env((4, 84, 84)), {'torso': 'nature'}).torso).__name__ == 'NatureCnnTorso'
    assert type(agent.make_network(fake_env((4, 84, 84)), {'torso': 'impala_resnet'}).torso).__name__ == 'ImpalaResNetTorso'
    assert type(agent.make_network(fake_env((4,)), {}).torso).__name__ == 'MlpTorso'
    with pytest.raises(ValueError, match='--torso applies to Atari frames only'):
        agent.make_network(fake_env((4,)), {'torso': 'impala_resnet'})
