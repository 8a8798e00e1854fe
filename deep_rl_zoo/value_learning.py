"""Value-based losses: Q-learning and double Q-learning with l2 or Huber penalties, categorical (C51) Q-learning
with its projection onto a fixed support, and quantile regression Q-learning (QR-DQN, IQN).

All functions are pure functions of tensors. Inputs are batch-first and losses are returned per sample
(shape [B]) so that a caller can apply importance weights (prioritized replay) before averaging.
Bootstrap targets are computed without gradient: only the online estimates (at s_tm1) are trained.
"""

from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
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


class QuantileExtra(NamedTuple):
    """Diagnostics of a quantile Q-learning loss: the target quantile values [B, M], detached."""

    target: Tensor


def quantile_regression_loss(dist_src: Tensor, tau_src: Tensor, dist_target: Tensor, huber_param: float = 1.0) -> Tensor:
    """Quantile Huber loss of source quantiles against target samples, per sample [B].

    Dabney et al. 2017, "Distributional RL with Quantile Regression", eq. 9-10 (QR-DQN), and Dabney et al. 2018,
    "Implicit Quantile Networks", eq. 3 (IQN). For every pair of a source quantile i and a target sample j,
    u_ij = dist_target[j] - dist_src[i] and

        rho_tau(u) = |tau - 1{u < 0}| * huber(u, kappa) / kappa    for kappa > 0
        rho_tau(u) = |tau - 1{u < 0}| * |u|                        for kappa = 0 (the plain quantile loss)

    loss_b = sum_i mean_j rho_{tau_i}(u_ij): summed over the N source quantiles and averaged over the M target
    samples, the reduction of both papers (QR-DQN's Algorithm 1 outputs sum_i E_j; IQN's eq. 3 is
    1/N' sum_i sum_j). The targets carry no gradient. Minimising it moves theta_i towards the tau_i-quantile of
    the targets: an under-estimate is pushed up with weight tau, an over-estimate down with weight 1 - tau.

    Args:
      dist_src: [B, N] source quantile values theta_i (with gradient).
      tau_src: [B, N] or [N] quantile fractions in [0, 1] of the source values.
      dist_target: [B, M] target samples (M may differ from N).
      huber_param: kappa >= 0.
    """
    if huber_param < 0:
        raise ValueError(f'huber_param (kappa) must be >= 0, got {huber_param}.')
    if dist_src.dim() != 2 or not dist_src.is_floating_point():
        raise ValueError(f'dist_src must be a floating point tensor of shape [B, N], got {dist_src.dtype} {tuple(dist_src.shape)}.')
    batch_size, num_quantiles = dist_src.shape
    if tau_src.shape not in ((num_quantiles,), (batch_size, num_quantiles)):
        raise ValueError(f'tau_src must have shape [N] or [B, N] like dist_src {tuple(dist_src.shape)}, got {tuple(tau_src.shape)}.')
    if dist_target.dim() != 2 or dist_target.shape[0] != batch_size:
        raise ValueError(f'dist_target must have shape [B, M] with B={batch_size}, got {tuple(dist_target.shape)}.')
    if ((tau_src < 0) | (tau_src > 1)).any():
        raise ValueError('tau_src must lie in [0, 1].')
    num_targets = dist_target.shape[1]
    source = dist_src.unsqueeze(2).expand(-1, -1, num_targets)  # theta_i: [B, N, M]
    target = dist_target.detach().unsqueeze(1).expand(-1, num_quantiles, -1)  # target_j: [B, N, M]
    tau = tau_src.expand(batch_size, num_quantiles).unsqueeze(2)
    weight = torch.where(target < source, 1 - tau, tau)  # |tau - 1{u < 0}| with u = target - source
    if huber_param > 0:  # torch's fused Huber loss: the same function as `huber_loss`, and 3x faster here
        penalty = F.huber_loss(source, target, reduction='none', delta=huber_param) / huber_param
    else:
        penalty = (target - source).abs()
    return (weight * penalty).mean(dim=2).sum(dim=1)


