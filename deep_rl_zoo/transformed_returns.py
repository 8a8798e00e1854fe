"""Value rescaling and the transformed n-step targets of R2D2 (Kapturowski et al. 2019, section 2), and its sequence
priorities. Pure functions of tensors, shared by the agents that learn Q-values in the rescaled space (R2D2; NGU and
Agent57 build on them).

Rewards of very different scales are learned with one network by fitting Q in the space of an invertible function h
(Pohlen et al. 2018, "Observe and Look Further", section 3.2):

    h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x
    h^-1(y)   = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1)

and the n-step target of step t is taken back out of h-space, discounted and put back in (R2D2, section 2):

    y_t = h( sum_{k<m} (prod_{j<k} d_{t+j}) r_{t+k} + (prod_{j<m} d_{t+j}) h^-1( Q^-(s_{t+m}, a*) ) ),
    a*  = argmax_a Q(s_{t+m}, a)                          (double Q-learning: online selects, target evaluates)

with d = gamma (1 - terminal), and m = min(n, steps left in the sequence): the window stops at the last real step
of a sequence (a sequence padded after its episode's end bootstraps from the observation after its last step,
where a time limit cut it; a terminal has d = 0, so nothing is bootstrapped there).
"""

import torch
from torch import Tensor

VALUE_RESCALING_EPS = 1e-3  # the paper's eps
PRIORITY_ETA = 0.9  # the paper's eta


def _check_eps(eps: float) -> None:
    if not eps >= 0.0:
        raise ValueError(f'the value rescaling eps must be >= 0, got {eps}')


def signed_hyperbolic(x: Tensor, eps: float = VALUE_RESCALING_EPS) -> Tensor:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x (Pohlen et al. 2018, proposition A.2's function)."""
    _check_eps(eps)
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1.0) - 1.0) + eps * x


def signed_parabolic(y: Tensor, eps: float = VALUE_RESCALING_EPS) -> Tensor:
    """h^-1(y), the exact inverse of `signed_hyperbolic` in closed form: with u = sqrt(|x| + 1), h is the quadratic
    eps u^2 + u - (1 + eps + |y|) = 0 in u, whose positive root (sqrt(1 + 4 eps c) - 1) / (2 eps), c = |y| + 1 + eps,
    is computed as 2 c / (1 + sqrt(1 + 4 eps c)) (no cancellation in float32; u = |y| + 1 when eps = 0); |x| = u^2 - 1."""
    _check_eps(eps)
    c = torch.abs(y) + 1.0 + eps
    root = 2.0 * c / (1.0 + torch.sqrt(1.0 + 4.0 * eps * c))
    return torch.sign(y) * (root**2 - 1.0)


def transformed_n_step_q_targets(
    q_t_selector: Tensor,
    q_t_target: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    mask: Tensor,
    n: int,
    eps: float = VALUE_RESCALING_EPS,
) -> Tensor:
    """The transformed n-step double-Q targets y_t of the module docstring for each step of B sequences, [T, B].

    Args:
      q_t_selector: [T + 1, B, A] online Q-values at the T observations and the one after the last step (selects a*).
      q_t_target: [T + 1, B, A] target-network Q-values there, in h-space (evaluates a*).
      r_t: [T, B] rewards after each step.
      discount_t: [T, B] gamma (1 - terminal), 0 on padding.
      mask: [T, B] bool, the step is real (False on the padding after an episode's end; a sequence's real steps come
        first). Steps after the last real one are never summed; their targets are 0.
      n: the most rewards summed before bootstrapping (>= 1).
      eps: eps of h.
    """
    if n < 1:
        raise ValueError(f'n must be >= 1, got {n}')
    num_steps = r_t.shape[0]
    if discount_t.shape != r_t.shape or mask.shape != r_t.shape:
        raise ValueError(f'r_t, discount_t and mask must have one shape [T, B], got {tuple(r_t.shape)}, {tuple(discount_t.shape)}, {tuple(mask.shape)}')
    if q_t_selector.shape != q_t_target.shape or q_t_target.shape[:2] != (num_steps + 1, r_t.shape[1]):
        raise ValueError(
            f'q_t_selector and q_t_target must both be [T + 1, B, A] with [T, B] = {tuple(r_t.shape)}, '
            f'got {tuple(q_t_selector.shape)} and {tuple(q_t_target.shape)}'
        )
    best = q_t_selector.argmax(dim=-1, keepdim=True)
    bootstrap = signed_parabolic(q_t_target.gather(-1, best).squeeze(-1), eps)  # [T + 1, B], back in return units
    mask = mask.bool()
    # Pad by n steps of padding so that every window t..t+n-1 can be read without leaving the tensors.
    pad = torch.zeros((n,) + tuple(r_t.shape[1:]), dtype=r_t.dtype, device=r_t.device)
    rewards, discounts = torch.cat([r_t, pad]), torch.cat([discount_t, pad])
    real = torch.cat([mask, pad.bool()])
    returns = torch.zeros_like(r_t)
    scale = torch.ones_like(r_t)  # prod_{j<k} d_{t+j} over the steps summed so far
    end = torch.arange(num_steps, device=r_t.device)[:, None].expand_as(r_t).clone()  # index of the bootstrap observation
    going = mask.clone()
    for k in range(n):
        going = going & real[k : k + num_steps]
        returns = returns + torch.where(going, scale * rewards[k : k + num_steps], 0.0)
        scale = torch.where(going, scale * discounts[k : k + num_steps], scale)
        end = end + going.long()
    returns = returns + scale * bootstrap.gather(0, end)
    return torch.where(mask, signed_hyperbolic(returns, eps), 0.0)


