"""Tests for deep_rl_zoo.multistep: hand-worked examples plus slow numpy reference loops."""

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import multistep


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# A 4-step sequence whose episode ends after step 2 (discount 0).
REWARDS = [1.0, 2.0, 3.0, 4.0]
DISCOUNTS = [0.5, 0.5, 0.0, 0.5]
VALUES = [10.0, 20.0, 30.0, 40.0]  # VALUES[i]: value of the state reached after REWARDS[i].


def reference_n_step_sum(r, d, v, n):
    """The lambda=1 definition written out as a sum, truncated at the end of the sequence."""
    seq_len = r.shape[0]
    returns = np.zeros_like(r)
    for t in range(seq_len):
        steps = min(n, seq_len - t)
        weight = np.ones_like(r[0])
        for k in range(steps):
            returns[t] += weight * r[t + k]
            weight = weight * d[t + k]
        returns[t] += weight * v[t + steps - 1]
    return returns


def reference_n_step_recursion(r, d, v, n, lambda_):
    """G^(1)_t = r_t + d_t v_t; G^(k)_t = r_t + d_t ((1 - lambda) v_t + lambda G^(k-1)_{t+1}); G_{t>=T} = v_{T-1}."""
    seq_len = r.shape[0]

    def g(t, k):
        if t >= seq_len:
            return v[-1]
        if k == 1:
            return r[t] + d[t] * v[t]
        return r[t] + d[t] * ((1 - lambda_) * v[t] + lambda_ * g(t + 1, k - 1))

    return np.stack([g(t, n) for t in range(seq_len)])


@pytest.mark.parametrize(
    'n, lambda_, expected',
    [
        # G_t = r_t + d_t v_t.
        (1, 1.0, [6.0, 12.0, 3.0, 24.0]),
        # G_0 = 1 + 0.5 * 2 + 0.25 * 20 = 7; G_1 = 2 + 0.5 * 3 + 0 = 3.5; G_2 = 3 + 0 = 3;
        # G_3 is truncated: 4 + 0.5 * 40 = 24.
        (2, 1.0, [7.0, 3.5, 3.0, 24.0]),
        # G_0 = 1 + 0.5 (0.5 * 10 + 0.5 (2 + 0.5 * 20)) = 6.5; G_1 = 2 + 0.5 (0.5 * 20 + 0.5 (3 + 0)) = 7.75;
        # G_2 = 3; G_3 = 4 + 0.5 (0.5 * 40 + 0.5 * 40) = 24.
        (2, 0.5, [6.5, 7.75, 3.0, 24.0]),
        # n beyond the sequence: full returns bootstrapped from v_3. G_1 = 2 + 0.5 * 3, G_0 = 1 + 0.5 * 3.5.
        (10, 1.0, [2.75, 3.5, 3.0, 24.0]),
    ],
)
def test_n_step_bootstrapped_returns_hand_worked(n, lambda_, expected):
    returns = multistep.n_step_bootstrapped_returns(tensor(REWARDS), tensor(DISCOUNTS), tensor(VALUES), n, lambda_)
    assert_close(returns, tensor(expected))


@pytest.mark.parametrize('n', [1, 2, 3, 5, 9])
def test_n_step_bootstrapped_returns_match_numpy_sum(n):
    rng = np.random.default_rng(n)
    r, v = rng.normal(size=(7, 3)), rng.normal(size=(7, 3))
    d = 0.9 * (rng.uniform(size=(7, 3)) > 0.2)
    returns = multistep.n_step_bootstrapped_returns(torch.from_numpy(r), torch.from_numpy(d), torch.from_numpy(v), n)
    assert_close(returns, torch.from_numpy(reference_n_step_sum(r, d, v, n)))


@pytest.mark.parametrize('n, lambda_', [(1, 0.3), (3, 0.0), (3, 0.7), (8, 0.95)])
def test_n_step_bootstrapped_returns_with_lambda_match_numpy_recursion(n, lambda_):
    rng = np.random.default_rng(n)
    r, v = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    d = 0.95 * (rng.uniform(size=(6, 2)) > 0.25)
    returns = multistep.n_step_bootstrapped_returns(
        torch.from_numpy(r), torch.from_numpy(d), torch.from_numpy(v), n, lambda_
    )
    assert_close(returns, torch.from_numpy(reference_n_step_recursion(r, d, v, n, lambda_)))