def quantile_q_learning(
    dist_q_tm1: Tensor,
    tau_q_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    dist_q_t_selector: Tensor,
    dist_q_t: Tensor,
    huber_param: float = 1.0,
) -> LossOutput:
    """Quantile regression Q-learning (Dabney et al. 2017, Algorithm 1; Dabney et al. 2018, Algorithm 1).

    a*_b      = argmax_a mean_k dist_q_t_selector[b, k, a]                 (no gradient)
    target_bj = r_t[b] + discount_t[b] * dist_q_t[b, j, a*_b]              (no gradient)
    loss_b    = quantile_regression_loss(dist_q_tm1[b, :, a_tm1[b]], tau_q_tm1, target_b, huber_param)

    Args:
      dist_q_tm1: [B, N, A] online quantile values at the state where a_tm1 was taken.
      tau_q_tm1: [B, N] or [N] their quantile fractions.
      a_tm1: [B] integer actions taken.
      r_t: [B] rewards (for n-step learning, the discounted sum of the n rewards).
      discount_t: [B] gamma (or gamma**n) times (1 - done); 0 at the end of an episode.
      dist_q_t_selector: [B, K, A] quantile values at the next state whose mean chooses a*.
      dist_q_t: [B, M, A] quantile values at the next state that make the target.
      huber_param: kappa of the quantile Huber loss (0: plain quantile loss).

    Returns:
      LossOutput with loss [B] and extra=QuantileExtra(target [B, M]).
    """
    for name, tensor in (('dist_q_tm1', dist_q_tm1), ('dist_q_t_selector', dist_q_t_selector), ('dist_q_t', dist_q_t)):
        if tensor.dim() != 3 or tensor.shape[0] != dist_q_tm1.shape[0] or tensor.shape[2] != dist_q_tm1.shape[-1]:
            raise ValueError(
                f'{name} must have shape [B, *, A] with B, A of dist_q_tm1 {tuple(dist_q_tm1.shape)}, got {tuple(tensor.shape)}.'
            )
    _check_q_inputs(dist_q_tm1[:, 0], a_tm1, r_t, discount_t)
    with torch.no_grad():
        best_action = dist_q_t_selector.mean(dim=1).argmax(dim=1)
        target = r_t.unsqueeze(1) + discount_t.unsqueeze(1) * _select_action(dist_q_t, best_action)
    loss = quantile_regression_loss(_select_action(dist_q_tm1, a_tm1), tau_q_tm1, target, huber_param)
    return LossOutput(loss=loss, extra=QuantileExtra(target=target))


def _select_action(dist: Tensor, action: Tensor) -> Tensor:
    """dist[b, :, action[b]] of a [B, N, A] tensor: the [B, N] quantile values of one action per sample."""
    index = action.long().view(-1, 1, 1).expand(-1, dist.shape[1], 1)
    return dist.gather(2, index).squeeze(2)


def categorical_l2_project(z_p: Tensor, probs: Tensor, z_q: Tensor) -> Tensor:
    """Projects distributions on atoms `z_p` onto the fixed support `z_q` (Bellemare et al. 2017, Algorithm 1).

    The atoms are first clipped to [z_q[0], z_q[-1]]. Each atom's mass then goes to its two neighbouring support
    points in proportion to closeness: an atom at x between z_q[j] and z_q[j + 1] gives a fraction
    (z_q[j + 1] - x) / (z_q[j + 1] - z_q[j]) of its mass to z_q[j] and the rest to z_q[j + 1]; an atom on a
    support point keeps all of it there (Algorithm 1 written with floor and ceil loses that mass, as they agree
    there). This is eq. 7's projection Phi; it is the projection in the Cramer (l2)
    metric of the CDFs (Rowland et al. 2018), hence the name. The support may be unevenly spaced.

    Args:
      z_p: [B, K] atoms of the distributions to project (e.g. r + gamma * z after a Bellman update).
      probs: [B, K] their probabilities.
      z_q: [N] support to project onto, strictly increasing.

    Returns:
      [B, N] probabilities on z_q; each row has the total mass of the row of `probs`.
    """
    if z_p.dim() != 2 or probs.shape != z_p.shape:
        raise ValueError(f'z_p and probs must both have shape [B, K], got {tuple(z_p.shape)} and {tuple(probs.shape)}.')
    if z_q.dim() != 1 or len(z_q) < 2:
        raise ValueError(f'z_q must have shape [N] with N >= 2, got {tuple(z_q.shape)}.')
    gaps = z_q[1:] - z_q[:-1]
    if (gaps <= 0).any():
        raise ValueError('z_q must be strictly increasing.')
    x = z_p.clamp(z_q[0], z_q[-1])
    below = (torch.searchsorted(z_q, x.contiguous(), right=True) - 1).clamp(0, len(z_q) - 2)  # z_q[below] <= x
    share_above = (x - z_q[below]) / gaps[below]  # in [0, 1]: 0 on z_q[below], 1 on z_q[below + 1]
    projected = torch.zeros(z_p.shape[0], len(z_q), dtype=probs.dtype, device=probs.device)
    projected.scatter_add_(1, below, probs * (1 - share_above))
    return projected.scatter_add_(1, below + 1, probs * share_above)


