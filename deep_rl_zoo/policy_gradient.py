"""Policy-gradient losses: REINFORCE (with or without a learned baseline), actor-critic/A2C, PPO's clipped
surrogate and value losses (and Sample Factory's variants of them, as options), entropy terms, the KL divergence
between categorical policies.

All functions are pure functions of tensors. Inputs are batch-first and losses are returned per sample
(shape [B]) for the caller to average. Losses are to be minimised. Advantages, returns and the
behaviour policy's log-probabilities and values are treated as constants (detached).
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from deep_rl_zoo.value_learning import LossOutput, l2_loss


def _check_batch(reference_name: str, reference: Tensor, **others: Tensor) -> None:
    """Raises ValueError unless `reference` is a floating point [B] tensor and every other tensor has its shape."""
    if reference.dim() != 1:
        raise ValueError(f'{reference_name} must have shape [B], got {tuple(reference.shape)}.')
    if not reference.is_floating_point():
        raise ValueError(f'{reference_name} must be a floating point tensor, got dtype {reference.dtype}.')
    for name, tensor in others.items():
        if tensor.shape != reference.shape:
            raise ValueError(
                f'{name} must have shape [B]={tuple(reference.shape)} like {reference_name}, '
                f'got {tuple(tensor.shape)}.'
            )


def _check_logits(logits: Tensor) -> None:
    if logits.dim() != 2 or logits.shape[1] < 1:
        raise ValueError(f'logits must have shape [B, A] with A >= 1, got {tuple(logits.shape)}.')
    if not logits.is_floating_point():
        raise ValueError(f'logits must be a floating point tensor, got dtype {logits.dtype}.')


def _check_ppo_epsilon(clip_epsilon: float, reciprocal_clip: bool = False) -> None:
    # 0 is allowed: the PPO paper anneals epsilon linearly to 0 on Atari (Schulman et al. 2017, table 5).
    if reciprocal_clip:  # [1 / (1 + eps), 1 + eps] is a range for any eps >= 0
        if not clip_epsilon >= 0.0:
            raise ValueError(f'clip_epsilon must be >= 0, got {clip_epsilon}.')
    elif not 0.0 <= clip_epsilon < 1.0:
        raise ValueError(f'clip_epsilon must lie in [0, 1), got {clip_epsilon}.')


def clipped_surrogate_loss(
    log_prob: Tensor,
    old_log_prob: Tensor,
    advantage: Tensor,
    clip_epsilon: float,
    *,
    ratio_bounds: tuple[float, float] | None = None,
    reciprocal_clip: bool = False,
) -> Tensor:
    """PPO's clipped surrogate objective as a loss (Schulman et al. 2017, "Proximal Policy Optimization", eq. 7).

      ratio = exp(log_prob - old_log_prob)
      loss  = -min(ratio * A, clip(ratio, 1 - clip_epsilon, 1 + clip_epsilon) * A)

    Where the clipped term is the minimum (the ratio has moved past the clip range in the direction the
    advantage favours) the loss has zero gradient.

    Sample Factory's variant (Petrenko et al. 2020; its APPO) takes both options: `ratio_bounds=(0.05, 20.0)`
    clamps the ratio to those bounds before anything else (a ratio outside them has no gradient), and
    `reciprocal_clip` clips to [1 / (1 + clip_epsilon), 1 + clip_epsilon], a range symmetric in log(ratio).

    Args:
      log_prob: [B] log pi(a|s) under the policy being trained.
      old_log_prob: [B] log pi_old(a|s) under the policy that collected the data (detached).
      advantage: [B] advantage estimates (detached).
      clip_epsilon: the clip range epsilon, in [0, 1) (with `reciprocal_clip`, >= 0).
      ratio_bounds: (low, high) the ratio is clamped to first, or None.
      reciprocal_clip: clip the ratio to [1 / (1 + clip_epsilon), 1 + clip_epsilon].

    Returns:
      [B] per-sample loss.
    """
    _check_batch('log_prob', log_prob, old_log_prob=old_log_prob, advantage=advantage)
    _check_ppo_epsilon(clip_epsilon, reciprocal_clip)
    advantage = advantage.detach()
    ratio = torch.exp(log_prob - old_log_prob.detach())
    if ratio_bounds is not None:
        ratio = ratio.clamp(*ratio_bounds)
    clipped_ratio = torch.clamp(ratio, *_clip_range(clip_epsilon, reciprocal_clip))
    return -torch.minimum(ratio * advantage, clipped_ratio * advantage)


def _clip_range(clip_epsilon: float, reciprocal_clip: bool) -> tuple[float, float]:
    high = 1.0 + clip_epsilon
    return (1.0 / high if reciprocal_clip else 1.0 - clip_epsilon), high


def approx_kl(log_prob: Tensor, old_log_prob: Tensor) -> Tensor:
    """Estimate of KL(pi_old || pi) from actions sampled by pi_old, for logging or early stopping.

    Uses the low-variance, unbiased and always non-negative estimator mean((ratio - 1) - log ratio) with
    ratio = pi(a|s) / pi_old(a|s) (J. Schulman, "Approximating KL Divergence", 2020: the "k3" estimator).

    Args:
      log_prob: [B] log pi(a|s) under the current policy.
      old_log_prob: [B] log pi_old(a|s) under the policy that sampled the actions.

    Returns:
      A scalar tensor, without gradient.
    """
    _check_batch('log_prob', log_prob, old_log_prob=old_log_prob)
    with torch.no_grad():
        log_ratio = log_prob - old_log_prob
        return (torch.expm1(log_ratio) - log_ratio).mean()


def clip_fraction(log_prob: Tensor, old_log_prob: Tensor, clip_epsilon: float, *, reciprocal_clip: bool = False) -> Tensor:
    """The fraction of samples whose ratio pi/pi_old lies outside [1 - clip_epsilon, 1 + clip_epsilon] (with
    `reciprocal_clip`, outside [1 / (1 + clip_epsilon), 1 + clip_epsilon]: see `clipped_surrogate_loss`).

    Args:
      log_prob: [B] log pi(a|s) under the current policy.
      old_log_prob: [B] log pi_old(a|s) under the policy that sampled the actions.
      clip_epsilon: the PPO clip range, in [0, 1) (with `reciprocal_clip`, >= 0).
      reciprocal_clip: the clip range of Sample Factory's variant.

    Returns:
      A scalar float tensor in [0, 1], without gradient.
    """
    _check_batch('log_prob', log_prob, old_log_prob=old_log_prob)
    _check_ppo_epsilon(clip_epsilon, reciprocal_clip)
    with torch.no_grad():
        ratio = torch.exp(log_prob - old_log_prob)
        if reciprocal_clip:
            low, high = _clip_range(clip_epsilon, reciprocal_clip)
            return ((ratio < low) | (ratio > high)).to(log_prob.dtype).mean()
        return ((ratio - 1.0).abs() > clip_epsilon).to(log_prob.dtype).mean()


def explained_variance(prediction: Tensor, target: Tensor) -> Tensor:
    """1 - Var[target - prediction] / Var[target]: the share of the targets' variance a value function explains (1:
    all of it; <= 0: no better than a constant), for logging.

    Args:
      prediction: [B] predicted values.
      target: [B] their targets (returns).

    Returns:
      A scalar tensor without gradient; nan when the targets are constant (or fewer than two).
    """
    _check_batch('target', target, prediction=prediction)
    with torch.no_grad():
        if target.numel() < 2:
            return torch.full((), math.nan, dtype=target.dtype, device=target.device)
        variance = target.var()
        return torch.where(variance > 0, 1 - (target - prediction).var() / variance, torch.full_like(variance, math.nan))


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, clip_epsilon: float | None, *, half: bool = True) -> Tensor:
    """PPO value loss, optionally clipped around the values of the data-collecting network.

    With clip_epsilon (as in the PPO reference implementation, OpenAI baselines ppo2):
      v_clipped = old_values + clip(values - old_values, -clip_epsilon, clip_epsilon)
      loss      = 0.5 * max((values - returns)**2, (v_clipped - returns)**2)
    With clip_epsilon=None: loss = 0.5 * (values - returns)**2. Sample Factory's APPO (Petrenko et al. 2020) leaves
    out the 0.5 (`half=False`; its value coefficient weighs the whole squared error).

    Args:
      values: [B] value estimates being trained.
      old_values: [B] value estimates when the data was collected (detached).
      returns: [B] value targets (detached).
      clip_epsilon: clip range (>= 0) in the units of the values, or None for no clipping.
      half: whether the squared error is halved.

    Returns:
      [B] per-sample loss.
    """
    _check_batch('values', values, old_values=old_values, returns=returns)
    returns = returns.detach()
    unclipped = (values - returns) ** 2
    if clip_epsilon is None:
        loss = unclipped
    else:
        if not clip_epsilon >= 0.0:
            raise ValueError(f'clip_epsilon must be >= 0 or None, got {clip_epsilon}.')
        old_values = old_values.detach()
        values_clipped = old_values + torch.clamp(values - old_values, -clip_epsilon, clip_epsilon)
        loss = torch.maximum(unclipped, (values_clipped - returns) ** 2)
    return 0.5 * loss if half else loss


def entropy_loss(logits: Tensor) -> Tensor:
    """Negative entropy of the categorical policy softmax(logits): minimising it maximises entropy.

    Entropy regularisation as in A3C (Mnih et al. 2016, section 4) and PPO (Schulman et al. 2017, eq. 9):
      loss = -H(pi) = sum_a pi(a) log pi(a).
    Logits of -inf (impossible actions) are allowed and contribute 0.

    Args:
      logits: [B, A] unnormalised log-probabilities.

    Returns:
      [B] per-sample loss.
    """
    _check_logits(logits)
    log_probs = F.log_softmax(logits, dim=1)
    # Clamping keeps 0 * log 0 = 0 (and its gradient finite) for actions with -inf logits.
    log_probs = torch.clamp(log_probs, min=torch.finfo(log_probs.dtype).min)
    return (log_probs.exp() * log_probs).sum(dim=1)


def policy_gradient_loss(logits: Tensor, actions: Tensor, advantages: Tensor) -> Tensor:
    """The score-function policy-gradient loss -log pi(a|s) * A (REINFORCE, Williams 1992; A2C/A3C, Mnih et al. 2016).

    Its gradient is -A * grad log pi(a|s), the negated policy gradient estimate. With A = G_t, the discounted
    return from step t of a complete episode (`multistep.discounted_returns` with bootstrap_value=0), this is
    REINFORCE (Williams 1992, with reinforcement baseline 0); the gamma**t factor of Sutton & Barto (2018,
    section 13.3) is left out, as in common practice. For a learned baseline use
    `policy_gradient_with_baseline_loss`.

    Args:
      logits: [B, A] unnormalised log-probabilities of the policy.
      actions: [B] integer actions taken.
      advantages: [B] returns or advantages (detached).

    Returns:
      [B] per-sample loss.
    """
    _check_logits(logits)
    batch_size, num_actions = logits.shape
    if advantages.shape != (batch_size,):
        raise ValueError(f'advantages must have shape [B]=({batch_size},) like logits, got {tuple(advantages.shape)}.')
    if actions.shape != (batch_size,):
        raise ValueError(f'actions must have shape [B]=({batch_size},) like logits, got {tuple(actions.shape)}.')
    if actions.dtype.is_floating_point or actions.dtype.is_complex or actions.dtype == torch.bool:
        raise ValueError(f'actions must hold integer action indices, got dtype {actions.dtype}.')
    if batch_size > 0:
        lowest, highest = actions.min().item(), actions.max().item()
        if lowest < 0 or highest >= num_actions:
            raise ValueError(
                f'actions must lie in [0, {num_actions}) for A={num_actions}, got values in [{lowest}, {highest}].'
            )
    log_prob = F.log_softmax(logits, dim=1).gather(1, actions.long().unsqueeze(1)).squeeze(1)
    return -log_prob * advantages.detach()


class BaselineExtra(NamedTuple):
    """The terms of `policy_gradient_with_baseline_loss`, each [B] and detached."""

    policy_loss: Tensor  # -log pi(a|s) * advantage
    value_loss: Tensor  # 0.5 * (G - V(s))**2
    advantage: Tensor  # G - V(s)


def policy_gradient_with_baseline_loss(
    logits: Tensor, actions: Tensor, returns: Tensor, values: Tensor, value_cost: float = 1.0, normalized_advantage: bool = False
) -> LossOutput:
    """Policy-gradient loss with a learned state-value baseline, and the baseline's own regression loss.

      advantage = G - V(s)                                           (detached)
      loss      = -log pi(a|s) * advantage + value_cost * 0.5 * (G - V(s))**2

    With G the Monte-Carlo return this is REINFORCE with baseline (Williams 1992; Sutton & Barto 2018,
    section 13.4). With G an n-step bootstrapped return (`multistep.n_step_bootstrapped_returns`, or
    `multistep.discounted_returns` with a bootstrap value) it is the advantage actor-critic loss of A3C/A2C
    (Mnih et al. 2016, Algorithm S3), and with n=1 the one-step actor-critic (Konda & Tsitsiklis 2000;
    Sutton & Barto 2018, section 13.5), whose advantage is the TD error. The policy term sends no gradient
    into V and the value term none into the policy, so one optimizer over both networks (or a shared torso)
    works; value_cost weights the value gradients (A2C's value coefficient). Add `entropy_loss` for A3C's
    entropy regularisation. With `normalized_advantage` the policy term weighs log pi(a|s) by the advantage
    standardised over the batch (`normalize_advantages`, as PPO's implementations do per minibatch): a
    variance-reduction choice, not in the papers, that also fixes the policy term's scale against the entropy bonus.

    Args:
      logits: [B, A] unnormalised log-probabilities of the policy.
      actions: [B] integer actions taken.
      returns: [B] return targets G (detached).
      values: [B] baseline V(s) being trained.
      value_cost: weight of the value loss, >= 0.
      normalized_advantage: standardise the advantage over the batch in the policy term.

    Returns:
      LossOutput with loss [B] and extra=BaselineExtra(policy_loss, value_loss, advantage), all detached; advantage
      is G - V(s) before any standardisation.
    """
    _check_logits(logits)
    if returns.shape != logits.shape[:1]:
        raise ValueError(f'returns must have shape [B]=({logits.shape[0]},) like logits, got {tuple(returns.shape)}.')
    _check_batch('returns', returns, values=values)
    if not value_cost >= 0.0:
        raise ValueError(f'value_cost must be >= 0, got {value_cost}.')
    returns = returns.detach()
    advantage = returns - values.detach()
    policy_loss = policy_gradient_loss(logits, actions, normalize_advantages(advantage) if normalized_advantage else advantage)
    value_loss = l2_loss(returns - values)
    extra = BaselineExtra(policy_loss=policy_loss.detach(), value_loss=value_loss.detach(), advantage=advantage)
    return LossOutput(loss=policy_loss + value_cost * value_loss, extra=extra)


def normalize_advantages(advantages: Tensor, eps: float = 1e-8, *, sample_std_floor: bool = False) -> Tensor:
    """Standardises advantages over the whole batch: (A - mean(A)) / (std(A) + eps).

    Mean and std are taken over all elements (a [B] batch or a [T, B] rollout); std is the population
    standard deviation (divides by N, not N - 1). A batch of equal advantages becomes all zeros. Used by
    PPO implementations per minibatch; it is a variance-reduction choice, not part of the PPO paper.
    Sample Factory's variant (`sample_std_floor`, with eps=1e-7): (A - mean(A)) / max(std(A), eps) with the
    sample standard deviation (divides by N - 1); a single advantage becomes 0.

    Args:
      advantages: [...] advantages, at least one element.
      eps: small positive constant that keeps the division finite.
      sample_std_floor: Sample Factory's variant.

    Returns:
      Tensor of the same shape.
    """
    if advantages.numel() < 1:
        raise ValueError(f'advantages must hold at least one element, got shape {tuple(advantages.shape)}.')
    if not advantages.is_floating_point():
        raise ValueError(f'advantages must be a floating point tensor, got dtype {advantages.dtype}.')
    if not eps > 0.0:
        raise ValueError(f'eps must be > 0, got {eps}.')
    if sample_std_floor:
        if advantages.numel() == 1:
            return torch.zeros_like(advantages)
        std, mean = torch.std_mean(advantages)
        return (advantages - mean) / std.clamp_min(eps)
    mean = advantages.mean()
    std = advantages.std(correction=0)
    return (advantages - mean) / (std + eps)


def categorical_kl(logits: Tensor, old_logits: Tensor) -> Tensor:
    """KL(pi || pi_old) = sum_a pi(a) (log pi(a) - log pi_old(a)) per sample, for categorical policies given by
    logits; its gradient flows into `logits` only (Sample Factory's kl_loss penalty, Petrenko et al. 2020).

    Args:
      logits: [B, A] logits of the policy being trained.
      old_logits: [B, A] logits of the behaviour policy (detached).

    Returns:
      [B] per-sample divergence.
    """
    _check_logits(logits)
    if old_logits.shape != logits.shape:
        raise ValueError(f'old_logits must have the shape of logits {tuple(logits.shape)}, got {tuple(old_logits.shape)}.')
    log_pi, log_old = F.log_softmax(logits, dim=-1), F.log_softmax(old_logits.detach(), dim=-1)
    return (log_pi.exp() * (log_pi - log_old)).sum(dim=-1)
