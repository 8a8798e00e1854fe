"""Discrete soft actor-critic losses (Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings").

With a categorical policy, SAC's expectations over actions (Haarnoja et al. 2018) are exact sums over the A
actions instead of sampled estimates: the soft state value, the policy objective and the temperature
objective all weight every action by pi(a|s). (The original Deep RL Zoo took a max over actions where the
paper sums, and did not weight the temperature loss by pi.)

All functions are pure functions of tensors. Inputs are batch-first: `logits` [B, A] are the policy's
unnormalised log-probabilities (normalised log-probabilities work too: log_softmax leaves them unchanged, and
-inf marks an impossible action), Q-values are [B, A], rewards and discounts [B]. Losses are per sample [B].
alpha is the temperature, a number or a one-element tensor, treated as a constant except in
`temperature_loss`.
"""

import math
import numbers
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from deep_rl_zoo.policy_gradient import entropy_loss
from deep_rl_zoo.value_learning import LossOutput, l2_loss


def _check_action_values(reference_name: str, reference: Tensor, **others: Tensor) -> None:
    """Raises ValueError unless `reference` is a floating point [B, A] tensor and every other tensor has its shape."""
    if reference.dim() != 2 or reference.shape[1] < 1:
        raise ValueError(f'{reference_name} must have shape [B, A] with A >= 1, got {tuple(reference.shape)}.')
    if not reference.is_floating_point():
        raise ValueError(f'{reference_name} must be a floating point tensor, got dtype {reference.dtype}.')
    for name, tensor in others.items():
        if tensor.shape != reference.shape:
            raise ValueError(
                f'{name} must have shape [B, A]={tuple(reference.shape)} like {reference_name}, got {tuple(tensor.shape)}.'
            )


def _constant_alpha(alpha: float | Tensor) -> float | Tensor:
    """alpha as a detached scalar; raises ValueError unless it is a number >= 0 or a one-element float tensor."""
    if isinstance(alpha, Tensor):
        if alpha.numel() != 1 or not alpha.is_floating_point():
            raise ValueError(
                f'alpha must be a one-element floating point tensor, got dtype {alpha.dtype} shape {tuple(alpha.shape)}.'
            )
        return alpha.detach().reshape(())
    if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and alpha >= 0:
        return float(alpha)
    raise ValueError(f'alpha must be a number >= 0 or a one-element tensor, got {alpha!r}.')


def soft_state_value(logits: Tensor, q: Tensor, alpha: float | Tensor) -> Tensor:
    """The soft state value of a categorical policy (Christodoulou 2019, the discrete form of the soft value):

      V(s) = sum_a pi(a|s) [Q(s, a) - alpha log pi(a|s)] = E_pi[Q(s, .)] + alpha H(pi(.|s))

    an expectation over the policy, never a max over actions. Gradient flows into `logits` and `q`; callers
    making a target wrap it in torch.no_grad().

    Args:
      logits: [B, A] policy logits at s.
      q: [B, A] Q-values at s (for SAC's target: the minimum of the twin target critics).
      alpha: temperature, >= 0.

    Returns:
      [B] soft values.
    """
    _check_action_values('logits', logits, q=q)
    alpha = _constant_alpha(alpha)
    # entropy_loss is sum_a pi log pi = -H; it keeps 0 log 0 = 0 for -inf logits.
    return (F.softmax(logits, dim=1) * q).sum(dim=1) - alpha * entropy_loss(logits)


class SoftQExtra(NamedTuple):
    """Diagnostics of `soft_q_learning`, each [B] and detached."""

    target: Tensor  # r_t + discount_t * V(s_t)
    td_error_1: Tensor  # target - q1_tm1[a_tm1]
    td_error_2: Tensor  # target - q2_tm1[a_tm1]


def soft_q_learning(
    q1_tm1: Tensor,
    q2_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    logits_t: Tensor,
    q1_t: Tensor,
    q2_t: Tensor,
    alpha: float | Tensor,
) -> LossOutput:
    """Soft Q-learning loss of SAC's twin critics (Christodoulou 2019, section 4, soft Bellman residual J_Q).

      V(s_t)  = sum_a pi(a|s_t) [min(q1_t, q2_t)(s_t, a) - alpha log pi(a|s_t)]       (no gradient)
      target  = r_t + discount_t * V(s_t)
      loss    = 0.5 (target - q1_tm1[a_tm1])**2 + 0.5 (target - q2_tm1[a_tm1])**2

    The minimum of the two target critics inside V is the clipped double Q trick of TD3 (Fujimoto et al. 2018)
    that SAC uses. The two critics' parameters are disjoint, so the summed loss trains each on its own term.

    Args:
      q1_tm1: [B, A] first online critic at the state where a_tm1 was taken.
      q2_tm1: [B, A] second online critic there.
      a_tm1: [B] integer actions taken.
      r_t: [B] rewards (for n-step learning, the discounted sum of the n rewards).
      discount_t: [B] gamma (or gamma**n) times (1 - done); 0 at the end of an episode.
      logits_t: [B, A] the current policy's logits at the next state.
      q1_t: [B, A] first target critic at the next state.
      q2_t: [B, A] second target critic at the next state.
      alpha: temperature, >= 0.

    Returns:
      LossOutput with loss [B] and extra=SoftQExtra(target, td_error_1, td_error_2).
    """
    _check_action_values('q1_tm1', q1_tm1, q2_tm1=q2_tm1, logits_t=logits_t, q1_t=q1_t, q2_t=q2_t)
    batch_size, num_actions = q1_tm1.shape
    for name, tensor in (('a_tm1', a_tm1), ('r_t', r_t), ('discount_t', discount_t)):
        if tensor.shape != (batch_size,):
            raise ValueError(f'{name} must have shape [B]=({batch_size},) like q1_tm1, got {tuple(tensor.shape)}.')
    if a_tm1.dtype.is_floating_point or a_tm1.dtype.is_complex or a_tm1.dtype == torch.bool:
        raise ValueError(f'a_tm1 must hold integer action indices, got dtype {a_tm1.dtype}.')
    if batch_size > 0:
        lowest, highest = a_tm1.min().item(), a_tm1.max().item()
        if lowest < 0 or highest >= num_actions:
            raise ValueError(
                f'a_tm1 must lie in [0, {num_actions}) for A={num_actions}, got values in [{lowest}, {highest}].'
            )
    with torch.no_grad():
        target = r_t + discount_t * soft_state_value(logits_t, torch.minimum(q1_t, q2_t), alpha)
    action = a_tm1.long().unsqueeze(1)
    td_error_1 = target - q1_tm1.gather(1, action).squeeze(1)
    td_error_2 = target - q2_tm1.gather(1, action).squeeze(1)
    extra = SoftQExtra(target=target, td_error_1=td_error_1.detach(), td_error_2=td_error_2.detach())
    return LossOutput(loss=l2_loss(td_error_1) + l2_loss(td_error_2), extra=extra)


