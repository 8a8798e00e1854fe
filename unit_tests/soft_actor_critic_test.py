"""Tests for deep_rl_zoo.soft_actor_critic (discrete SAC): expected numbers are worked out by hand in the comments."""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import soft_actor_critic as sac

LN2, LN3 = math.log(2.0), math.log(3.0)
ALPHA = 0.5


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# Policies [0.25, 0.25, 0.5] (entropy 1.5 ln 2), uniform (ln 3) and [0.5, 0.5, 0] with an impossible action (ln 2).
LOGITS = [[0.0, 0.0, LN2], [0.0, 0.0, 0.0], [0.0, 0.0, -math.inf]]
ENTROPY = [1.5 * LN2, LN3, LN2]
Q1 = [[1.0, 2.0, 3.0], [0.0, -1.0, 2.0], [4.0, 1.0, 100.0]]
Q2 = [[2.0, 1.0, 4.0], [1.0, -2.0, 0.0], [3.0, 2.0, -100.0]]
# min(Q1, Q2) = [[1, 1, 3], [0, -2, 0], [3, 1, -100]]; its expectation under pi is [2, -2/3, 2] (the max would
# be [3, 0, 3]), so V = E_pi[min Q] + alpha H:
SOFT_VALUE = [2.0 + 0.75 * LN2, -2.0 / 3.0 + 0.5 * LN3, 2.0 + 0.5 * LN2]


def test_soft_state_value_is_an_expectation_not_a_max():
    value = sac.soft_state_value(tensor(LOGITS), torch.minimum(tensor(Q1), tensor(Q2)), ALPHA)
    assert_close(value, tensor(SOFT_VALUE))
    # With alpha 0 it is E_pi[Q]; with a one-element tensor alpha it is the same as with the number.
    assert_close(sac.soft_state_value(tensor(LOGITS), tensor(Q1), 0.0), tensor([2.25, 1.0 / 3.0, 2.5]))
    with_tensor_alpha = sac.soft_state_value(tensor(LOGITS), tensor(Q1), tensor([ALPHA]))
    assert_close(with_tensor_alpha, sac.soft_state_value(tensor(LOGITS), tensor(Q1), ALPHA))


def test_soft_state_value_accepts_log_probabilities():
    log_probs = torch.log_softmax(tensor(LOGITS), dim=1)
    assert_close(sac.soft_state_value(log_probs, torch.minimum(tensor(Q1), tensor(Q2)), ALPHA), tensor(SOFT_VALUE))


def critic_inputs():
    return dict(
        q1_tm1=tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0], [0.0, -1.0, 0.0]], requires_grad=True),
        q2_tm1=tensor([[1.0, 1.0, 1.0], [-1.0, 0.0, 0.0], [0.0, 2.0, 0.0]], requires_grad=True),
        a_tm1=torch.tensor([2, 0, 1]),
        r_t=tensor([1.0, 0.0, -1.0]),
        discount_t=tensor([0.9, 0.0, 0.5]),
        logits_t=tensor(LOGITS, requires_grad=True),
        q1_t=tensor(Q1, requires_grad=True),
        q2_t=tensor(Q2, requires_grad=True),
        alpha=ALPHA,
    )


def test_soft_q_learning_values_and_gradients():
    inputs = critic_inputs()
    output = sac.soft_q_learning(**inputs)
    # target = r + d V(s_t) = [1 + 0.9 (2 + 0.75 ln 2), 0 (episode ended), -1 + 0.5 (2 + 0.5 ln 2)].
    target = [2.8 + 0.675 * LN2, 0.0, 0.25 * LN2]
    q1_a, q2_a = [2.0, 3.0, -1.0], [1.0, -1.0, 2.0]
    td_1 = [t - q for t, q in zip(target, q1_a)]
    td_2 = [t - q for t, q in zip(target, q2_a)]
    assert_close(output.extra.target, tensor(target))
    assert_close(output.extra.td_error_1, tensor(td_1))
    assert_close(output.extra.td_error_2, tensor(td_2))
    assert_close(output.loss, tensor([0.5 * a**2 + 0.5 * b**2 for a, b in zip(td_1, td_2)]))
    output.loss.sum().backward()
    # Each critic's gradient is -td_error at the action taken, 0 elsewhere; the target gets none.
    expected_1, expected_2 = np.zeros((3, 3)), np.zeros((3, 3))
    expected_1[[0, 1, 2], [2, 0, 1]] = np.negative(td_1)
    expected_2[[0, 1, 2], [2, 0, 1]] = np.negative(td_2)
    assert_close(inputs['q1_tm1'].grad, tensor(expected_1))
    assert_close(inputs['q2_tm1'].grad, tensor(expected_2))
    assert all(inputs[name].grad is None for name in ('logits_t', 'q1_t', 'q2_t'))


