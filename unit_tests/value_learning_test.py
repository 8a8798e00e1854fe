"""Tests for deep_rl_zoo.value_learning: expected numbers are worked out by hand in the comments."""

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import value_learning


def tensor(values, dtype=torch.float64, requires_grad=False):
    return torch.tensor(values, dtype=dtype, requires_grad=requires_grad)


def test_l2_loss_is_half_square():
    assert_close(value_learning.l2_loss(tensor([-2.0, 0.5, 3.0])), tensor([2.0, 0.125, 4.5]))


@pytest.mark.parametrize(
    'delta, x, expected',
    [
        # |x| <= 1: 0.5 x^2; outside: |x| - 0.5.
        (1.0, [-3.0, -1.0, -0.5, 0.0, 0.5, 2.0], [2.5, 0.5, 0.125, 0.0, 0.125, 1.5]),
        # |x| <= 2: 0.5 x^2; outside: 2 (|x| - 1).
        (2.0, [-3.0, 1.0, 2.0, 5.0], [4.0, 0.5, 2.0, 8.0]),
    ],
)
def test_huber_loss_values(delta, x, expected):
    assert_close(value_learning.huber_loss(tensor(x), delta), tensor(expected))


@pytest.mark.parametrize(
    'delta, x, expected_grad',
    [
        (1.0, [-3.0, -0.5, 0.0, 0.5, 2.0], [-1.0, -0.5, 0.0, 0.5, 1.0]),
        (2.0, [-3.0, 1.0, 5.0], [-2.0, 1.0, 2.0]),
    ],
)
def test_huber_gradient_is_error_clipped_to_delta(delta, x, expected_grad):
    x = tensor(x, requires_grad=True)
    value_learning.huber_loss(x, delta).sum().backward()
    assert_close(x.grad, tensor(expected_grad))


def test_huber_rejects_non_positive_delta():
    with pytest.raises(ValueError, match='delta'):
        value_learning.huber_loss(tensor([1.0]), delta=0.0)


# A batch of 3 transitions with 3 actions, shared by the Q-learning tests.
Q_TM1 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.5, -1.0, 2.0]]
A_TM1 = [0, 2, 1]
R_T = [1.0, 0.0, -1.0]
DISCOUNT_T = [0.9, 0.0, 0.5]  # The second transition ends its episode.
Q_T = [[0.0, 10.0, 5.0], [100.0, 0.0, 0.0], [-2.0, -4.0, -1.0]]
Q_T_SELECTOR = [[0.0, 1.0, 2.0], [3.0, 2.0, 1.0], [1.0, 0.0, 0.0]]  # argmax: [2, 0, 0].


def qlearning_inputs():
    return (
        tensor(Q_TM1, requires_grad=True),
        torch.tensor(A_TM1),
        tensor(R_T, requires_grad=True),
        tensor(DISCOUNT_T),
        tensor(Q_T, requires_grad=True),
    )


def test_qlearning_targets_and_losses():
    q_tm1, a_tm1, r_t, discount_t, q_t = qlearning_inputs()
    # target = r + d * max q_t = [1 + 0.9 * 10, 0 + 0 * 100, -1 + 0.5 * -1] = [10, 0, -1.5]
    # q_tm1[a_tm1] = [1, 6, -1], so td_error = [9, -6, -0.5].
    l2 = value_learning.qlearning(q_tm1, a_tm1, r_t, discount_t, q_t, loss='l2')
    assert_close(l2.extra.target, tensor([10.0, 0.0, -1.5]))
    assert_close(l2.extra.td_error, tensor([9.0, -6.0, -0.5]))
    assert_close(l2.loss, tensor([40.5, 18.0, 0.125]))
    huber = value_learning.qlearning(q_tm1, a_tm1, r_t, discount_t, q_t, loss='huber', huber_delta=1.0)
    assert_close(huber.loss, tensor([8.5, 5.5, 0.125]))


