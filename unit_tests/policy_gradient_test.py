"""Tests for deep_rl_zoo.policy_gradient and the Gaussian entropy continuous PPO takes from
rollouts.policy_distribution: expected numbers are worked out by hand in the comments."""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import policy_gradient, rollouts
from deep_rl_zoo.networks.policy import GaussianActorCriticOutput


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# Five samples with ratios pi/pi_old = [1.5, 0.5, 1.1, 0.7, 1.5] and clip epsilon 0.2.
OLD_LOG_PROB = [0.1, -0.2, 0.3, 0.0, -1.0]
RATIOS = [1.5, 0.5, 1.1, 0.7, 1.5]
ADVANTAGES = [2.0, 2.0, -1.0, -3.0, -1.0]


def surrogate_inputs():
    old_log_prob = tensor(OLD_LOG_PROB, requires_grad=True)
    log_prob = (old_log_prob.detach() + torch.log(tensor(RATIOS))).requires_grad_()
    return log_prob, old_log_prob, tensor(ADVANTAGES, requires_grad=True)


def test_clipped_surrogate_loss_values_and_gradient():
    log_prob, old_log_prob, advantage = surrogate_inputs()
    loss = policy_gradient.clipped_surrogate_loss(log_prob, old_log_prob, advantage, clip_epsilon=0.2)
    # -min(ratio A, clip(ratio, 0.8, 1.2) A):
    #   1.5 * 2 = 3 vs 1.2 * 2 = 2.4   -> 2.4 is taken (clipped)
    #   0.5 * 2 = 1 vs 0.8 * 2 = 1.6   -> 1.0 (unclipped: a pessimistic bound is never clipped)
    #   1.1 * -1 inside the clip range -> -1.1
    #   0.7 * -3 = -2.1 vs 0.8 * -3 = -2.4 -> -2.4 (clipped)
    #   1.5 * -1 = -1.5 vs 1.2 * -1 = -1.2 -> -1.5 (unclipped)
    assert_close(loss, tensor([-2.4, -1.0, 1.1, 2.4, 1.5]))
    loss.sum().backward()
    # d(-ratio A)/d log_prob = -ratio A where unclipped, 0 where the clipped term is taken.
    assert_close(log_prob.grad, tensor([0.0, -1.0, 1.1, 0.0, 1.5]))
    assert old_log_prob.grad is None and advantage.grad is None


def test_clipped_surrogate_loss_equals_policy_gradient_at_ratio_one():
    log_prob = tensor([-0.5, -2.0], requires_grad=True)
    loss = policy_gradient.clipped_surrogate_loss(log_prob, log_prob.detach(), tensor([3.0, -2.0]), 0.1)
    assert_close(loss, tensor([-3.0, 2.0]))
    loss.sum().backward()
    assert_close(log_prob.grad, tensor([-3.0, 2.0]))


def test_clipped_surrogate_loss_with_epsilon_annealed_to_zero():
    # With epsilon 0 the clipped term is A itself: -min(ratio A, A), with gradient only where ratio A < A.
    log_prob, old_log_prob, advantage = surrogate_inputs()
    loss = policy_gradient.clipped_surrogate_loss(log_prob, old_log_prob, advantage, clip_epsilon=0.0)
    assert_close(loss, tensor([-2.0, -1.0, 1.1, 3.0, 1.5]))
    loss.sum().backward()
    assert_close(log_prob.grad, tensor([0.0, -1.0, 1.1, 0.0, 1.5]))


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(log_prob=tensor([[0.0] * 5])), r'log_prob must have shape \[B\]'),
        (dict(old_log_prob=tensor([0.0] * 4)), 'old_log_prob must have shape'),
        (dict(advantage=tensor([[1.0]] * 5)), 'advantage must have shape'),
        (dict(clip_epsilon=-0.1), r'clip_epsilon must lie in \[0, 1\)'),
        (dict(clip_epsilon=1.0), 'clip_epsilon must lie in'),
    ],
)
def test_clipped_surrogate_loss_rejects_bad_input(change, message):
    log_prob, old_log_prob, advantage = surrogate_inputs()
    kwargs = dict(log_prob=log_prob, old_log_prob=old_log_prob, advantage=advantage, clip_epsilon=0.2) | change
    with pytest.raises(ValueError, match=message):
        policy_gradient.clipped_surrogate_loss(**kwargs)