class CategoricalExtra(NamedTuple):
    """Diagnostics of a categorical Q-learning loss, all detached."""

    target: Tensor  # [B, N] projected target distribution
    kl_divergence: Tensor  # [B] KL(target || online distribution of a_tm1): the loss less the target's entropy
    q_tm1: Tensor  # [B, A] expected online Q-values at s_tm1
    q_t: Tensor  # [B, A] expected Q-values of logits_t at s_t


def categorical_q_learning(
    logits_tm1: Tensor,
    a_tm1: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    logits_t: Tensor,
    support: Tensor,
    q_t_selector: Tensor | None = None,
) -> LossOutput:
    """Categorical (C51) Q-learning loss (Bellemare et al. 2017, Algorithm 1; double Q selection as in Rainbow).

    With p = softmax over atoms of the logits and Q(s, a) = sum_i z_i p_i(s, a):
    a*_b     = argmax_a q_t_selector[b, a], or argmax_a Q(s_t, a) of logits_t when no selector is given
    target_b = Phi( r_t[b] + discount_t[b] * z , p(s_t, a*_b) )          (projected onto z; no gradient)
    loss_b   = - sum_i target_b,i log p_i(s_tm1, a_tm1[b])                (cross-entropy)

    Args:
      logits_tm1: [B, A, N] online logits at the state where a_tm1 was taken.
      a_tm1: [B] integer actions taken.
      r_t: [B] rewards (for n-step learning, the discounted sum of the n rewards).
      discount_t: [B] gamma (or gamma**n) times (1 - done); 0 at the end of an episode.
      logits_t: [B, A, N] logits at the next state, usually from the target network.
      support: [N] the atoms z, strictly increasing.
      q_t_selector: optional [B, A] Q-values at the next state that choose a* (double Q-learning: the online
        network's), instead of the expected values of logits_t.

    Returns:
      LossOutput with loss [B] and extra=CategoricalExtra.
    """
    if logits_tm1.dim() != 3 or logits_t.shape != logits_tm1.shape or support.shape != logits_tm1.shape[2:]:
        raise ValueError(
            'logits_tm1 and logits_t must have shape [B, A, N] and support [N], got '
            f'{tuple(logits_tm1.shape)}, {tuple(logits_t.shape)} and {tuple(support.shape)}.'
        )
    q_t = (torch.softmax(logits_t.detach(), dim=2) * support).sum(dim=2)
    selector = q_t if q_t_selector is None else q_t_selector
    _check_q_inputs(logits_tm1[:, :, 0], a_tm1, r_t, discount_t, q_t_selector=selector)
    batch = torch.arange(len(a_tm1), device=a_tm1.device)
    with torch.no_grad():
        probs_t = torch.softmax(logits_t[batch, selector.argmax(dim=1)], dim=1)
        atoms_t = r_t.unsqueeze(1) + discount_t.unsqueeze(1) * support
        target = categorical_l2_project(atoms_t, probs_t, support)
    log_probs_tm1 = torch.log_softmax(logits_tm1[batch, a_tm1.long()], dim=1)
    loss = -(target * log_probs_tm1).sum(dim=1)
    with torch.no_grad():
        kl_divergence = loss + torch.special.xlogy(target, target).sum(dim=1)
        q_tm1 = (torch.softmax(logits_tm1, dim=2) * support).sum(dim=2)
    return LossOutput(loss=loss, extra=CategoricalExtra(target=target, kl_divergence=kl_divergence, q_tm1=q_tm1, q_t=q_t))
