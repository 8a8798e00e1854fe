"""Tests for deep_rl_zoo.vtrace: a hand-worked example plus a numpy reference written as the explicit sum of eq. 1."""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import multistep, vtrace


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# A 3-step, 2-column rollout. Column 0's episode ends after step 1 (discount 0); both columns hold ratios
# above 1 (clipped by the default thresholds of 1) and below 1.
RHOS = [[2.0, 0.5], [0.5, 4.0], [1.5, 0.25]]
DISCOUNTS = [[0.5, 0.5], [0.0, 0.5], [0.5, 0.5]]
REWARDS = [[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]]
VALUES = [[1.0, 2.0], [3.0, 0.0], [4.0, 2.0]]  # VALUES[s] = V(x_s)
BOOTSTRAP = [6.0, 4.0]  # V(x_3)


def inputs(requires_grad=False):
    return dict(
        log_rhos=torch.log(tensor(RHOS)).requires_grad_(requires_grad),
        discounts=tensor(DISCOUNTS),
        rewards=tensor(REWARDS, requires_grad=requires_grad),
        values=tensor(VALUES, requires_grad=requires_grad),
        bootstrap_value=tensor(BOOTSTRAP, requires_grad=requires_grad),
    )


# TD errors r_s + gamma_s V(x_{s+1}) - V(x_s):
#   column 0: 1 + 0.5 * 3 - 1 = 1.5,  2 + 0 * 4 - 3 = -1,   3 + 0.5 * 6 - 4 = 2
#   column 1: 0 + 0.5 * 0 - 2 = -2,   1 + 0.5 * 2 - 0 = 2,  -1 + 0.5 * 4 - 2 = -1
HAND_WORKED_CASES = [
    # Thresholds 1, lambda 1: rho-bar = c = [1, 0.5, 1] and [0.5, 1, 0.25];
    # delta = [1.5, -0.5, 2] and [-1, 2, -0.25].
    # Column 0, backwards: v_2 - V_2 = 2 -> v_2 = 6; v_1 - V_1 = -0.5 (discount 0 cuts the trace) -> v_1 = 2.5;
    #   v_0 - V_0 = 1.5 + 0.5 * 1 * -0.5 = 1.25 -> v_0 = 2.25.
    # Column 1: v_2 - V_2 = -0.25 -> 1.75; v_1 - V_1 = 2 + 0.5 * 1 * -0.25 = 1.875 -> 1.875;
    #   v_0 - V_0 = -1 + 0.5 * 0.5 * 1.875 = -0.53125 -> 1.46875.
    # pg: column 0: 1 * (1 + 0.5 * 2.5 - 1) = 1.25, 0.5 * (2 - 3) = -0.5, 1 * (3 + 0.5 * 6 - 4) = 2;
    #   column 1: 0.5 * (0 + 0.5 * 1.875 - 2) = -0.53125, 1 * (1 + 0.5 * 1.75 - 0) = 1.875, 0.25 * -1 = -0.25.
    (
        dict(),
        [[2.25, 1.46875], [2.5, 1.875], [6.0, 1.75]],
        [[1.25, -0.53125], [-0.5, 1.875], [2.0, -0.25]],
    ),
    # lambda 0.5: c = [0.5, 0.25, 0.5] and [0.25, 0.5, 0.125]; delta as above.
    # Column 0: v_2 = 6, v_1 = 2.5, v_0 - V_0 = 1.5 + 0.5 * 0.5 * -0.5 = 1.375 -> 2.375.
    # Column 1: v_2 = 1.75; v_1 - V_1 = 2 + 0.5 * 0.5 * -0.25 = 1.9375 -> 1.9375;
    #   v_0 - V_0 = -1 + 0.5 * 0.25 * 1.9375 = -0.7578125 -> 1.2421875.
    # pg column 1, step 0: 0.5 * (0 + 0.5 * 1.9375 - 2) = -0.515625; the rest as above.
    (
        dict(lambda_=0.5),
        [[2.375, 1.2421875], [2.5, 1.9375], [6.0, 1.75]],
        [[1.25, -0.515625], [-0.5, 1.875], [2.0, -0.25]],
    ),
    # No clipping: rho-bar = c = rho = [2, 0.5, 1.5] and [0.5, 4, 0.25]; delta = [3, -0.5, 3] and [-1, 8, -0.25].
    # Column 0: v_2 = 4 + 3 = 7; v_1 = 3 - 0.5 = 2.5; v_0 - V_0 = 3 + 0.5 * 2 * -0.5 = 2.5 -> 3.5.
    # Column 1: v_2 = 1.75; v_1 - V_1 = 8 + 0.5 * 4 * -0.25 = 7.5 -> 7.5; v_0 - V_0 = -1 + 0.5 * 0.5 * 7.5 = 0.875
    #   -> 2.875.
    # pg: column 0: 2 * (1 + 0.5 * 2.5 - 1) = 2.5, 0.5 * -1 = -0.5, 1.5 * (3 + 3 - 4) = 3;
    #   column 1: 0.5 * (0 + 0.5 * 7.5 - 2) = 0.875, 4 * (1 + 0.5 * 1.75) = 7.5, 0.25 * -1 = -0.25.
    (
        dict(clip_rho_threshold=None, clip_pg_rho_threshold=None, clip_c_threshold=None),
        [[3.5, 2.875], [2.5, 7.5], [7.0, 1.75]],
        [[2.5, 0.875], [-0.5, 7.5], [3.0, -0.25]],
    ),
    # Only rho-bar clipped: delta as in the first case, c = rho as in the third, pg unclipped.
    # Column 0: v_2 = 6, v_1 = 2.5, v_0 - V_0 = 1.5 + 0.5 * 2 * -0.5 = 1 -> 2.
    # Column 1: v_2 = 1.75; v_1 - V_1 = 2 + 0.5 * 4 * -0.25 = 1.5 -> 1.5; v_0 - V_0 = -1 + 0.5 * 0.5 * 1.5 = -0.625
    #   -> 1.375.
    # pg: column 0: 2 * (1 + 0.5 * 2.5 - 1) = 2.5, -0.5, 1.5 * 2 = 3;
    #   column 1: 0.5 * (0 + 0.5 * 1.5 - 2) = -0.625, 4 * 1.875 = 7.5, -0.25.
    (
        dict(clip_rho_threshold=1.0, clip_pg_rho_threshold=None, clip_c_threshold=None),
        [[2.0, 1.375], [2.5, 1.5], [6.0, 1.75]],
        [[2.5, -0.625], [-0.5, 7.5], [3.0, -0.25]],
    ),
]


