"""Multi-step return targets over sequences: n-step bootstrapped returns, GAE and discounted returns.

Sequences are time-major: every input has shape [T, ...] (for example [T] or [T, B]) and the functions
work along dim 0. Per-step discounts hold gamma * (1 - done), so a zero discount ends an episode inside a
sequence. The results are targets, so they are computed without gradient.

Indexing convention (as in rlax): r_t[i] and discount_t[i] are the reward and discount received on the
transition out of step i, and a value "at t" is the value of the state that transition leads to.
"""

import numbers

import torch
from torch import Tensor


def _check_sequence(name: str, tensor: Tensor, reference: Tensor) -> None:
    """Raises ValueError unless `tensor` has the [T, ...] shape of `reference`."""
    if tensor.shape != reference.shape:
        raise ValueError(
            f'{name} must have the shape [T, ...]={tuple(reference.shape)} of r_t, got {tuple(tensor.shape)}.'
        )


def _check_rewards_and_discounts(r_t: Tensor, discount_t: Tensor) -> None:
    if r_t.dim() < 1 or r_t.shape[0] < 1:
        raise ValueError(f'r_t must have shape [T, ...] with T >= 1, got {tuple(r_t.shape)}.')
    if not r_t.is_floating_point():
        raise ValueError(f'r_t must be a floating point tensor, got dtype {r_t.dtype}.')
    _check_sequence('discount_t', discount_t, r_t)


def _check_lambda(lambda_: float) -> None:
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f'lambda_ must lie in [0, 1], got {lambda_}.')


def n_step_bootstrapped_returns(
    r_t: Tensor, discount_t: Tensor, v_t: Tensor, n: int, lambda_: float = 1.0
) -> Tensor:
    """Strided n-step bootstrapped return targets for every step of a sequence (as in rlax).

    Here v_t[i] is the value of the state reached after r_t[i]. With lambda_=1:

      G_t = r_t + d_t r_{t+1} + ... + (d_t ... d_{t+n-2}) r_{t+n-1} + (d_t ... d_{t+n-1}) v_{t+n-1}

    where d = discount_t. Near the end of the sequence (t + n - 1 > T - 1) the sum stops at r_{T-1} and
    bootstraps from v_{T-1} with weight d_t ... d_{T-1}. In general G_t = G_t^(n), with

      G_t^(1) = r_t + d_t v_t,
      G_t^(k) = r_t + d_t [(1 - lambda_) v_t + lambda_ G_{t+1}^(k-1)]

    (steps past the end of the sequence have reward 0, discount 1 and value v_{T-1}). lambda_ < 1 mixes
    in the shorter returns, truncating the lambda-return of Sutton & Barto (2018), section 12.1, at n steps.

    Args:
      r_t: [T, ...] rewards.
      discount_t: [T, ...] discounts, gamma * (1 - done).
      v_t: [T, ...] values to bootstrap from.
      n: the number of steps, n >= 1 (n=1 gives the one-step TD target r_t + d_t v_t).
      lambda_: mixing coefficient in [0, 1].

    Returns:
      [T, ...] returns, without gradient.
    """
    _check_rewards_and_discounts(r_t, discount_t)
    _check_sequence('v_t', v_t, r_t)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f'n must be an integer >= 1, got {n!r}.')
    _check_lambda(lambda_)
    seq_len = r_t.shape[0]
    with torch.no_grad():
        # Past the end of the sequence: reward 0, discount 1 and the last value, so returns bootstrap from v_{T-1}.
        tail_shape = (n - 1,) + tuple(r_t.shape[1:])
        rewards = torch.cat([r_t, r_t.new_zeros(tail_shape)])
        discounts = torch.cat([discount_t, discount_t.new_ones(tail_shape)])
        values = torch.cat([v_t, v_t[-1:].expand(tail_shape)])
        # Start from G^(0)_{t+n-1} = v_{t+n-1} and unroll the recursion n times, from the far end back to t.
        returns = values[n - 1 : n - 1 + seq_len]
        for k in reversed(range(n)):
            step = slice(k, k + seq_len)
            returns = rewards[step] + discounts[step] * ((1.0 - lambda_) * values[step] + lambda_ * returns)
    return returns