def test_soft_q_learning_target_takes_the_min_of_both_target_critics():
    # Swapping the target critics leaves the target unchanged; replacing both by Q1 raises it.
    inputs = critic_inputs()
    swapped = sac.soft_q_learning(**(inputs | dict(q1_t=inputs['q2_t'], q2_t=inputs['q1_t'])))
    assert_close(swapped.extra.target, sac.soft_q_learning(**inputs).extra.target)
    only_q1 = sac.soft_q_learning(**(inputs | dict(q2_t=inputs['q1_t'])))
    # E_pi[Q1] - E_pi[min Q] = [0.25, 1, 0.5] at s_t, times the discounts [0.9, 0, 0.5].
    assert_close(only_q1.extra.target - swapped.extra.target, tensor([0.225, 0.0, 0.25]))


def test_soft_policy_loss_values_and_gradients():
    logits, q1, q2 = tensor(LOGITS, requires_grad=True), tensor(Q1, requires_grad=True), tensor(Q2, requires_grad=True)
    output = sac.soft_policy_loss(logits, q1, q2, ALPHA)
    # sum_a pi [alpha log pi - min Q] = -alpha H - E_pi[min Q] = -V(s).
    assert_close(output.loss, -tensor(SOFT_VALUE))
    assert_close(output.extra.entropy, tensor(ENTROPY))
    output.loss.sum().backward()
    # d/dz_i sum_a pi_a f_a with f = alpha log pi - min Q is pi_i (f_i - E_pi f) (the alpha d log pi term sums
    # to 0). Row 0: f = [-ln 2 - 1, -ln 2 - 1, -0.5 ln 2 - 3], E_pi f = -0.75 ln 2 - 2.
    # Row 2: f = [-0.5 ln 2 - 3, -0.5 ln 2 - 1, -], E_pi f = -0.5 ln 2 - 2; the impossible action gets 0.
    row_0 = [0.25 * (1.0 - 0.25 * LN2), 0.25 * (1.0 - 0.25 * LN2), 0.5 * (0.25 * LN2 - 1.0)]
    pi_1, f_1 = np.full(3, 1.0 / 3.0), 0.5 * np.log(np.full(3, 1.0 / 3.0)) - np.array([0.0, -2.0, 0.0])
    row_1 = pi_1 * (f_1 - pi_1 @ f_1)
    assert_close(logits.grad, tensor([row_0, row_1.tolist(), [-0.5, 0.5, 0.0]]))
    # The critics are constants of the policy loss.
    assert q1.grad is None and q2.grad is None


def test_soft_policy_loss_detaches_a_learned_alpha():
    log_alpha = tensor(math.log(ALPHA), requires_grad=True)
    output = sac.soft_policy_loss(tensor(LOGITS), tensor(Q1), tensor(Q2), log_alpha.exp())
    assert_close(output.loss, -tensor(SOFT_VALUE))
    assert not output.loss.requires_grad


def test_temperature_loss_values_and_gradient():
    logits, log_alpha = tensor(LOGITS, requires_grad=True), tensor([math.log(ALPHA)], requires_grad=True)
    target_entropy = sac.discrete_target_entropy(3)
    output = sac.temperature_loss(logits, log_alpha, target_entropy)
    # -log alpha sum_a pi (log pi + target), the expectation over pi written out in numpy; -inf logits give 0.
    probs = np.array([[0.25, 0.25, 0.5], [1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0]])
    log_probs = np.log(np.where(probs > 0, probs, 1.0))
    expected = -math.log(ALPHA) * (probs * (log_probs + target_entropy)).sum(axis=1)
    assert_close(output.loss, tensor(expected))
    assert_close(output.loss, math.log(ALPHA) * (tensor(ENTROPY) - target_entropy))
    assert output.loss.shape == (3,)
    assert_close(output.extra.entropy, tensor(ENTROPY))
    output.loss.mean().backward()
    # d/d log_alpha = mean(H) - target = (2.5 ln 2 + ln 3) / 3 - 0.98 ln 3 < 0: alpha rises while H is too low.
    assert_close(log_alpha.grad, tensor([(2.5 * LN2 + LN3) / 3.0 - 0.98 * LN3]))
    assert log_alpha.grad.item() < 0
    # No gradient reaches the policy.
    assert logits.grad is None


