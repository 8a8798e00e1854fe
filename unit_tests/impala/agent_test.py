"""IMPALA's learner: its loss against V-trace worked out independently (on-policy, where V-trace is the n-step return,
and off-policy with every ratio 1/2 or 2), the loss summed over T x B and one RMSProp update against a numpy
reference, state round trip, and the network choice."""

import math
import types

import gymnasium
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import multistep
from deep_rl_zoo.impala import agent
from deep_rl_zoo.impala.settings import ATARI, CLASSIC
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput, mlp_actor_critic
from deep_rl_zoo.rollouts import policy_distribution
from unit_tests import bf16_learning

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
    per_sample = statistics['policy_loss'] + 0.5 * statistics['value_loss'] - 0.1 * statistics['entropy']
    assert_close(loss.detach(), T * B * per_sample)  # the loss is summed, the logged parts are per sample


class TabularActorCritic(torch.nn.Module):
    """logits = W[state], V = v[state] for one-hot observations of states, in float64: gradients by hand."""

    def __init__(self, logits, values):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor(logits, dtype=torch.float64))
        self.values = torch.nn.Parameter(torch.tensor(values, dtype=torch.float64))

    def forward(self, observation):
        return CategoricalActorCriticOutput(observation @ self.logits, observation @ self.values)


# A fixed batch of T = 3 steps from B = 2 environments on 3 states and 2 actions; column 1 ends an episode after
# step 0. mu gave the taken actions the probabilities BEHAVIOUR, so the ratios pi/mu straddle the clips at 1.
TABLE_LOGITS = [[0.3, -0.2], [-1.0, 0.5], [0.0, 0.8]]
TABLE_VALUES = [0.4, -0.3, 1.2]
STATES = np.array([[0, 1], [1, 2], [2, 0]])
LAST_STATES = np.array([1, 2])
ACTIONS = np.array([[0, 1], [1, 1], [0, 0]])
BEHAVIOUR = np.array([[0.9, 0.4], [0.5, 0.2], [0.3, 0.6]])
REWARDS = np.array([[1.0, -0.5], [0.0, 2.0], [0.5, 1.5]])
DISCOUNTS = np.array([[0.9, 0.0], [0.9, 0.9], [0.9, 0.9]])
ENTROPY_COEF, VALUE_COEF = 0.01, 0.5


def tabular_batch(copies=1):
    """The fixed batch, its B columns repeated `copies` times (the same samples more often)."""
    one_hot = np.eye(3)
    batch = {
        'observation': one_hot[STATES],
        'last_observation': one_hot[LAST_STATES],
        'action': ACTIONS,
        'log_prob': np.log(BEHAVIOUR),
        'reward': REWARDS,
        'discount': DISCOUNTS,
    }
    return {name: torch.from_numpy(np.concatenate([value] * copies, axis=0 if name == 'last_observation' else 1)) for name, value in batch.items()}


def summed_loss_reference():
    """The loss of section 4.2 summed over the T x B samples, as scalable_agent reduces it, and its gradient with
    respect to the table, worked out in numpy: V-trace written as its recursion with rho-bar = c-bar = 1."""
    logits, table_values = np.array(TABLE_LOGITS), np.array(TABLE_VALUES)
    pi = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    log_pi = np.log(pi)
    values, bootstrap = table_values[STATES], table_values[LAST_STATES]
    log_pi_taken = np.take_along_axis(log_pi[STATES], ACTIONS[..., None], -1)[..., 0]
    rho = np.minimum(1.0, np.exp(log_pi_taken) / BEHAVIOUR)  # rho-bar = c-bar = rho-bar_pg = 1
    vs = np.zeros((3, 2))
    next_vs, next_value = bootstrap, bootstrap
    for s in reversed(range(3)):
        delta = REWARDS[s] + DISCOUNTS[s] * next_value - values[s]
        vs[s] = values[s] + rho[s] * delta + DISCOUNTS[s] * rho[s] * (next_vs - next_value)
        next_vs, next_value = vs[s], values[s]
    next_vs = np.concatenate([vs[1:], bootstrap[None]])
    pg_advantage = rho * (REWARDS + DISCOUNTS * next_vs - values)
    entropy = -(pi * log_pi).sum(-1)  # per state
    loss = -(pg_advantage * log_pi_taken).sum() + VALUE_COEF * 0.5 * ((vs - values) ** 2).sum() - ENTROPY_COEF * entropy[STATES].sum()

    logits_grad, values_grad = np.zeros((3, 2)), np.zeros(3)
    for s in range(3):
        for b in range(2):
            state, action = STATES[s, b], ACTIONS[s, b]
            values_grad[state] -= VALUE_COEF * (vs[s, b] - values[s, b])
            logits_grad[state] -= pg_advantage[s, b] * (np.eye(2)[action] - pi[state])  # d log pi(a) / d logits
            logits_grad[state] += ENTROPY_COEF * pi[state] * (log_pi[state] + entropy[state])  # d(-H) / d logits
    return loss, logits_grad, values_grad


