"""Quantile regression losses (QR-DQN, IQN): exact numbers worked out by hand, gradients, shapes and bad input."""

import numpy as np
import pytest
import torch

from deep_rl_zoo.value_learning import quantile_q_learning, quantile_regression_loss

TAUS = torch.tensor([0.25, 0.75])
SOURCE = torch.tensor([[0.0, 1.0]])
TARGET = torch.tensor([[0.5, 2.0]])


# ------------------------------------------------------------------------------ quantile_regression_loss


@pytest.mark.parametrize(
    'kappa, expected',
    [
        # u_ij = target_j - source_i: source 0 (tau .25) sees u = 0.5, 2; source 1 (tau .75) sees u = -0.5, 1.
        # kappa 0: |tau - 1{u<0}| |u|: (.25*.5 + .25*2)/2 + (.25*.5 + .75*1)/2 = .3125 + .4375
        (0.0, 0.75),
        # kappa 1: huber = .125, 1.5, .125, .5: (.25*.125 + .25*1.5)/2 + (.25*.125 + .75*.5)/2 = .203125 * 2
        (1.0, 0.40625),
        # kappa 2: huber/2 = .0625, 1, .0625, .25: (.015625 + .25)/2 + (.015625 + .1875)/2
        (2.0, 0.234375),
    ],
)
def test_quantile_loss_sums_over_sources_and_averages_over_targets(kappa, expected):
    loss = quantile_regression_loss(SOURCE, TAUS, TARGET, kappa)
    assert loss.shape == (1,)
    assert loss.item() == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize('tau, above, below', [(0.1, 0.1, 0.9), (0.9, 0.9, 0.1), (0.5, 0.5, 0.5)])
def test_quantile_loss_is_asymmetric_with_weight_tau_above_and_one_minus_tau_below(tau, above, below):
    source, taus = torch.zeros(1, 1), torch.tensor([tau])
    assert quantile_regression_loss(source, taus, torch.ones(1, 1), 0.0).item() == pytest.approx(above)
    assert quantile_regression_loss(source, taus, -torch.ones(1, 1), 0.0).item() == pytest.approx(below)


@pytest.mark.parametrize(
    'kappa, target, gradient',
    [
        (0.0, 1.0, -0.25),  # under-estimate: pushed up with weight tau
        (0.0, -1.0, 0.75),  # over-estimate: pushed down with weight 1 - tau
        (1.0, 0.5, -0.125),  # inside kappa the gradient is -tau * u
        (1.0, -3.0, 0.75),  # outside kappa it is clipped to (1 - tau) * kappa / kappa
        (2.0, 1.0, -0.125),  # -tau * u / kappa
    ],
)
def test_gradient_sign_and_size_for_tau_one_quarter(kappa, target, gradient):
    source = torch.zeros(1, 1, requires_grad=True)
    target_tensor = torch.full((1, 1), target, requires_grad=True)
    quantile_regression_loss(source, torch.tensor([0.25]), target_tensor, kappa).sum().backward()
    assert source.grad.item() == pytest.approx(gradient)
    assert target_tensor.grad is None  # targets are not trained


def test_minimiser_is_the_tau_quantile_of_the_targets():
    """Targets 0..4: the 0.3-quantile is 1 (F(0) = .2 < .3 <= F(1) = .4); the 0.7-quantile is 3."""
    targets = torch.arange(5.0).unsqueeze(0)
    grid = torch.linspace(-1, 5, 601)
    for tau, quantile in ((0.3, 1.0), (0.7, 3.0)):
        losses = [quantile_regression_loss(torch.tensor([[x]]), torch.tensor([tau]), targets, 0.0).item() for x in grid]
        assert grid[int(np.argmin(losses))].item() == pytest.approx(quantile, abs=1e-5)


def test_batched_taus_match_shared_taus_and_samples_are_independent():
    source = torch.tensor([[0.0, 1.0], [3.0, -2.0]])
    target = torch.tensor([[0.5, 2.0, -1.0], [1.0, 0.0, 4.0]])
    shared = quantile_regression_loss(source, TAUS, target)
    batched = quantile_regression_loss(source, TAUS.expand(2, 2), target)
    torch.testing.assert_close(shared, batched)
    for b in range(2):
        torch.testing.assert_close(shared[b : b + 1], quantile_regression_loss(source[b : b + 1], TAUS, target[b : b + 1]))
    # Different taus per sample: row 1 with taus [.75, .25] is row 1 with its sources swapped.
    per_row = quantile_regression_loss(source, torch.tensor([[0.25, 0.75], [0.75, 0.25]]), target)
    swapped = quantile_regression_loss(source[1:].flip(1), TAUS, target[1:])
    torch.testing.assert_close(per_row[1:], swapped)