def test_n_step_bootstrapped_returns_have_no_gradient():
    values = tensor(VALUES, requires_grad=True)
    returns = multistep.n_step_bootstrapped_returns(tensor(REWARDS, requires_grad=True), tensor(DISCOUNTS), values, 2)
    assert not returns.requires_grad


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(r_t=tensor(1.0)), 'r_t must have shape'),
        (dict(r_t=torch.zeros(0), discount_t=torch.zeros(0), v_t=torch.zeros(0)), 'T >= 1'),
        (dict(r_t=torch.tensor([1, 2, 3, 4])), 'r_t must be a floating point'),
        (dict(discount_t=tensor(DISCOUNTS[:3])), 'discount_t must have the shape'),
        (dict(v_t=tensor([VALUES])), 'v_t must have the shape'),
        (dict(n=0), 'n must be an integer >= 1'),
        (dict(n=2.0), 'n must be an integer >= 1'),
        (dict(lambda_=1.5), r'lambda_ must lie in \[0, 1\]'),
    ],
)
def test_n_step_bootstrapped_returns_rejects_bad_input(change, message):
    kwargs = dict(r_t=tensor(REWARDS), discount_t=tensor(DISCOUNTS), v_t=tensor(VALUES), n=2, lambda_=1.0) | change
    with pytest.raises(ValueError, match=message):
        multistep.n_step_bootstrapped_returns(**kwargs)


# A 3-step GAE example whose episode ends after step 1: V(s_0) ... V(s_3).
GAE_REWARDS = [1.0, 0.0, 2.0]
GAE_DISCOUNTS = [0.9, 0.0, 0.9]
GAE_VALUES = [0.5, 1.0, 2.0, 4.0]


@pytest.mark.parametrize(
    'lambda_, expected',
    [
        # delta = [1 + 0.9 * 1 - 0.5, 0 + 0 - 1, 2 + 0.9 * 4 - 2] = [1.4, -1, 3.6].
        (0.0, [1.4, -1.0, 3.6]),
        # A_2 = 3.6; A_1 = -1 + 0 * ... = -1; A_0 = 1.4 + 0.9 * 0.5 * -1 = 0.95.
        (0.5, [0.95, -1.0, 3.6]),
        # Monte-Carlo advantage within the episode: A_0 = (1 + 0.9 * 0) - 0.5 = 0.5.
        (1.0, [0.5, -1.0, 3.6]),
    ],
)
def test_gae_hand_worked(lambda_, expected):
    advantages = multistep.truncated_generalized_advantage_estimation(
        tensor(GAE_REWARDS), tensor(GAE_DISCOUNTS), lambda_, tensor(GAE_VALUES)
    )
    assert_close(advantages, tensor(expected))


def reference_gae(r, d, lambda_, values):
    """A_t = sum_l (prod_{j < l} d_{t+j} lambda) delta_{t+l}, as a direct sum (Schulman et al. 2016, eq. 16)."""
    deltas = r + d * values[1:] - values[:-1]
    advantages = np.zeros_like(r)
    for t in range(r.shape[0]):
        weight = np.ones_like(r[0])
        for step in range(t, r.shape[0]):
            advantages[t] += weight * deltas[step]
            weight = weight * d[step] * lambda_
    return advantages


@pytest.mark.parametrize('lambda_', [0.0, 0.9, 0.95, 1.0])
def test_gae_matches_numpy_sum_over_batch(lambda_):
    rng = np.random.default_rng(0)
    r, values = rng.normal(size=(8, 4)), rng.normal(size=(9, 4))
    d = 0.99 * (rng.uniform(size=(8, 4)) > 0.2)
    advantages = multistep.truncated_generalized_advantage_estimation(
        torch.from_numpy(r), torch.from_numpy(d), lambda_, torch.from_numpy(values)
    )
    assert_close(advantages, torch.from_numpy(reference_gae(r, d, lambda_, values)))


def test_gae_plus_values_is_the_lambda_return():
    # The lambda-return from GAE equals the n-step lambda-return with n covering the whole sequence.
    rng = np.random.default_rng(1)
    r, values = torch.from_numpy(rng.normal(size=(6, 3))), torch.from_numpy(rng.normal(size=(7, 3)))
    d = torch.from_numpy(0.9 * (rng.uniform(size=(6, 3)) > 0.3))
    advantages = multistep.truncated_generalized_advantage_estimation(r, d, 0.8, values)
    lambda_returns = multistep.n_step_bootstrapped_returns(r, d, values[1:], n=6, lambda_=0.8)
    assert_close(advantages + values[:-1], lambda_returns)