def test_approx_kl_low_variance_estimator():
    # log ratios [log 2, log 0.5, 0]: (2 - 1 - log 2) + (0.5 - 1 + log 2) + 0 = 0.5, mean over 3 = 1/6.
    old_log_prob = tensor([-1.0, -0.5, -2.0])
    log_prob = (old_log_prob + tensor([math.log(2.0), math.log(0.5), 0.0])).requires_grad_()
    kl = policy_gradient.approx_kl(log_prob, old_log_prob)
    assert kl.shape == ()
    assert_close(kl, tensor(1.0 / 6.0))
    assert not kl.requires_grad


def test_approx_kl_is_unbiased_for_categorical_policies():
    # Weighting each action's estimate by pi_old gives exactly KL(pi_old || pi).
    old_probs, probs = np.array([0.2, 0.5, 0.3]), np.array([0.4, 0.4, 0.2])
    exact_kl = np.sum(old_probs * np.log(old_probs / probs))
    per_action = np.array(
        [
            policy_gradient.approx_kl(tensor([math.log(p)]), tensor([math.log(q)])).item()
            for p, q in zip(probs, old_probs)
        ]
    )
    assert np.isclose(np.sum(old_probs * per_action), exact_kl)


def test_clip_fraction():
    log_prob, old_log_prob, _ = surrogate_inputs()
    # |ratio - 1| = [0.5, 0.5, 0.1, 0.3, 0.5]: four of five exceed 0.2; with epsilon 0.4, three of five.
    assert_close(policy_gradient.clip_fraction(log_prob, old_log_prob, 0.2), tensor(0.8))
    assert_close(policy_gradient.clip_fraction(log_prob, old_log_prob, 0.4), tensor(0.6))
    with pytest.raises(ValueError, match='clip_epsilon must lie in'):
        policy_gradient.clip_fraction(log_prob, old_log_prob, -0.2)


def test_explained_variance_by_hand():
    # targets [1, 2, 3, 4]: Var 5/3; errors [0.5, -0.5, 0.5, -0.5]: Var 1/3; 1 - (1/3) / (5/3) = 0.8.
    target = tensor([1.0, 2.0, 3.0, 4.0])
    prediction = tensor([0.5, 2.5, 2.5, 4.5], requires_grad=True)
    explained = policy_gradient.explained_variance(prediction, target)
    assert explained.shape == ()
    assert_close(explained, tensor(0.8))
    assert not explained.requires_grad
    assert policy_gradient.explained_variance(target, target).item() == 1.0
    assert math.isnan(policy_gradient.explained_variance(prediction, torch.full((4,), 2.0)).item())  # constant targets
    assert math.isnan(policy_gradient.explained_variance(tensor([1.0]), tensor([2.0])).item())
    with pytest.raises(ValueError, match='prediction must have shape'):
        policy_gradient.explained_variance(prediction[:3], target)


def value_inputs():
    return (
        tensor([1.0, 3.0, 0.0, 2.0], requires_grad=True),
        tensor([0.0, 2.0, 1.0, 2.0], requires_grad=True),
        tensor([2.0, 2.0, 3.0, 0.0], requires_grad=True),
    )


def test_clipped_value_loss_values_and_gradient():
    values, old_values, returns = value_inputs()
    loss = policy_gradient.clipped_value_loss(values, old_values, returns, clip_epsilon=0.5)
    # v_clipped = old + clip(v - old, -0.5, 0.5) = [0.5, 2.5, 0.5, 2.0].
    #   0.5 max((1 - 2)^2, (0.5 - 2)^2) = 0.5 * 2.25 -> clipped branch, no gradient
    #   0.5 max((3 - 2)^2, (2.5 - 2)^2) = 0.5        -> gradient v - R = 1
    #   0.5 max((0 - 3)^2, (0.5 - 3)^2) = 4.5        -> gradient -3
    #   0.5 max((2 - 0)^2, (2 - 0)^2)   = 2          -> gradient 2 (both branches agree)
    assert_close(loss, tensor([1.125, 0.5, 4.5, 2.0]))
    loss.sum().backward()
    assert_close(values.grad, tensor([0.0, 1.0, -3.0, 2.0]))
    assert old_values.grad is None and returns.grad is None