@pytest.mark.parametrize(
    'source, taus, target, kappa, message',
    [
        (SOURCE, TAUS, TARGET, -1.0, 'huber_param'),
        (SOURCE[0], TAUS, TARGET, 1.0, 'dist_src must'),
        (SOURCE.long(), TAUS, TARGET, 1.0, 'dist_src must'),
        (SOURCE, torch.tensor([0.5]), TARGET, 1.0, 'tau_src must have shape'),
        (SOURCE, TAUS, torch.zeros(2, 2), 1.0, 'dist_target must'),
        (SOURCE, TAUS, torch.zeros(2), 1.0, 'dist_target must'),
        (SOURCE, torch.tensor([0.5, 1.5]), TARGET, 1.0, r'tau_src must lie in \[0, 1\]'),
    ],
)
def test_quantile_loss_rejects_bad_input(source, taus, target, kappa, message):
    with pytest.raises(ValueError, match=message):
        quantile_regression_loss(source, taus, target, kappa)


# -------------------------------------------------------------------------------------- quantile_q_learning


def q_learning_inputs():
    """Two samples, N = 2 quantiles at taus [.25, .75], A = 2 actions, K = 3 selector and M = 2 target quantiles.

    sample 0: a = 1, Z(s, 1) = [0, 1]; the selector's means are [1, 3] so a* = 1 (the target net's own means
      [15, .5] would pick action 0); Z(s', 1) = [-1, 2]; r = 1, discount .5 -> targets [.5, 2]: the kappa-1 loss
      .40625 of the test above.
    sample 1: a = 0, Z(s, 0) = [2, 4]; r = -1, discount 0 -> targets [-1, -1]. u = -3 for tau .25 (weight .75,
      huber 2.5) and u = -5 for tau .75 (weight .25, huber 4.5): 1.875 + 1.125 = 3.
    """
    dist_q_tm1 = torch.tensor([[[0.0, 0.0], [5.0, 1.0]], [[2.0, 9.0], [4.0, 9.0]]], requires_grad=True)
    selector = torch.tensor([[[1.0, 3.0], [0.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]])
    dist_q_t = torch.tensor([[[10.0, -1.0], [20.0, 2.0]], [[7.0, 8.0], [7.0, 8.0]]], requires_grad=True)
    return dict(
        dist_q_tm1=dist_q_tm1,
        tau_q_tm1=TAUS,
        a_tm1=torch.tensor([1, 0]),
        r_t=torch.tensor([1.0, -1.0]),
        discount_t=torch.tensor([0.5, 0.0]),
        dist_q_t_selector=selector,
        dist_q_t=dist_q_t,
        huber_param=1.0,
    )


def test_quantile_q_learning_of_hand_built_batch():
    inputs = q_learning_inputs()
    output = quantile_q_learning(**inputs)
    torch.testing.assert_close(output.loss, torch.tensor([0.40625, 3.0]))
    torch.testing.assert_close(output.extra.target, torch.tensor([[0.5, 2.0], [-1.0, -1.0]]))
    output.loss.sum().backward()
    # Only the quantiles of the taken actions get gradient, -mean_j weight_ij * clip(u_ij, -1, 1); the next-state
    # quantiles get none. Sample 0: i=0 -(.25*.5 + .25*1)/2 = -.1875, i=1 -(.25*-.5 + .75*1)/2 = -.3125;
    # sample 1: i=0 -(.75*-1 + .75*-1)/2 = .75, i=1 -(.25*-1 + .25*-1)/2 = .25.
    grad = inputs['dist_q_tm1'].grad
    torch.testing.assert_close(grad, torch.tensor([[[0.0, -0.1875], [0.0, -0.3125]], [[0.75, 0.0], [0.25, 0.0]]]))
    assert inputs['dist_q_t'].grad is None


def test_quantile_q_learning_rejects_bad_input():
    inputs = q_learning_inputs()
    with pytest.raises(ValueError, match=r'dist_q_t must have shape \[B, \*, A\]'):
        quantile_q_learning(**{**inputs, 'dist_q_t': inputs['dist_q_t'][:, :, :1]})
    with pytest.raises(ValueError, match=r'dist_q_t_selector must have shape'):
        quantile_q_learning(**{**inputs, 'dist_q_t_selector': inputs['dist_q_t_selector'][0]})
    with pytest.raises(ValueError, match=r'dist_q_tm1 must have shape'):
        quantile_q_learning(**{**inputs, 'dist_q_tm1': inputs['dist_q_tm1'][:, 0]})
    with pytest.raises(ValueError, match=r'a_tm1 must lie in \[0, 2\)'):
        quantile_q_learning(**{**inputs, 'a_tm1': torch.tensor([2, 0])})
    with pytest.raises(ValueError, match=r'r_t must have shape'):
        quantile_q_learning(**{**inputs, 'r_t': torch.zeros(3)})