def test_temperature_loss_weights_by_pi():
    # For pi = [0.9, 0.1] the pi-weighted loss is log_alpha (H - target); the unweighted sum over actions,
    # sum_a (log pi(a) + target), would be a different number.
    probs = [0.9, 0.1]
    logits = tensor([[math.log(p) for p in probs]])
    entropy = -sum(p * math.log(p) for p in probs)
    output = sac.temperature_loss(logits, tensor(1.0), 0.3)
    assert_close(output.loss, tensor([entropy - 0.3]))
    unweighted = -sum(math.log(p) + 0.3 for p in probs)
    assert not math.isclose(output.loss.item(), unweighted)


def test_discrete_target_entropy():
    assert math.isclose(sac.discrete_target_entropy(6), 0.98 * math.log(6.0))
    assert math.isclose(sac.discrete_target_entropy(2, ratio=0.7), 0.7 * LN2)
    assert sac.discrete_target_entropy(1) == 0.0


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(q1_tm1=tensor([0.0, 1.0, 2.0])), r'q1_tm1 must have shape \[B, A\]'),
        (dict(q1_tm1=torch.zeros(3, 3, dtype=torch.long)), 'q1_tm1 must be a floating point'),
        (dict(q2_tm1=tensor([[0.0, 1.0]] * 3)), r'q2_tm1 must have shape \[B, A\]=\(3, 3\) like q1_tm1'),
        (dict(logits_t=tensor([[0.0] * 3] * 2)), 'logits_t must have shape'),
        (dict(q1_t=tensor([[0.0] * 4] * 3)), 'q1_t must have shape'),
        (dict(q2_t=tensor([0.0] * 3)), 'q2_t must have shape'),
        (dict(a_tm1=torch.tensor([0, 1])), r'a_tm1 must have shape \[B\]=\(3,\)'),
        (dict(a_tm1=tensor([0.0, 1.0, 2.0])), 'a_tm1 must hold integer'),
        (dict(a_tm1=torch.tensor([0, 3, 1])), r'a_tm1 must lie in \[0, 3\)'),
        (dict(r_t=tensor([[1.0]] * 3)), 'r_t must have shape'),
        (dict(discount_t=tensor([0.9])), 'discount_t must have shape'),
        (dict(alpha=-0.1), 'alpha must be a number >= 0'),
        (dict(alpha=tensor([0.1, 0.2])), 'alpha must be a one-element'),
        (dict(alpha='0.1'), 'alpha must be a number'),
    ],
)
def test_soft_q_learning_rejects_bad_input(change, message):
    with pytest.raises(ValueError, match=message):
        sac.soft_q_learning(**(critic_inputs() | change))


def test_policy_value_and_temperature_losses_reject_bad_input():
    logits, q = tensor(LOGITS), tensor(Q1)
    with pytest.raises(ValueError, match=r'q must have shape \[B, A\]=\(3, 3\) like logits'):
        sac.soft_state_value(logits, q[:, :2], ALPHA)
    with pytest.raises(ValueError, match=r'logits must have shape \[B, A\]'):
        sac.soft_policy_loss(logits[0], q, q, ALPHA)
    with pytest.raises(ValueError, match='q2 must have shape'):
        sac.soft_policy_loss(logits, q, q[:2], ALPHA)
    with pytest.raises(ValueError, match='alpha must be a number >= 0'):
        sac.soft_policy_loss(logits, q, q, -1.0)
    with pytest.raises(ValueError, match='log_alpha must be a one-element floating point tensor'):
        sac.temperature_loss(logits, tensor([0.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match='log_alpha must be a one-element'):
        sac.temperature_loss(logits, 0.0, 1.0)
    with pytest.raises(ValueError, match='target_entropy must be a finite number'):
        sac.temperature_loss(logits, tensor(0.0), math.nan)
    with pytest.raises(ValueError, match='num_actions must be an integer >= 1'):
        sac.discrete_target_entropy(0)
    with pytest.raises(ValueError, match=r'ratio must lie in \[0, 1\]'):
        sac.discrete_target_entropy(4, ratio=1.5)