def sequence_priorities(td_errors: Tensor, mask: Tensor, eta: float = PRIORITY_ETA) -> Tensor:
    """p = eta max_t |delta_t| + (1 - eta) mean_t |delta_t| over each sequence's learned steps (`mask` [T, B]), [B]
    (R2D2, section 2: a mean alone washes out the large errors of long sequences). A sequence without learned
    steps gets 0."""
    if not 0.0 <= eta <= 1.0:
        raise ValueError(f'eta must be in [0, 1], got {eta}')
    if td_errors.shape != mask.shape:
        raise ValueError(f'td_errors and mask must have one shape [T, B], got {tuple(td_errors.shape)} and {tuple(mask.shape)}')
    errors = torch.where(mask.bool(), td_errors.abs(), 0.0)
    count = mask.sum(dim=0).clamp(min=1)
    return eta * errors.amax(dim=0) + (1.0 - eta) * errors.sum(dim=0) / count


def transformed_retrace_targets(
    q_t_selector: Tensor,
    q_t_target: Tensor,
    a_t: Tensor,
    r_t: Tensor,
    discount_t: Tensor,
    mask: Tensor,
    retrace_lambda: float,
    eps: float = VALUE_RESCALING_EPS,
) -> Tensor:
    """Transformed Retrace targets y_t = h(G_t) for each step of B sequences, [T, B] (Munos et al. 2016, Retrace;
    in h-space as NGU, Badia et al. 2020, appendix E, and Agent57). With Q = h^-1(q_t_target) and the greedy target
    policy pi(x) = argmax_a q_t_selector(x, a) (the online network's, as R2D2's double Q):

        G_t = r_t + d_t [ Q(x_t+1, pi(x_t+1)) + c_t+1 (G_t+1 - Q(x_t+1, a_t+1)) ],
        c_s = lambda min(1, pi(a_s | x_s) / mu(a_s | x_s)) = lambda 1[a_s = pi(x_s)]

    (for a greedy pi the truncated trace needs no behaviour probability mu: pi / mu >= 1 where pi is 1). The trace
    stops after a sequence's last real step: G of that step bootstraps from Q(x_n, pi(x_n)) alone. (The original zoo
    took softmax(Q) as the target policy: not Retrace with a greedy target.)

    Args:
      q_t_selector: [T + 1, B, A] online Q-values (h-space) at the T observations and the one after the last step.
      q_t_target: [T + 1, B, A] target-network Q-values there (h-space).
      a_t: [T, B] actions taken.
      r_t: [T, B] rewards.
      discount_t: [T, B] gamma (1 - terminal), 0 on padding.
      mask: [T, B] bool, the step is real (real steps first); targets of padding are 0.
      retrace_lambda: lambda in [0, 1].
      eps: eps of h.
    """
    if not 0.0 <= retrace_lambda <= 1.0:
        raise ValueError(f'--retrace_lambda must be in [0, 1], got {retrace_lambda}')
    num_steps = r_t.shape[0]
    if a_t.shape != r_t.shape or discount_t.shape != r_t.shape or mask.shape != r_t.shape:
        raise ValueError(
            f'a_t, r_t, discount_t and mask must have one shape [T, B], got {tuple(a_t.shape)}, {tuple(r_t.shape)}, {tuple(discount_t.shape)}, {tuple(mask.shape)}'
        )
    if q_t_selector.shape != q_t_target.shape or q_t_target.shape[:2] != (num_steps + 1, r_t.shape[1]):
        raise ValueError(
            f'q_t_selector and q_t_target must both be [T + 1, B, A] with [T, B] = {tuple(r_t.shape)}, '
            f'got {tuple(q_t_selector.shape)} and {tuple(q_t_target.shape)}'
        )
    greedy = q_t_selector.argmax(dim=-1)  # [T + 1, B]
    q = signed_parabolic(q_t_target, eps)
    greedy_value = q.gather(-1, greedy.unsqueeze(-1)).squeeze(-1)  # [T + 1, B]
    taken_value = q[:num_steps].gather(-1, a_t.long().unsqueeze(-1)).squeeze(-1)  # [T, B]
    trace = retrace_lambda * (a_t.long() == greedy[:num_steps]).to(r_t.dtype)  # c_t
    mask = mask.bool()
    returns = torch.zeros_like(r_t)
    following = torch.zeros_like(r_t[0])  # G_t+1 - Q(x_t+1, a_t+1) weighted by c_t+1, 0 past the last real step
    for t in reversed(range(num_steps)):
        returns[t] = r_t[t] + discount_t[t] * (greedy_value[t + 1] + following)
        following = torch.where(mask[t], trace[t] * (returns[t] - taken_value[t]), 0.0)
    return torch.where(mask, signed_hyperbolic(returns, eps), 0.0)
