"""Value rescaling h and its inverse, R2D2's transformed n-step double-Q targets and sequence priorities, against
numbers worked out by hand (in comments)."""

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo.transformed_returns import sequence_priorities, signed_hyperbolic, signed_parabolic, transformed_n_step_q_targets


def test_h_by_hand():
    # eps = 1e-3: h(3) = sqrt(4) - 1 + 0.003; h(-8) = -(sqrt(9) - 1) - 0.008; h(0.44) = sqrt(1.44) - 1 + 0.00044.
    x = torch.tensor([3.0, -8.0, 0.0, 0.44], dtype=torch.float64)
    assert_close(signed_hyperbolic(x, 1e-3), torch.tensor([1.003, -2.008, 0.0, 0.20044], dtype=torch.float64))
    assert_close(signed_hyperbolic(x, 0.0), torch.tensor([1.0, -2.0, 0.0, 0.2], dtype=torch.float64))


def test_h_inverse_by_hand():
    # h^-1(1.003), eps = 1e-3: sqrt(1 + 0.004 (1.003 + 1.001)) = sqrt(1.008016) = 1.004; ((1.004 - 1) / 0.002)^2 - 1 = 3.
    y = torch.tensor([1.003, -2.008, 0.0], dtype=torch.float64)
    assert_close(signed_parabolic(y, 1e-3), torch.tensor([3.0, -8.0, 0.0], dtype=torch.float64))
    # eps = 0: (|y| + 1)^2 - 1.
    assert_close(signed_parabolic(torch.tensor([1.0, -2.0, 3.0]), 0.0), torch.tensor([3.0, -8.0, 15.0]))


@pytest.mark.parametrize('eps', [0.0, 1e-3, 0.1])
def test_h_and_its_inverse_round_trip_over_many_scales(eps):
    x = torch.cat([torch.logspace(-6, 6, 200, dtype=torch.float64), -torch.logspace(-6, 6, 200, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)])
    assert_close(signed_parabolic(signed_hyperbolic(x, eps), eps), x, rtol=1e-9, atol=1e-12)
    assert_close(signed_hyperbolic(signed_parabolic(x, eps), eps), x, rtol=1e-9, atol=1e-12)
    # float32, the learner's precision, over the range of Atari returns.
    x32 = torch.linspace(-1e4, 1e4, 1001)
    assert_close(signed_parabolic(signed_hyperbolic(x32, eps), eps), x32, rtol=1e-4, atol=1e-3)


def test_negative_eps_is_refused():
    with pytest.raises(ValueError, match='eps must be >= 0'):
        signed_hyperbolic(torch.ones(1), -0.1)


# Three sequences of T = 4 steps, gamma = 0.5, n = 2, eps = 0 so that h^-1(v) = (v + 1)^2 - 1 for v >= 0:
# h^-1(1) = 3, h^-1(2) = 8, h^-1(3) = 15, and targets are h(G) = sqrt(G + 1) - 1.
# b = 0, four real steps, no end: r = [0.125, 1.75, 11, 4], bootstrap values v (h-space) at observations 0..4 [0, 1, 2, 1, 2]
#   t = 0: 0.125 + 0.5 * 1.75 + 0.25 * h^-1(v_2 = 2) = 0.125 + 0.875 + 2 = 3  -> h = 1
#   t = 1: 1.75 + 0.5 * 11 + 0.25 * h^-1(v_3 = 1) = 1.75 + 5.5 + 0.75 = 8     -> h = 2
#   t = 2: 11 + 0.5 * 4 + 0.25 * h^-1(v_4 = 2) = 11 + 2 + 2 = 15               -> h = 3
#   t = 3: one step left: 4 + 0.5 * h^-1(v_4 = 2) = 4 + 4 = 8                   -> h = 2
# b = 1, a terminal at step 1 (discount 0), padding after: r = [0.5, 15, 0, 0], v_2 = 3 must be ignored
#   t = 0: 0.5 + 0.5 * 15 + 0.5 * 0 * h^-1(3) = 8 -> h = 2;  t = 1: 15 -> h = 3;  t = 2, 3 (padding): 0
# b = 2, a time limit after step 2 (discount 0.5, padding after): bootstraps from observation 3, the final one
#   t = 0: 1.75 + 0.5 * 11 + 0.25 * h^-1(v_2 = 1) = 8 -> h = 2
#   t = 1: 11 + 0.5 * 4 + 0.25 * h^-1(v_3 = 2) = 15  -> h = 3
#   t = 2: 4 + 0.5 * h^-1(v_3 = 2) = 8               -> h = 2   (the window stops at the last real step)
#   t = 3 (padding): 0; v_4 = 5 (the padding observation) is never read
REWARDS = torch.tensor([[0.125, 0.5, 1.75], [1.75, 15.0, 11.0], [11.0, 0.0, 4.0], [4.0, 0.0, 0.0]])
DISCOUNTS = torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.0, 0.5], [0.5, 0.0, 0.0]])
MASK = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 0, 0]], dtype=torch.bool)
BOOTSTRAP = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 3.0, 1.0], [1.0, 0.0, 2.0], [2.0, 0.0, 5.0]])
EXPECTED = torch.tensor([[1.0, 2.0, 2.0], [2.0, 3.0, 3.0], [3.0, 0.0, 2.0], [2.0, 0.0, 0.0]])