def test_unclipped_value_loss():
    values, old_values, returns = value_inputs()
    loss = policy_gradient.clipped_value_loss(values, old_values, returns, clip_epsilon=None)
    assert_close(loss, tensor([0.5, 0.5, 4.5, 2.0]))
    loss.sum().backward()
    assert_close(values.grad, tensor([-1.0, 1.0, -3.0, 2.0]))


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(values=tensor([[1.0, 3.0, 0.0, 2.0]])), r'values must have shape \[B\]'),
        (dict(returns=tensor([2.0, 2.0])), 'returns must have shape'),
        (dict(clip_epsilon=-0.5), 'clip_epsilon must be >= 0 or None'),
    ],
)
def test_clipped_value_loss_rejects_bad_input(change, message):
    values, old_values, returns = value_inputs()
    kwargs = dict(values=values, old_values=old_values, returns=returns, clip_epsilon=0.5) | change
    with pytest.raises(ValueError, match=message):
        policy_gradient.clipped_value_loss(**kwargs)


def test_entropy_loss_values_and_gradient():
    logits = tensor([[0.0, 0.0, 0.0], [0.0, math.log(3.0), -math.inf], [5.0, 5.0, -math.inf]], requires_grad=True)
    loss = policy_gradient.entropy_loss(logits)
    # Probabilities: uniform over 3; [0.25, 0.75, 0]; [0.5, 0.5, 0]. loss = sum p log p.
    expected = [-math.log(3.0), 0.25 * math.log(0.25) + 0.75 * math.log(0.75), -math.log(2.0)]
    assert_close(loss, tensor(expected))
    loss.sum().backward()
    # d(sum p log p)/dz_i = p_i (log p_i + H): zero for uniform rows, and for [0.25, 0.75, 0]:
    entropy = -expected[1]
    row = [0.25 * (math.log(0.25) + entropy), 0.75 * (math.log(0.75) + entropy), 0.0]
    assert_close(logits.grad, tensor([[0.0, 0.0, 0.0], row, [0.0, 0.0, 0.0]]))


def test_entropy_loss_rejects_bad_logits():
    with pytest.raises(ValueError, match=r'logits must have shape \[B, A\]'):
        policy_gradient.entropy_loss(tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match='logits must be a floating point'):
        policy_gradient.entropy_loss(torch.zeros(2, 3, dtype=torch.long))


def test_gaussian_policy_entropy_is_summed_over_action_dimensions():
    """Continuous PPO's entropy bonus: the diagonal Gaussian of `rollouts.policy_distribution`, exact per dimension."""
    log_std = tensor([[0.0, 0.0], [math.log(2.0), -1.0]], requires_grad=True)
    output = GaussianActorCriticOutput(mean=tensor([[5.0, -3.0], [0.0, 1.0]]), log_std=log_std, value=tensor([0.0, 0.0]))
    entropy = rollouts.policy_distribution(output).entropy()
    def per_dim(sigma):  # The entropy of N(mu, sigma^2): 0.5 log(2 pi e sigma^2), whatever mu.
        return 0.5 * math.log(2.0 * math.pi * math.e * sigma**2)

    assert_close(entropy, tensor([2 * per_dim(1.0), per_dim(2.0) + per_dim(math.exp(-1.0))]))
    entropy.sum().backward()
    assert_close(log_std.grad, torch.ones_like(log_std))


def pg_inputs():
    # Probabilities [0.5, 0.5] and [0.25, 0.75].
    logits = tensor([[0.0, 0.0], [0.0, math.log(3.0)]], requires_grad=True)
    return logits, torch.tensor([1, 0]), tensor([2.0, -1.0], requires_grad=True)


def test_policy_gradient_loss_values_and_gradient():
    logits, actions, advantages = pg_inputs()
    loss = policy_gradient.policy_gradient_loss(logits, actions, advantages)
    # -log pi(a) A = [-log(0.5) * 2, -log(0.25) * -1].
    assert_close(loss, tensor([2.0 * math.log(2.0), -math.log(4.0)]))
    loss.sum().backward()
    # d/dz = -A (onehot(a) - pi) = [-2 ([0, 1] - 0.5), 1 ([1, 0] - [0.25, 0.75])].
    assert_close(logits.grad, tensor([[1.0, -1.0], [0.75, -0.75]]))
    assert advantages.grad is None


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(logits=tensor([0.0, 0.0])), 'logits must have shape'),
        (dict(actions=torch.tensor([1, 0, 1])), 'actions must have shape'),
        (dict(actions=tensor([1.0, 0.0])), 'actions must hold integer'),
        (dict(actions=torch.tensor([2, 0])), r'actions must lie in \[0, 2\)'),
        (dict(advantages=tensor([2.0])), 'advantages must have shape'),
    ],
)
def test_policy_gradient_loss_rejects_bad_input(change, message):
    logits, actions, advantages = pg_inputs()
    kwargs = dict(logits=logits, actions=actions, advantages=advantages) | change
    with pytest.raises(ValueError, match=message):
        policy_gradient.policy_gradient_loss(**kwargs)