class SoftPolicyExtra(NamedTuple):
    """Diagnostics of `soft_policy_loss`: the policy's entropy H(pi(.|s)) [B], detached."""

    entropy: Tensor


def soft_policy_loss(logits: Tensor, q1: Tensor, q2: Tensor, alpha: float | Tensor) -> LossOutput:
    """Discrete SAC's policy loss (Christodoulou 2019, the policy objective in its discrete form):

      loss = sum_a pi(a|s) [alpha log pi(a|s) - min(q1, q2)(s, a)]        (Q-values and alpha detached)

    the KL projection of the policy onto exp(Q / alpha), with the exact expectation over actions, so no
    reparameterisation is needed. It equals -V(s) of `soft_state_value` with Q = min(q1, q2).

    Args:
      logits: [B, A] policy logits at s (being trained).
      q1: [B, A] first online critic at s.
      q2: [B, A] second online critic at s.
      alpha: temperature, >= 0.

    Returns:
      LossOutput with loss [B] and extra=SoftPolicyExtra(entropy [B]).
    """
    _check_action_values('logits', logits, q1=q1, q2=q2)
    alpha = _constant_alpha(alpha)
    negative_entropy = entropy_loss(logits)
    expected_q = (F.softmax(logits, dim=1) * torch.minimum(q1, q2).detach()).sum(dim=1)
    extra = SoftPolicyExtra(entropy=-negative_entropy.detach())
    return LossOutput(loss=alpha * negative_entropy - expected_q, extra=extra)


class TemperatureExtra(NamedTuple):
    """Diagnostics of `temperature_loss`: the policy's entropy H(pi(.|s)) [B], detached."""

    entropy: Tensor


def temperature_loss(logits: Tensor, log_alpha: Tensor, target_entropy: float) -> LossOutput:
    """Discrete SAC's temperature loss, weighted by the policy (Christodoulou 2019, eq. 11), in log alpha:

      loss = -log_alpha * sum_a pi(a|s) [log pi(a|s) + target_entropy]     (pi detached)
           =  log_alpha * (H(pi(.|s)) - target_entropy)

    Its gradient in log_alpha is H - target_entropy: alpha falls while the policy's entropy is above the
    target and rises while it is below. The paper writes the loss in alpha itself; the log alpha form (as in
    Haarnoja et al.'s implementation) has gradients of the same sign and keeps alpha = exp(log_alpha) positive.

    Args:
      logits: [B, A] policy logits at s (no gradient reaches them).
      log_alpha: one-element tensor, log of the temperature (being trained).
      target_entropy: the target entropy in nats; see `discrete_target_entropy`.

    Returns:
      LossOutput with loss [B] and extra=TemperatureExtra(entropy [B]).
    """
    _check_action_values('logits', logits)
    if not isinstance(log_alpha, Tensor) or log_alpha.numel() != 1 or not log_alpha.is_floating_point():
        raise ValueError(f'log_alpha must be a one-element floating point tensor, got {log_alpha!r}.')
    is_number = isinstance(target_entropy, numbers.Real) and not isinstance(target_entropy, bool)
    if not (is_number and math.isfinite(target_entropy)):
        raise ValueError(f'target_entropy must be a finite number, got {target_entropy!r}.')
    entropy = -entropy_loss(logits.detach())
    return LossOutput(loss=log_alpha.reshape(()) * (entropy - target_entropy), extra=TemperatureExtra(entropy=entropy))


def discrete_target_entropy(num_actions: int, ratio: float = 0.98) -> float:
    """The target entropy ratio * log(num_actions) nats: a fraction of the uniform policy's (maximal) entropy.

    Christodoulou (2019, table of hyperparameters) uses 0.98 * -log(1 / |A|). It is positive, unlike
    continuous SAC's -dim(A). With few actions 0.98 can be close to unreachable, so alpha keeps growing; a
    smaller ratio (e.g. 0.7 to 0.8, reported by users of the paper's code on CartPole) is a common fix.

    Args:
      num_actions: |A| >= 1.
      ratio: fraction of the maximal entropy, in [0, 1].
    """
    if isinstance(num_actions, bool) or not isinstance(num_actions, numbers.Integral) or num_actions < 1:
        raise ValueError(f'num_actions must be an integer >= 1, got {num_actions!r}.')
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f'ratio must lie in [0, 1], got {ratio}.')
    return ratio * math.log(num_actions)