def double_q_values():
    """Online and target Q-values [T + 1, B, 2] whose double-Q value is BOOTSTRAP: sequences 0 and 1 pick action 0
    online, sequence 2 action 1; the target network values the action not picked at +-100 (a max would take them)."""
    selector = torch.zeros(5, 3, 2)
    selector[:, :2, 0], selector[:, 2, 1] = 1.0, 1.0
    target = torch.full((5, 3, 2), 100.0)
    target[:, :2, 0], target[:, 2, 1], target[:, 2, 0] = BOOTSTRAP[:, :2], BOOTSTRAP[:, 2], -100.0
    return selector, target


def test_transformed_n_step_double_q_targets_by_hand():
    selector, target = double_q_values()
    targets = transformed_n_step_q_targets(selector, target, REWARDS, DISCOUNTS, MASK, n=2, eps=0.0)
    assert_close(targets, EXPECTED)


def test_one_step_targets_with_the_paper_eps():
    # n = 1, eps = 1e-3, sequence 0 only: G_t = r_t + 0.5 h^-1(v_{t+1}); with v = h(x) the bootstrap is x exactly.
    x = torch.tensor([2.0, -4.0, 6.0, 0.0, 10.0])
    value = signed_hyperbolic(x, 1e-3)
    selector = torch.zeros(5, 1, 1)
    rewards = torch.tensor([[1.0], [0.0], [-1.0], [2.0]])
    targets = transformed_n_step_q_targets(selector, value[:, None, None], rewards, torch.full((4, 1), 0.5), torch.ones(4, 1, dtype=torch.bool), n=1, eps=1e-3)
    returns = torch.tensor([1.0 - 2.0, 0.0 + 3.0, -1.0 + 0.0, 2.0 + 5.0])  # r_t + 0.5 x_{t+1}
    assert_close(targets[:, 0], signed_hyperbolic(returns, 1e-3))


def test_targets_refuse_bad_shapes_and_n():
    selector, target = double_q_values()
    with pytest.raises(ValueError, match='n must be >= 1'):
        transformed_n_step_q_targets(selector, target, REWARDS, DISCOUNTS, MASK, n=0)
    with pytest.raises(ValueError, match=r'\[T \+ 1, B, A\]'):
        transformed_n_step_q_targets(selector[:-1], target[:-1], REWARDS, DISCOUNTS, MASK, n=2)


def test_sequence_priorities_by_hand():
    td = torch.tensor([[1.0, 4.0], [-3.0, -1.0], [2.0, 9.0], [2.0, 0.0]])
    mask = torch.tensor([[1, 1], [1, 1], [1, 0], [1, 0]], dtype=torch.bool)
    # b = 0: max 3, mean 2 -> 0.9 * 3 + 0.1 * 2 = 2.9; b = 1 (two learned steps, the 9 is padding): 0.9 * 4 + 0.1 * 2.5 = 3.85
    assert_close(sequence_priorities(td, mask, 0.9), torch.tensor([2.9, 3.85]))
    assert_close(sequence_priorities(td, mask, 1.0), torch.tensor([3.0, 4.0]))
    assert_close(sequence_priorities(td, mask, 0.0), torch.tensor([2.0, 2.5]))
    assert_close(sequence_priorities(td, torch.zeros_like(mask), 0.9), torch.zeros(2))
    with pytest.raises(ValueError, match='eta must be in'):
        sequence_priorities(td, mask, 1.5)
