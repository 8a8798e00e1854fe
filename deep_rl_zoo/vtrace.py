"""V-trace off-policy corrected value targets and policy-gradient advantages (Espeholt et al. 2018, "IMPALA").

Sequences are time-major: every input has shape [T, ...] (for example [T] or [T, B]) and the functions work
along dim 0, like `deep_rl_zoo.multistep`. Per-step discounts hold gamma * (1 - done), so a zero discount
ends an episode inside a sequence: neither the trace nor the bootstrap crosses it. The results are targets,
so they are computed without gradient.

Indexing convention (as in the paper): values[s] = V(x_s) is the value of the state where action a_s was
taken, rewards[s] and discounts[s] belong to the transition x_s -> x_{s+1}, and bootstrap_value = V(x_T) is
the value of the state after the last step.
"""

import numbers
from typing import NamedTuple

import torch
from torch import Tensor


class VTraceReturns(NamedTuple):
    """The outputs of `vtrace`, each [T, ...] and without gradient."""

    vs: Tensor  # v_s, the V-trace targets for V(x_s)
    pg_advantages: Tensor  # min(rho_pg_bar, rho_s) * (r_s + gamma_s v_{s+1} - V(x_s))


def _check_threshold(name: str, threshold: float | None) -> None:
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not threshold > 0.0:
        raise ValueError(f'{name} must be a positive number or None (no clipping), got {threshold!r}.')


def _check_inputs(
    log_rhos: Tensor, discounts: Tensor, rewards: Tensor, values: Tensor, bootstrap_value: Tensor
) -> None:
    """Raises ValueError unless every input is a tensor of the [T, ...] shape and floating dtype of log_rhos."""
    named = dict(
        log_rhos=log_rhos, discounts=discounts, rewards=rewards, values=values, bootstrap_value=bootstrap_value
    )
    for name, tensor in named.items():
        if not isinstance(tensor, Tensor):
            raise ValueError(f'{name} must be a torch.Tensor, got {type(tensor).__name__}.')
    if log_rhos.dim() < 1 or log_rhos.shape[0] < 1:
        raise ValueError(f'log_rhos must have shape [T, ...] with T >= 1, got {tuple(log_rhos.shape)}.')
    if not log_rhos.is_floating_point():
        raise ValueError(f'log_rhos must be a floating point tensor, got dtype {log_rhos.dtype}.')
    for name, tensor in dict(discounts=discounts, rewards=rewards, values=values).items():
        if tensor.shape != log_rhos.shape:
            raise ValueError(
                f'{name} must have the shape [T, ...]={tuple(log_rhos.shape)} of log_rhos, got {tuple(tensor.shape)}.'
            )
    if bootstrap_value.shape != log_rhos.shape[1:]:
        raise ValueError(
            f'bootstrap_value must have shape [...]={tuple(log_rhos.shape[1:])} (log_rhos without its time dim), '
            f'got {tuple(bootstrap_value.shape)}.'
        )
    for name, tensor in named.items():
        if tensor.dtype != log_rhos.dtype:
            raise ValueError(f'{name} must have the dtype {log_rhos.dtype} of log_rhos, got {tensor.dtype}.')


def _clip(ratios: Tensor, threshold: float | None) -> Tensor:
    """min(threshold, ratios), or the ratios themselves for threshold None."""
    return ratios if threshold is None else torch.clamp(ratios, max=threshold)


def vtrace(
    log_rhos: Tensor,
    discounts: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    clip_c_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, section 4.1, eq. 1).

    With rho_s = pi(a_s|x_s) / mu(a_s|x_s) the importance ratio of the learner's policy pi to the actors'
    behaviour policy mu, and gamma_s = discounts[s]:

      rho-bar_s = min(clip_rho_threshold, rho_s)                  (truncated IS weight of the TD error)
      c_s       = lambda_ * min(clip_c_threshold, rho_s)          (trace-cutting coefficient)
      delta_s V = rho-bar_s * (r_s + gamma_s V(x_{s+1}) - V(x_s))
      v_s       = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i c_i) delta_t V             (eq. 1)

    computed backwards with the recursive form the paper gives for it,

      v_s - V(x_s) = delta_s V + gamma_s c_s (v_{s+1} - V(x_{s+1})),   v_T = V(x_T) = bootstrap_value.

    The policy-gradient advantage (section 4.2) is

      pg_advantages_s = min(clip_pg_rho_threshold, rho_s) * (r_s + gamma_s v_{s+1} - V(x_s)).

    rho-bar fixes the policy whose value V-trace converges to (pi itself for rho-bar = infinity, mu for
    rho-bar -> 0); c-bar only changes the speed of convergence. lambda_ < 1 shortens the traces further,
    like the lambda of Retrace(lambda) (the extra discounting of the traces that section 4.1 mentions).

    On-policy (rho_s = 1) with thresholds >= 1 and lambda_ = 1, v_s is the n-step bootstrapped return
    r_s + gamma_s v_{s+1} (`multistep.discounted_returns` with the bootstrap value) and the advantage is
    v_s - V(x_s), as in A3C.

    Args:
      log_rhos: [T, ...] log pi(a_s|x_s) - log mu(a_s|x_s), the log importance ratios of the taken actions.
      discounts: [T, ...] discounts, gamma * (1 - done).
      rewards: [T, ...] rewards r_s.
      values: [T, ...] values V(x_s) under the learner's value function.
      bootstrap_value: [...] value V(x_T) of the state after the last step.
      clip_rho_threshold: rho-bar, a positive number, or None for no clipping.
      clip_pg_rho_threshold: the clip of the ratio in the policy-gradient advantage, or None.
      clip_c_threshold: c-bar, a positive number, or None for no clipping.
      lambda_: trace coefficient in [0, 1].

    Returns:
      VTraceReturns(vs, pg_advantages), each [T, ...], without gradient.
    """
    _check_inputs(log_rhos, discounts, rewards, values, bootstrap_value)
    _check_threshold('clip_rho_threshold', clip_rho_threshold)
    _check_threshold('clip_pg_rho_threshold', clip_pg_rho_threshold)
    _check_threshold('clip_c_threshold', clip_c_threshold)
    if isinstance(lambda_, bool) or not isinstance(lambda_, numbers.Real) or not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f'lambda_ must lie in [0, 1], got {lambda_!r}.')
    with torch.no_grad():
        rhos = torch.exp(log_rhos)
        clipped_rhos = _clip(rhos, clip_rho_threshold)
        cs = lambda_ * _clip(rhos, clip_c_threshold)
        # V(x_{s+1}) for every s: the next values, then the bootstrap value after the last step.
        next_values = torch.cat([values[1:], bootstrap_value.unsqueeze(0)])
        deltas = clipped_rhos * (rewards + discounts * next_values - values)

        # v_s - V(x_s), backwards from v_T - V(x_T) = 0.
        vs_minus_values = torch.empty_like(values)
        correction = torch.zeros_like(bootstrap_value)
        for s in reversed(range(values.shape[0])):
            correction = deltas[s] + discounts[s] * cs[s] * correction
            vs_minus_values[s] = correction
        vs = values + vs_minus_values

        next_vs = torch.cat([vs[1:], bootstrap_value.unsqueeze(0)])
        pg_advantages = _clip(rhos, clip_pg_rho_threshold) * (rewards + discounts * next_vs - values)
    return VTraceReturns(vs=vs, pg_advantages=pg_advantages)