@pytest.mark.parametrize('options, expected_vs, expected_pg_advantages', HAND_WORKED_CASES)
def test_vtrace_hand_worked(options, expected_vs, expected_pg_advantages):
    result = vtrace.vtrace(**inputs(), **options)
    assert isinstance(result, vtrace.VTraceReturns)
    assert_close(result.vs, tensor(expected_vs))
    assert_close(result.pg_advantages, tensor(expected_pg_advantages))


def test_vtrace_of_a_single_column_matches_the_batch():
    # [T] inputs with a scalar bootstrap value: each column on its own gives that column of the batched result.
    batched = vtrace.vtrace(**inputs())
    for column in range(2):
        single = vtrace.vtrace(**{name: value[..., column] for name, value in inputs().items()})
        assert_close(single.vs, batched.vs[:, column])
        assert_close(single.pg_advantages, batched.pg_advantages[:, column])


def reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar, c_bar, lambda_):
    """Eq. 1 as an explicit sum: v_s = V(x_s) + sum_{t>=s} (prod_{s<=i<t} gamma_i c_i) delta_t V."""
    no_clip = np.inf
    rhos = np.exp(log_rhos)
    clipped_rhos = np.minimum(no_clip if rho_bar is None else rho_bar, rhos)
    cs = lambda_ * np.minimum(no_clip if c_bar is None else c_bar, rhos)
    pg_rhos = np.minimum(no_clip if pg_rho_bar is None else pg_rho_bar, rhos)
    seq_len = rewards.shape[0]
    values_with_bootstrap = np.concatenate([values, bootstrap[None]])
    vs = np.zeros_like(values)
    for s in range(seq_len):
        total = values[s].copy()
        for t in range(s, seq_len):
            weight = np.ones_like(values[0])
            for i in range(s, t):
                weight = weight * discounts[i] * cs[i]
            delta = clipped_rhos[t] * (rewards[t] + discounts[t] * values_with_bootstrap[t + 1] - values[t])
            total = total + weight * delta
        vs[s] = total
    vs_with_bootstrap = np.concatenate([vs, bootstrap[None]])
    pg_advantages = pg_rhos * (rewards + discounts * vs_with_bootstrap[1:] - values)
    return vs, pg_advantages


@pytest.mark.parametrize(
    'rho_bar, pg_rho_bar, c_bar, lambda_',
    [
        (1.0, 1.0, 1.0, 1.0),
        (2.0, 1.5, 1.0, 1.0),  # rho-bar above c-bar, as the paper allows
        (1.0, None, 0.5, 0.9),
        (None, None, None, 1.0),
        (1.0, 1.0, 1.0, 0.0),  # no traces: v_s = V(x_s) + delta_s V
    ],
)
def test_vtrace_matches_numpy_sum_over_batch(rho_bar, pg_rho_bar, c_bar, lambda_):
    rng = np.random.default_rng(0)
    shape = (6, 4, 2)  # [T, ...] with two trailing dims
    log_rhos = rng.normal(scale=0.8, size=shape)
    discounts = 0.9 * (rng.uniform(size=shape) > 0.2)
    rewards, values, bootstrap = rng.normal(size=shape), rng.normal(size=shape), rng.normal(size=shape[1:])
    result = vtrace.vtrace(
        *(torch.from_numpy(x) for x in (log_rhos, discounts, rewards, values, bootstrap)),
        clip_rho_threshold=rho_bar,
        clip_pg_rho_threshold=pg_rho_bar,
        clip_c_threshold=c_bar,
        lambda_=lambda_,
    )
    expected_vs, expected_pg = reference_vtrace(
        log_rhos, discounts, rewards, values, bootstrap, rho_bar, pg_rho_bar, c_bar, lambda_
    )
    assert_close(result.vs, torch.from_numpy(expected_vs))
    assert_close(result.pg_advantages, torch.from_numpy(expected_pg))