def tabular_learner(**overrides):
    settings = dict(learning_rate=0.05, entropy_coef=ENTROPY_COEF, value_coef=VALUE_COEF, max_grad_norm=0.0, total_updates=10,
                    anneal_learning_rate=False, optimizer='rmsprop', rmsprop_alpha=0.99, optimizer_eps=0.01)
    settings.update(overrides)
    return agent.ImpalaLearner(TabularActorCritic(TABLE_LOGITS, TABLE_VALUES), **settings)


def test_loss_and_gradient_are_the_sum_over_the_samples_as_in_scalable_agent():
    learner = tabular_learner()
    loss, statistics = learner.loss(tabular_batch())
    loss.backward()
    expected_loss, logits_grad, values_grad = summed_loss_reference()
    assert loss.item() == pytest.approx(expected_loss, rel=1e-12)
    assert_close(learner.network.logits.grad, torch.from_numpy(logits_grad), rtol=1e-12, atol=1e-12)
    assert_close(learner.network.values.grad, torch.from_numpy(values_grad), rtol=1e-12, atol=1e-12)
    per_sample = statistics['policy_loss'] + VALUE_COEF * statistics['value_loss'] - ENTROPY_COEF * statistics['entropy']
    assert per_sample.item() == pytest.approx(expected_loss / 6, rel=1e-12)


def test_update_is_one_clipped_rmsprop_step_on_the_summed_gradient():
    """The paper's optimiser (RMSProp, epsilon 0.01, clip) on the summed gradient: the first step, by hand."""
    learner = tabular_learner(max_grad_norm=1.0)
    learner.update([tabular_batch()])
    _, logits_grad, values_grad = summed_loss_reference()
    gradient = np.concatenate([logits_grad.ravel(), values_grad])
    norm = np.linalg.norm(gradient)
    assert norm > 1.0  # the clip acts on this batch
    clipped = gradient * 1.0 / (norm + 1e-6)  # torch's clip_grad_norm_
    step = 0.05 * clipped / (np.sqrt(0.01 * clipped**2) + 0.01)  # the first RMSProp step: E[g^2] = (1 - 0.99) g^2
    expected = np.concatenate([np.ravel(TABLE_LOGITS), TABLE_VALUES]) - step
    moved = torch.cat([learner.network.logits.detach().ravel(), learner.network.values.detach()])
    assert_close(moved, torch.from_numpy(expected), rtol=1e-12, atol=1e-12)
    assert learner.learner_statistics()['grad_norm'] == pytest.approx(norm, rel=1e-6)  # statistics are averaged in float32