def truncated_generalized_advantage_estimation(
    r_t: Tensor, discount_t: Tensor, lambda_: float, values: Tensor
) -> Tensor:
    """Generalized advantage estimation over a truncated sequence (Schulman et al. 2016, eq. 16).

      delta_t = r_t + d_t V(s_{t+1}) - V(s_t)
      A_t     = delta_t + d_t * lambda_ * A_{t+1},   A_T = 0,

    with d_t = gamma * (1 - done_t), so an advantage never looks past the end of an episode. The paper's
    (gamma * lambda)^l weights are the products of d * lambda along the sequence. The lambda-return, the
    usual value target (e.g. in PPO), is advantages + values[:-1].

    Args:
      r_t: [T, ...] rewards.
      discount_t: [T, ...] discounts, gamma * (1 - done).
      lambda_: GAE lambda in [0, 1]; 0 gives the one-step TD error, 1 the Monte-Carlo advantage.
      values: [T + 1, ...] values V(s_0) ... V(s_T); the last one bootstraps the end of the sequence.

    Returns:
      [T, ...] advantages, without gradient.
    """
    _check_rewards_and_discounts(r_t, discount_t)
    expected_values_shape = (r_t.shape[0] + 1,) + tuple(r_t.shape[1:])
    if values.shape != expected_values_shape:
        raise ValueError(f'values must have shape [T + 1, ...]={expected_values_shape}, got {tuple(values.shape)}.')
    _check_lambda(lambda_)
    with torch.no_grad():
        td_errors = r_t + discount_t * values[1:] - values[:-1]
        advantages = torch.empty_like(td_errors)
        next_advantage = torch.zeros_like(td_errors[0])
        for t in reversed(range(r_t.shape[0])):
            next_advantage = td_errors[t] + discount_t[t] * lambda_ * next_advantage
            advantages[t] = next_advantage
    return advantages


def discounted_returns(r_t: Tensor, discount_t: Tensor, bootstrap_value: Tensor | float) -> Tensor:
    """Discounted returns with per-step discounts, bootstrapped after the last step.

      G_{T-1} = r_{T-1} + d_{T-1} * bootstrap_value,   G_t = r_t + d_t G_{t+1}.

    With bootstrap_value=0 and complete episodes this is the Monte-Carlo return of REINFORCE
    (Williams 1992); with a value estimate it is the n-step return of A2C/A3C (Mnih et al. 2016).

    Args:
      r_t: [T, ...] rewards.
      discount_t: [T, ...] discounts, gamma * (1 - done).
      bootstrap_value: [...] value of the state after the last step (shape r_t.shape[1:]), or a number.

    Returns:
      [T, ...] returns, without gradient.
    """
    _check_rewards_and_discounts(r_t, discount_t)
    if isinstance(bootstrap_value, Tensor):
        if bootstrap_value.shape != r_t.shape[1:]:
            raise ValueError(
                f'bootstrap_value must have shape [...]={tuple(r_t.shape[1:])} (r_t without its time dim), '
                f'got {tuple(bootstrap_value.shape)}.'
            )
    elif isinstance(bootstrap_value, numbers.Real) and not isinstance(bootstrap_value, bool):
        bootstrap_value = torch.full_like(r_t[0], float(bootstrap_value))
    else:
        raise ValueError(f'bootstrap_value must be a tensor or a number, got {type(bootstrap_value).__name__}.')
    with torch.no_grad():
        returns = torch.empty_like(r_t)
        next_return = bootstrap_value
        for t in reversed(range(r_t.shape[0])):
            next_return = r_t[t] + discount_t[t] * next_return
            returns[t] = next_return
    return returns