def test_qlearning_gradient_flows_only_into_taken_online_values():
    q_tm1, a_tm1, r_t, discount_t, q_t = qlearning_inputs()
    output = value_learning.qlearning(q_tm1, a_tm1, r_t, discount_t, q_t)
    output.loss.sum().backward()
    # d huber(target - q) / dq = -clip(td_error, -1, 1) = [-1, 1, 0.5], at the taken action only.
    assert_close(q_tm1.grad, tensor([[-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.5, 0.0]]))
    assert q_t.grad is None and r_t.grad is None
    assert not output.extra.target.requires_grad and not output.extra.td_error.requires_grad


def test_qlearning_accepts_int32_actions():
    q_tm1, a_tm1, r_t, discount_t, q_t = qlearning_inputs()
    output = value_learning.qlearning(q_tm1, a_tm1.int(), r_t, discount_t, q_t, loss='l2')
    assert_close(output.loss, tensor([40.5, 18.0, 0.125]))


def test_double_qlearning_selects_with_online_and_evaluates_with_target():
    q_tm1, a_tm1, r_t, discount_t, q_t_value = qlearning_inputs()
    q_t_selector = tensor(Q_T_SELECTOR, requires_grad=True)
    # Selected actions [2, 0, 0]: target = [1 + 0.9 * 5, 0 + 0 * 100, -1 + 0.5 * -2] = [5.5, 0, -2].
    # td_error = target - [1, 6, -1] = [4.5, -6, -1].
    l2 = value_learning.double_qlearning(q_tm1, a_tm1, r_t, discount_t, q_t_value, q_t_selector, loss='l2')
    assert_close(l2.extra.target, tensor([5.5, 0.0, -2.0]))
    assert_close(l2.extra.td_error, tensor([4.5, -6.0, -1.0]))
    assert_close(l2.loss, tensor([10.125, 18.0, 0.5]))
    huber = value_learning.double_qlearning(q_tm1, a_tm1, r_t, discount_t, q_t_value, q_t_selector)
    assert_close(huber.loss, tensor([4.0, 5.5, 0.5]))
    huber.loss.sum().backward()
    assert_close(q_tm1.grad, tensor([[-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    assert q_t_value.grad is None and q_t_selector.grad is None


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(q_tm1=tensor([1.0, 2.0])), 'q_tm1 must have shape'),
        (dict(q_tm1=torch.ones(3, 3, dtype=torch.long)), 'q_tm1 must be a floating point'),
        (dict(a_tm1=tensor([0.0, 2.0, 1.0])), 'a_tm1 must hold integer'),
        (dict(a_tm1=torch.tensor([0, 3, 1])), r'a_tm1 must lie in \[0, 3\)'),
        (dict(a_tm1=torch.tensor([0, -1, 1])), 'a_tm1 must lie in'),
        (dict(r_t=tensor([1.0, 2.0])), 'r_t must have shape'),
        (dict(discount_t=tensor([[0.9, 0.9, 0.9]])), 'discount_t must have shape'),
        (dict(q_t=tensor([[1.0, 2.0]] * 3)), 'q_t must have shape'),
        (dict(loss='mse'), 'loss must be one of'),
        (dict(huber_delta=-1.0), 'delta'),
    ],
)
def test_qlearning_rejects_bad_input(change, message):
    q_tm1, a_tm1, r_t, discount_t, q_t = qlearning_inputs()
    kwargs = dict(q_tm1=q_tm1, a_tm1=a_tm1, r_t=r_t, discount_t=discount_t, q_t=q_t) | change
    with pytest.raises(ValueError, match=message):
        value_learning.qlearning(**kwargs)


def test_double_qlearning_rejects_mismatched_selector():
    q_tm1, a_tm1, r_t, discount_t, q_t = qlearning_inputs()
    with pytest.raises(ValueError, match='q_t_selector must have shape'):
        value_learning.double_qlearning(q_tm1, a_tm1, r_t, discount_t, q_t, q_t[:2])