def test_normalize_advantages():
    # mean 2.5, population std sqrt(1.25).
    normalized = policy_gradient.normalize_advantages(tensor([1.0, 2.0, 3.0, 4.0]), eps=1e-12)
    assert_close(normalized, tensor([-1.5, -0.5, 0.5, 1.5]) / math.sqrt(1.25))
    # Statistics are over every element of a [T, B] rollout, and equal advantages become zeros.
    rollout = tensor([[1.0, 2.0], [3.0, 4.0]])
    assert_close(policy_gradient.normalize_advantages(rollout), normalized.reshape(2, 2), atol=1e-7, rtol=0)
    assert_close(policy_gradient.normalize_advantages(tensor([3.0, 3.0])), tensor([0.0, 0.0]))


def test_normalize_advantages_rejects_bad_input():
    with pytest.raises(ValueError, match='at least one element'):
        policy_gradient.normalize_advantages(tensor([]))
    with pytest.raises(ValueError, match='eps must be > 0'):
        policy_gradient.normalize_advantages(tensor([1.0, 2.0]), eps=0.0)


# --- Sample Factory's variants (its APPO, Petrenko et al. 2020) -------------------------------------------------------


def sample_factory_surrogate(ratio, advantage, clip_epsilon):
    """Sample Factory's clipped surrogate of ratios given as such (log_prob = log ratio, old_log_prob = 0), mean."""
    log_prob = torch.log(ratio.detach()).requires_grad_(ratio.requires_grad)
    loss = policy_gradient.clipped_surrogate_loss(
        log_prob, torch.zeros_like(log_prob), advantage, clip_epsilon, ratio_bounds=(0.05, 20.0), reciprocal_clip=True
    )
    return loss.mean(), log_prob


def test_sample_factorys_surrogate_clamps_the_ratio_to_its_bounds_then_clips_it_reciprocally():
    eps = 0.25  # clip range [1/1.25, 1.25] = [0.8, 1.25]
    ratio = tensor([0.01, 0.5, 0.9, 1.1, 1.5, 30.0, 0.5, 1.5])
    advantage = tensor([1.0, 1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0])
    # min(r A, clip(r) A) per sample with r clamped to [0.05, 20] first:
    # A > 0: 0.05 -> min(0.05, 0.8) = 0.05; 0.5 -> 0.5; 0.9 -> 0.9; 1.1 -> 1.1; 1.5 -> min(1.5, 1.25) = 1.25
    # A < 0: 30 -> 20 -> min(-20, -1.25) = -20; 0.5 -> min(-0.5, -0.8) = -0.8; 1.5 -> min(-1.5, -1.25) = -1.5
    expected = -(0.05 + 0.5 + 0.9 + 1.1 + 1.25 - 20.0 - 0.8 - 1.5) / 8
    assert sample_factory_surrogate(ratio, advantage, eps)[0].item() == pytest.approx(expected)
    # The lower bound is 1/(1+eps), not 1-eps: a ratio of 0.78 with A < 0 is clipped at 0.8 (1 - eps would be 0.75).
    assert sample_factory_surrogate(tensor([0.78]), tensor([-1.0]), eps)[0].item() == pytest.approx(0.8)
    # Outside [0.05, 20] the ratio is a constant: no gradient. Inside, d(-r A / 3)/d log r = -r A / 3.
    loss, log_prob = sample_factory_surrogate(tensor([0.01, 25.0, 1.0], requires_grad=True), tensor([1.0, -1.0, 1.0]), eps)
    loss.backward()
    assert log_prob.grad.tolist() == pytest.approx([0.0, 0.0, -1 / 3])


def test_clip_fraction_of_the_reciprocal_clip_range():
    # eps 0.25: [0.8, 1.25]; ratios 0.78 and 1.3 lie outside it, 0.8, 1.0 and 1.25 on or inside it. PPO's own range
    # [0.75, 1.25] holds 0.78 too.
    log_prob = torch.log(tensor([0.78, 0.8, 1.0, 1.25, 1.3]))
    fraction = policy_gradient.clip_fraction(log_prob, torch.zeros(5, dtype=torch.float64), 0.25, reciprocal_clip=True)
    assert fraction.item() == pytest.approx(2 / 5)
    assert policy_gradient.clip_fraction(log_prob, torch.zeros(5, dtype=torch.float64), 0.25).item() == pytest.approx(1 / 5)