def test_more_samples_of_the_same_kind_give_a_proportionally_larger_loss_and_gradient():
    """Summed, not averaged: the batch repeated three times has three times the loss and gradient (a mean would
    leave both unchanged), while the logged per-sample parts stay the same."""
    once, thrice = tabular_learner(), tabular_learner()
    loss_once, statistics_once = once.loss(tabular_batch())
    loss_thrice, statistics_thrice = thrice.loss(tabular_batch(copies=3))
    loss_once.backward()
    loss_thrice.backward()
    assert loss_thrice.item() == pytest.approx(3 * loss_once.item(), rel=1e-12)
    assert_close(thrice.network.logits.grad, 3 * once.network.logits.grad, rtol=1e-12, atol=1e-12)
    assert_close(thrice.network.values.grad, 3 * once.network.values.grad, rtol=1e-12, atol=1e-12)
    for name in ('policy_loss', 'value_loss', 'entropy'):
        assert statistics_thrice[name].item() == pytest.approx(statistics_once[name].item(), rel=1e-12)


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
    assert type(agent.make_network(fake_env((4, 84, 84)), ATARI.replace(torso='nature')).torso).__name__ == 'NatureCnnTorso'
    assert type(agent.make_network(fake_env((4, 84, 84)), ATARI.replace(torso='impala_resnet')).torso).__name__ == 'ImpalaResNetTorso'
    assert type(agent.make_network(fake_env((4,)), CLASSIC).torso).__name__ == 'MlpTorso'
    with pytest.raises(ValueError, match='--torso applies to Atari frames only'):
        agent.make_network(fake_env((4,)), ATARI.replace(torso='impala_resnet'))


def test_bf16_learning_runs_the_learners_nature_cnn_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (8 steps x 4 envs of random frames and the bootstrap frames) of run_atari's learner from the same
    network, without and with --bf16_learning: the Nature CNN's first convolution computes in float32, then bfloat16;
    the loss moves by 0.14% (seeds 0 and 2: 0.07-0.14%; seed 1's loss nearly cancels to 0.05 and moves by 0.002, 4.7%
    of it), the gradient keeps its direction (cosine 0.999)."""

    bf16_learning.check_the_nature_cnn_update(agent, ATARI)


def test_the_rollout_replay_keeps_copies_of_the_newest_and_draws_distinct_ones():
    replay = agent.RolloutReplay(capacity=3, seed=0)
    buffer = {'reward': torch.zeros(2, 1)}
    for value in range(5):
        buffer['reward'].fill_(value)  # the actors' buffer is reused between rollouts
        replay.add(buffer)
    assert sorted(rollout['reward'][0, 0].item() for rollout in replay.rollouts) == [2.0, 3.0, 4.0]  # the newest 3
    drawn = replay.sample(2)
    assert len(drawn) == 2 and drawn[0] is not drawn[1]
    assert len(replay.sample(10)) == 3  # no more than it holds
    again = agent.RolloutReplay(capacity=3, seed=0)
    for rollout in replay.rollouts:
        again.add(rollout)
    assert [r['reward'][0, 0].item() for r in again.sample(2)] == [r['reward'][0, 0].item() for r in drawn]  # seeded draws


def test_with_replay_each_batch_adds_the_proportion_of_replayed_rollouts():
    network, batch = make_batch(seed=4)
    columns = [{name: value[:, i : i + 1] if name != 'last_observation' else value[i : i + 1] for name, value in batch.items()} for i in range(B)]
    learner = make_learner(network, replay_proportion=1.5, replay_rollouts=10, seed=1)
    sizes = []

    def record_batch_sizes(learner):
        loss = learner.loss

        def recording_loss(update_batch):
            sizes.append(update_batch['reward'].shape[1])
            return loss(update_batch)

        learner.loss = recording_loss

    record_batch_sizes(learner)
    for _ in range(3):
        learner.update(columns)  # 2 new rollouts of one environment each
    # Nothing to replay at first; then 1.5 x 2 = 3 replayed per update, from the 2, then 4, rollouts trained on.
    assert sizes == [2, 2 + 2, 2 + 3]
    assert len(learner.rollout_replay.rollouts) == 6
    assert learner.learner_statistics()['replayed_rollouts'] == pytest.approx((0 + 2 + 3) / 3)
    fractional = make_learner(mlp_actor_critic(OBSERVATION_SIZE, 2), replay_proportion=0.25, replay_rollouts=10)
    record_batch_sizes(fractional)
    sizes.clear()
    for _ in range(4):
        fractional.update(columns[:1])
    assert sizes == [1, 1, 1, 2]  # one replayed rollout per 4 new ones


def test_without_replay_the_learner_keeps_no_rollouts():
    network, batch = make_batch(seed=5)
    learner = make_learner(network)
    learner.update([batch])
    assert learner.rollout_replay is None and 'replayed_rollouts' not in learner.learner_statistics()
    assert not hasattr(learner, 'replay')  # the experiment would save and restore it as a replay agent's memory
