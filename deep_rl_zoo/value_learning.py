"""Value-based losses: Q-learning and double Q-learning with l2 or Huber penalties.

All functions are pure functions of tensors. Inputs are batch-first and losses are returned per sample
(shape [B]) so that a caller can apply importance weights (prioritized replay) before averaging.
Bootstrap targets are computed without gradient: only the online estimate `q_tm1` is trained.
"""

from typing import Any, NamedTuple

import torch
from torch import Tensor

LOSS_TYPES = ('huber', 'l2')


class QExtra(NamedTuple):
    """Diagnostics of a Q-learning loss, both detached and of shape [B]."""

    target: Tensor
    td_error: Tensor


class LossOutput(NamedTuple):
    """A per-sample loss of shape [B] and the extra values that went into it."""

    loss: Tensor
    extra: Any


def l2_loss(x: Tensor) -> Tensor:
    """Elementwise 0.5 * x**2, whose gradient is x."""
    return 0.5 * x**2


def huber_loss(x: Tensor, delta: float = 1.0) -> Tensor:
    """Elementwise Huber loss (Huber 1964).

    0.5 * x**2 where |x| <= delta, and delta * (|x| - 0.5 * delta) outside. Its gradient is x clipped
    to [-delta, delta]: with delta=1 this is exactly Nature DQN's "clip the error term to [-1, 1]"
    (Mnih et al. 2015, Methods, "Training algorithm for deep Q-networks").
    """
    if delta <= 0:
        raise ValueError(f'huber delta must be > 0, got {delta}.')
    abs_x = x.abs()
    quadratic = torch.clamp(abs_x, max=delta)
    linear = abs_x - quadratic
    return 0.5 * quadratic**2 + delta * linear


def _check_q_inputs(q_tm1: Tensor, a_tm1: Tensor, r_t: Tensor, discount_t: Tensor, **next_q: Tensor) -> None:
    """Raises ValueError unless the shapes and dtypes fit [B, A], [B], [B], [B] and [B, A] for each next_q."""
    if q_tm1.dim() != 2:
        raise ValueError(f'q_tm1 must have shape [B, A], got shape {tuple(q_tm1.shape)}.')
    if not q_tm1.is_floating_point():
        raise ValueError(f'q_tm1 must be a floating point tensor, got dtype {q_tm1.dtype}.')
    batch_size, num_actions = q_tm1.shape
    for name, tensor in (('a_tm1', a_tm1), ('r_t', r_t), ('discount_t', discount_t)):
        if tensor.shape != (batch_size,):
            raise ValueError(f'{name} must have shape [B]=({batch_size},) like q_tm1, got {tuple(tensor.shape)}.')
    for name, tensor in next_q.items():
        if tensor.shape != q_tm1.shape:
            raise ValueError(
                f'{name} must have shape [B, A]={tuple(q_tm1.shape)} like q_tm1, got {tuple(tensor.shape)}.'
            )
    if a_tm1.dtype.is_floating_point or a_tm1.dtype.is_complex or a_tm1.dtype == torch.bool:
        raise ValueError(f'a_tm1 must hold integer action indices, got dtype {a_tm1.dtype}.')
    if batch_size > 0:
        lowest, highest = a_tm1.min().item(), a_tm1.max().item()
        if lowest < 0 or highest >= num_actions:
            raise ValueError(
                f'a_tm1 must lie in [0, {num_actions}) for A={num_actions}, got values in [{lowest}, {highest}].'
            )


def _td_loss(q_tm1: Tensor, a_tm1: Tensor, target: Tensor, loss: str, huber_delta: float) -> LossOutput:
    """Applies the chosen penalty to target - q_tm1[a_tm1]; `target` must already be detached."""
    if loss not in LOSS_TYPES:
        raise ValueError(f'loss must be one of {LOSS_TYPES}, got {loss!r}.')
    q_tm1_a = q_tm1.gather(1, a_tm1.long().unsqueeze(1)).squeeze(1)
    td_error = target - q_tm1_a
    per_sample = huber_loss(td_error, huber_delta) if loss == 'huber' else l2_loss(td_error)
    return LossOutput(loss=per_sample, extra=QExtra(target=target, td_error=td_error.detach()))


def qlearning(
    q_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    q_t: Tensor,
    loss: str = 'huber',
    huber_delta: float = 1.0,
) -> LossOutput:
    """Q-learning loss (Watkins 1989; as used by DQN, Mnih et al. 2015, eq. 2).

    target_b   = r_t[b] + discount_t[b] * max_a q_t[b, a]       (no gradient)
    td_error_b = target_b - q_tm1[b, a_tm1[b]]
    loss_b     = huber(td_error_b, huber_delta) or 0.5 * td_error_b**2

    Args:
      q_tm1: [B, A] online Q-values at the state where a_tm1 was taken.
      a_tm1: [B] integer actions taken.
      r_t: [B] rewards (for n-step learning, the discounted sum of the n rewards).
      discount_t: [B] discount applied to the bootstrap value. It already holds gamma (gamma**n for n-step
        learning) multiplied by (1 - done), so it is 0 at the end of an episode.
      q_t: [B, A] Q-values at the next state, usually from the target network.
      loss: 'huber' or 'l2'.
      huber_delta: the Huber threshold, used only when loss='huber'.

    Returns:
      LossOutput with loss [B] and extra=QExtra(target [B], td_error [B]), both detached.
    """
    _check_q_inputs(q_tm1, a_tm1, r_t, discount_t, q_t=q_t)
    with torch.no_grad():
        target = r_t + discount_t * q_t.max(dim=1).values
    return _td_loss(q_tm1, a_tm1, target, loss, huber_delta)


def double_qlearning(
    q_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    q_t_value: Tensor,
    q_t_selector: Tensor,
    loss: str = 'huber',
    huber_delta: float = 1.0,
) -> LossOutput:
    """Double Q-learning loss (van Hasselt, Guez & Silver 2016, "Deep RL with Double Q-learning", eq. 4).

    The online network chooses the next action and the target network evaluates it:
    target_b   = r_t[b] + discount_t[b] * q_t_value[b, argmax_a q_t_selector[b, a]]   (no gradient)
    td_error_b = target_b - q_tm1[b, a_tm1[b]]

    Args:
      q_tm1: [B, A] online Q-values at the state where a_tm1 was taken.
      a_tm1: [B] integer actions taken.
      r_t: [B] rewards (for n-step learning, the discounted sum of the n rewards).
      discount_t: [B] gamma (or gamma**n) times (1 - done); 0 at the end of an episode.
      q_t_value: [B, A] target-network Q-values at the next state, used to evaluate the action.
      q_t_selector: [B, A] online-network Q-values at the next state, used to choose the action.
      loss: 'huber' or 'l2'.
      huber_delta: the Huber threshold, used only when loss='huber'.

    Returns:
      LossOutput with loss [B] and extra=QExtra(target [B], td_error [B]), both detached.
    """
    _check_q_inputs(q_tm1, a_tm1, r_t, discount_t, q_t_value=q_t_value, q_t_selector=q_t_selector)
    with torch.no_grad():
        best_action = q_t_selector.argmax(dim=1, keepdim=True)
        target = r_t + discount_t * q_t_value.gather(1, best_action).squeeze(1)
    return _td_loss(q_tm1, a_tm1, target, loss, huber_delta)