def test_gae_has_no_gradient():
    values = tensor(GAE_VALUES, requires_grad=True)
    advantages = multistep.truncated_generalized_advantage_estimation(
        tensor(GAE_REWARDS), tensor(GAE_DISCOUNTS), 0.9, values
    )
    assert not advantages.requires_grad


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(values=tensor(GAE_VALUES[:3])), r'values must have shape \[T \+ 1, ...\]'),
        (dict(discount_t=tensor([GAE_DISCOUNTS])), 'discount_t must have the shape'),
        (dict(lambda_=-0.1), 'lambda_ must lie in'),
    ],
)
def test_gae_rejects_bad_input(change, message):
    kwargs = dict(r_t=tensor(GAE_REWARDS), discount_t=tensor(GAE_DISCOUNTS), lambda_=0.9, values=tensor(GAE_VALUES))
    with pytest.raises(ValueError, match=message):
        multistep.truncated_generalized_advantage_estimation(**kwargs | change)


@pytest.mark.parametrize(
    'discounts, bootstrap, expected',
    [
        # G_2 = 3 + 0.5 * 10 = 8, G_1 = 2 + 0.5 * 8 = 6, G_0 = 1 + 0.5 * 6 = 4.
        ([0.5, 0.5, 0.5], 10.0, [4.0, 6.0, 8.0]),
        # REINFORCE return: G_2 = 3, G_1 = 2 + 1.5 = 3.5, G_0 = 1 + 1.75 = 2.75.
        ([0.5, 0.5, 0.5], 0.0, [2.75, 3.5, 3.0]),
        # Episode ends after step 1: G_2 = 3 + 0.9 * 10 = 12, G_1 = 2, G_0 = 1 + 0.9 * 2 = 2.8.
        ([0.9, 0.0, 0.9], 10.0, [2.8, 2.0, 12.0]),
    ],
)
def test_discounted_returns_hand_worked(discounts, bootstrap, expected):
    returns = multistep.discounted_returns(tensor([1.0, 2.0, 3.0]), tensor(discounts), tensor(bootstrap))
    assert_close(returns, tensor(expected))


def test_discounted_returns_batched_with_number_bootstrap():
    r = tensor([[1.0, 0.0], [2.0, 1.0]])
    d = tensor([[0.5, 1.0], [0.5, 0.0]])
    # Column 0: G_1 = 2 + 0.5 * 4 = 4, G_0 = 1 + 0.5 * 4 = 3. Column 1: G_1 = 1, G_0 = 0 + 1 = 1.
    assert_close(multistep.discounted_returns(r, d, 4.0), tensor([[3.0, 1.0], [4.0, 1.0]]))
    # A per-column bootstrap: column 0 gets G_1 = 2, G_0 = 1 + 1 = 2; column 1 never sees its bootstrap (discount 0).
    assert_close(multistep.discounted_returns(r, d, tensor([0.0, 8.0])), tensor([[2.0, 1.0], [2.0, 1.0]]))


def test_discounted_returns_match_n_step_returns_covering_the_sequence():
    rng = np.random.default_rng(2)
    r, d = torch.from_numpy(rng.normal(size=(5, 2))), torch.from_numpy(0.9 * (rng.uniform(size=(5, 2)) > 0.3))
    bootstrap = torch.from_numpy(rng.normal(size=2))
    values = torch.cat([torch.zeros(4, 2, dtype=torch.float64), bootstrap[None]])
    expected = multistep.n_step_bootstrapped_returns(r, d, values, n=5)
    assert_close(multistep.discounted_returns(r, d, bootstrap), expected)


def test_discounted_returns_have_no_gradient():
    bootstrap = tensor(1.0, requires_grad=True)
    returns = multistep.discounted_returns(tensor([1.0, 2.0], requires_grad=True), tensor([0.9, 0.9]), bootstrap)
    assert not returns.requires_grad


@pytest.mark.parametrize(
    'bootstrap, message',
    [
        (tensor([0.0, 0.0]), r'bootstrap_value must have shape \[...\]=\(\)'),
        ('zero', 'bootstrap_value must be a tensor or a number'),
    ],
)
def test_discounted_returns_rejects_bad_bootstrap(bootstrap, message):
    with pytest.raises(ValueError, match=message):
        multistep.discounted_returns(tensor([1.0, 2.0]), tensor([0.9, 0.9]), bootstrap)