def test_vtrace_with_lambda_zero_is_one_step():
    result = vtrace.vtrace(**inputs(), lambda_=0.0)
    # v_s = V(x_s) + delta_s V with delta = [1.5, -0.5, 2] and [-1, 2, -0.25] (first hand-worked case).
    assert_close(result.vs, tensor(VALUES) + tensor([[1.5, -1.0], [-0.5, 2.0], [2.0, -0.25]]))


def test_vtrace_on_policy_gives_n_step_returns():
    # Espeholt et al. 2018, section 4.1: on-policy (pi = mu, so log_rhos = 0) with c-bar >= 1 and lambda 1,
    # v_s is the n-step bootstrapped return sum_t (prod gamma) r_t + (prod gamma) V(x_T).
    rng = np.random.default_rng(3)
    rewards, values = torch.from_numpy(rng.normal(size=(5, 3))), torch.from_numpy(rng.normal(size=(5, 3)))
    discounts = torch.from_numpy(0.95 * (rng.uniform(size=(5, 3)) > 0.25))
    bootstrap = torch.from_numpy(rng.normal(size=3))
    result = vtrace.vtrace(torch.zeros(5, 3, dtype=torch.float64), discounts, rewards, values, bootstrap)
    returns = multistep.discounted_returns(rewards, discounts, bootstrap)
    assert_close(result.vs, returns)
    next_vs = torch.cat([result.vs[1:], bootstrap[None]])
    assert_close(result.pg_advantages, rewards + discounts * next_vs - values)
    assert_close(result.pg_advantages, returns - values)


def test_vtrace_float32():
    float32 = {name: value.float() for name, value in inputs().items()}
    result = vtrace.vtrace(**float32)
    assert result.vs.dtype == torch.float32 and result.pg_advantages.dtype == torch.float32
    assert_close(result.vs, tensor(HAND_WORKED_CASES[0][1]).float())


def test_vtrace_has_no_gradient():
    given = inputs(requires_grad=True)
    result = vtrace.vtrace(**given)
    assert not result.vs.requires_grad and not result.pg_advantages.requires_grad
    assert all(value.grad is None for value in given.values())


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(log_rhos=tensor(0.0)), r'log_rhos must have shape \[T, ...\] with T >= 1'),
        (
            dict(log_rhos=torch.zeros(0, 2), discounts=torch.zeros(0, 2), rewards=torch.zeros(0, 2),
                 values=torch.zeros(0, 2)),
            'T >= 1',
        ),
        (dict(log_rhos=torch.zeros(3, 2, dtype=torch.int64)), 'log_rhos must be a floating point tensor'),
        (dict(discounts=tensor(DISCOUNTS[:2])), r'discounts must have the shape \[T, ...\]=\(3, 2\)'),
        (dict(rewards=tensor(REWARDS).T), r'rewards must have the shape \[T, ...\]=\(3, 2\)'),
        (dict(values=tensor(VALUES)[:, :1]), 'values must have the shape'),
        (dict(bootstrap_value=tensor(6.0)), r'bootstrap_value must have shape \[...\]=\(2,\)'),
        (dict(bootstrap_value=tensor([BOOTSTRAP])), 'bootstrap_value must have shape'),
        (dict(bootstrap_value=6.0), 'bootstrap_value must be a torch.Tensor'),
        (dict(rewards=REWARDS), 'rewards must be a torch.Tensor'),
        (dict(values=tensor(VALUES).float()), 'values must have the dtype torch.float64 of log_rhos'),
        (dict(discounts=torch.ones(3, 2, dtype=torch.int64)), 'discounts must have the dtype torch.float64'),
        (dict(lambda_=1.5), r'lambda_ must lie in \[0, 1\]'),
        (dict(lambda_=-0.1), r'lambda_ must lie in \[0, 1\]'),
        (dict(clip_rho_threshold=0.0), 'clip_rho_threshold must be a positive number or None'),
        (dict(clip_pg_rho_threshold=-1.0), 'clip_pg_rho_threshold must be a positive number or None'),
        (dict(clip_c_threshold=math.nan), 'clip_c_threshold must be a positive number or None'),
        (dict(clip_c_threshold=True), 'clip_c_threshold must be a positive number or None'),
    ],
)
def test_vtrace_rejects_bad_input(change, message):
    with pytest.raises(ValueError, match=message):
        vtrace.vtrace(**inputs() | change)
