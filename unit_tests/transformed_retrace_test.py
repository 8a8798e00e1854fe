"""Transformed Retrace with a greedy target policy (`transformed_returns.transformed_retrace_targets`) on a
hand-worked 3-step sequence (eps = 0: h(x) = sign(x)(sqrt(|x| + 1) - 1), h^-1(y) = sign(y)((|y| + 1)^2 - 1))."""

import math

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo.transformed_returns import transformed_retrace_targets


def h(x):
    return math.copysign(math.sqrt(abs(x) + 1) - 1, x)


# Target network (h-space): h^-1 gives Q(x_0) = [3, 0], Q(x_1) = [0, 8], Q(x_2) = [3, 1.25], Q(x_3) = [8, 0].
Q_TARGET = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 0.5], [2.0, 0.0]]).unsqueeze(1)
# Online network: greedy actions 0, 1, 0, 1 (at x_3 it picks action 1, whose target value is 0, not the max 8).
Q_ONLINE = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]).unsqueeze(1)
ACTIONS = torch.tensor([[0], [1], [1]])
REWARDS = torch.tensor([[1.0], [2.0], [4.0]])


def test_three_steps_by_hand_with_truncated_traces():
    discounts, mask = torch.full((3, 1), 0.5), torch.ones(3, 1, dtype=torch.bool)
    # c_s = lambda min(1, pi / mu) with behaviour probabilities mu(a_1) = 0.55, mu(a_2) = 0.05: a_1 is greedy (pi = 1),
    # c_1 = 0.8 min(1, 1 / 0.55) = 0.8; a_2 is not (pi = 0), c_2 = 0.
    c1, c2 = 0.8 * min(1.0, 1.0 / 0.55), 0.8 * min(1.0, 0.0 / 0.05)
    g2 = 4.0 + 0.5 * 0.0  # bootstraps from Q(x_3, pi(x_3) = 1) = 0
    g1 = 2.0 + 0.5 * (3.0 + c2 * (g2 - 1.25))  # Q(x_2, pi = 0) = 3, Q(x_2, a_2) = 1.25
    g0 = 1.0 + 0.5 * (8.0 + c1 * (g1 - 8.0))  # Q(x_1, pi = 1) = 8 = Q(x_1, a_1)
    assert (g0, g1, g2) == pytest.approx((3.2, 3.5, 4.0))
    # The same from the sum form: Q(x_0, a_0) + sum_s gamma^s (prod c) delta_s, deltas 1 + 4 - 3, 2 + 1.5 - 8, 4 - 1.25.
    assert 3.0 + 2.0 + 0.5 * c1 * -4.5 + 0.25 * c1 * c2 * 2.75 == pytest.approx(g0)
    targets = transformed_retrace_targets(Q_ONLINE, Q_TARGET, ACTIONS, REWARDS, discounts, mask, retrace_lambda=0.8, eps=0.0)
    assert_close(targets, torch.tensor([[h(3.2)], [h(3.5)], [h(4.0)]]))


def test_a_terminal_and_padding_stop_the_trace_and_lambda_zero_is_one_step():
    discounts = torch.tensor([[0.5], [0.0], [0.0]])  # step 1 is terminal; step 2 is padding
    mask = torch.tensor([[True], [True], [False]])
    targets = transformed_retrace_targets(Q_ONLINE, Q_TARGET, ACTIONS, REWARDS, discounts, mask, retrace_lambda=0.8, eps=0.0)
    # G_1 = 2 (terminal); G_0 = 1 + 0.5 (8 + 0.8 (2 - 8)) = 2.6; padding's target is 0.
    assert_close(targets, torch.tensor([[h(2.6)], [h(2.0)], [0.0]]))
    one_step = transformed_retrace_targets(Q_ONLINE, Q_TARGET, ACTIONS, REWARDS, torch.full((3, 1), 0.5), torch.ones(3, 1, dtype=torch.bool), 0.0, eps=0.0)
    # G_t = r_t + 0.5 Q(x_t+1, pi(x_t+1)): 1 + 4, 2 + 1.5, 4 + 0.
    assert_close(one_step, torch.tensor([[h(5.0)], [h(3.5)], [h(4.0)]]))


def test_bad_shapes_and_lambda_are_refused():
    discounts, mask = torch.full((3, 1), 0.5), torch.ones(3, 1, dtype=torch.bool)
    with pytest.raises(ValueError, match='--retrace_lambda'):
        transformed_retrace_targets(Q_ONLINE, Q_TARGET, ACTIONS, REWARDS, discounts, mask, 1.5)
    with pytest.raises(ValueError, match=r'\[T \+ 1, B, A\]'):
        transformed_retrace_targets(Q_ONLINE[:3], Q_TARGET[:3], ACTIONS, REWARDS, discounts, mask, 0.9)