def test_value_loss_without_the_half_factor():
    values = tensor([3.0, 3.0, 0.5, -2.0])
    old = tensor([1.0, 1.0, 1.0, 0.0])
    targets = tensor([5.0, 0.0, 1.0, -2.5])
    # v_clip = old + clamp(v - old, -0.5, 0.5) = [1.5, 1.5, 0.5, -0.5]
    # max((v - R)^2, (v_clip - R)^2) = [max(4, 12.25), max(9, 2.25), max(0.25, 0.25), max(0.25, 4)] = [12.25, 9, 0.25, 4]
    loss = policy_gradient.clipped_value_loss(values, old, targets, 0.5, half=False)
    assert loss.tolist() == pytest.approx([12.25, 9.0, 0.25, 4.0])
    assert policy_gradient.clipped_value_loss(values, old, targets, 0.5).tolist() == pytest.approx([6.125, 4.5, 0.125, 2.0])
    # Unclipped: the plain squared error, 1.0 for 1.2 against 2.2.
    assert policy_gradient.clipped_value_loss(tensor([1.2]), tensor([1.0]), tensor([2.2]), None, half=False).item() == pytest.approx(1.0)


def test_sample_factorys_advantage_normalisation_divides_by_the_sample_std_floored_at_eps():
    advantages = tensor([1.0, 2.0, 3.0, 6.0])
    mean, std = 3.0, math.sqrt(((4 + 1 + 0 + 9) / 3))  # sample std (n - 1)
    assert_close(policy_gradient.normalize_advantages(advantages, 1e-7, sample_std_floor=True), (advantages - mean) / std)
    # Equal advantages: std 0 is replaced by 1e-7, so they become 0, not NaN; and so does a single advantage.
    assert torch.equal(policy_gradient.normalize_advantages(torch.full((3,), 2.0), 1e-7, sample_std_floor=True), torch.zeros(3))
    assert torch.equal(policy_gradient.normalize_advantages(torch.tensor([5.0]), 1e-7, sample_std_floor=True), torch.zeros(1))


def test_categorical_kl_by_hand_and_its_gradient_reaches_the_new_logits_only():
    # pi = softmax([0, 0]) = [0.5, 0.5]; pi_old = softmax([0, log 3]) = [0.25, 0.75]:
    # KL = 0.5 log(0.5 / 0.25) + 0.5 log(0.5 / 0.75) = 0.5 log 2 + 0.5 log(2/3) = 0.5 log(4/3).
    logits = tensor([[0.0, 0.0], [1.0, -2.0]], requires_grad=True)
    old_logits = tensor([[0.0, math.log(3.0)], [1.0, -2.0]], requires_grad=True)
    kl = policy_gradient.categorical_kl(logits, old_logits)
    assert kl.tolist() == pytest.approx([0.5 * math.log(4 / 3), 0.0])
    kl.sum().backward()
    assert old_logits.grad is None
    # d KL / d logits = pi * (log pi - log pi_old - KL): row 0: 0.5 * (log(0.5/0.25) - k), 0.5 * (log(0.5/0.75) - k).
    k = 0.5 * math.log(4 / 3)
    assert logits.grad[0].tolist() == pytest.approx([0.5 * (math.log(2) - k), 0.5 * (math.log(2 / 3) - k)])
    with pytest.raises(ValueError, match='old_logits must have the shape of logits'):
        policy_gradient.categorical_kl(logits, old_logits[:1])


def test_the_reciprocal_clip_takes_any_nonnegative_epsilon():
    # eps 1.5: [0.4, 2.5]; ratio 3 with A = 1 is clipped to 2.5, ratio 0.3 with A = -1 to 0.4.
    log_prob = torch.log(tensor([3.0, 0.3]))
    loss = policy_gradient.clipped_surrogate_loss(log_prob, torch.zeros(2, dtype=torch.float64), tensor([1.0, -1.0]), 1.5, reciprocal_clip=True)
    assert loss.tolist() == pytest.approx([-2.5, 0.4])
    with pytest.raises(ValueError, match='clip_epsilon must lie in'):
        policy_gradient.clipped_surrogate_loss(log_prob, torch.zeros(2, dtype=torch.float64), tensor([1.0, -1.0]), 1.5)
    with pytest.raises(ValueError, match='clip_epsilon must be >= 0'):
        policy_gradient.clip_fraction(log_prob, torch.zeros(2, dtype=torch.float64), -0.1, reciprocal_clip=True)
