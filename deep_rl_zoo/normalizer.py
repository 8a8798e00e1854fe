"""Running statistics for normalising observations and scaling rewards (continuous-control PPO).

Engstrom et al. 2020 ("Implementation Matters in Deep Policy Gradients") and Andrychowicz et al. 2021
("What Matters in On-Policy RL") found both matter for PPO on MuJoCo: observations shifted and scaled by
their running mean and std, and rewards divided by the running std of the discounted return.
`ReturnNormalizer` keeps the running mean and variance of value targets (Sample Factory's `normalize_returns`).
"""

import numpy as np
import torch
from torch import nn


def combine_moments(
    mean_a: np.ndarray, var_a: np.ndarray, count_a: float, mean_b: np.ndarray, var_b: np.ndarray, count_b: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """Mean and (population) variance of the union of two samples from their own moments (Chan et al. 1979):

    delta = mean_b - mean_a,  mean = mean_a + delta * n_b / n,
    M2 = var_a * n_a + var_b * n_b + delta^2 * n_a * n_b / n,  var = M2 / n.
    """
    count = count_a + count_b
    delta = mean_b - mean_a
    mean = mean_a + delta * count_b / count
    m2 = var_a * count_a + var_b * count_b + delta**2 * count_a * count_b / count
    return mean, m2 / count, count


class ObservationNormalizer(nn.Module):
    """(observation - mean) / sqrt(var + eps), clipped to +-`clip`, with running mean and var kept as
    non-trainable parameters so that they travel with the network to actors and into checkpoints.

    The learner calls `update` with each batch of observations; the forward pass only reads the statistics.
    """

    def __init__(self, size: int, clip: float = 10.0, epsilon: float = 1e-8):
        super().__init__()
        self.mean = nn.Parameter(torch.zeros(size), requires_grad=False)
        self.var = nn.Parameter(torch.ones(size), requires_grad=False)
        self.count = nn.Parameter(torch.tensor(epsilon), requires_grad=False)  # a tiny prior count avoids 0 / 0
        self.clip = clip
        self.epsilon = epsilon

    @torch.no_grad()
    def update(self, observations: torch.Tensor) -> None:
        """Folds a batch [B, size] into the running statistics."""
        batch = observations.reshape(-1, self.mean.shape[0]).double()
        self.fold_moments(batch.mean(0), batch.var(0, unbiased=False), batch.shape[0])

    @torch.no_grad()
    def fold_moments(self, mean: torch.Tensor, var: torch.Tensor, count: int) -> None:
        """Folds a batch of `count` observations, given by its mean and population variance [size], into the running
        statistics."""
        mean, var, count = combine_moments(self.mean.double(), self.var.double(), self.count.double(), mean.double(), var.double(), count)
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return ((observation - self.mean) / torch.sqrt(self.var + self.epsilon)).clamp(-self.clip, self.clip)


FRAMES_PER_EXACT_SUM = 256  # 256 x 255^2 = 16,646,400 < 2^24: float32 sums of up to 256 squared bytes are integers held exactly


@torch.no_grad()
def frame_moments(frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-element mean and population variance (float64, [D]) of uint8 frames [N, D], from exact sums: float32
    holds every integer below 2^24, so the sums of x and x^2 over up to `FRAMES_PER_EXACT_SUM` frames are exact, and
    float64 adds those partial sums exactly. mean = S1 / N, var = S2 / N - mean^2; for bytes the cancellation costs at
    most ~1e-11. Several times faster than the float64 moments of the frames (an Atari batch holds tens of millions of
    bytes) and as exact."""
    if frames.dtype != torch.uint8 or frames.dim() != 2:
        raise TypeError(f'frame_moments takes uint8 frames [N, D], got {frames.dtype} {tuple(frames.shape)}')
    sum_x = torch.zeros(frames.shape[1], dtype=torch.float64, device=frames.device)
    sum_x2 = torch.zeros_like(sum_x)
    for part in frames.split(FRAMES_PER_EXACT_SUM):
        x = part.float()
        sum_x += x.sum(0)
        sum_x2 += (x * x).sum(0)
    mean = sum_x / frames.shape[0]
    return mean, (sum_x2 / frames.shape[0] - mean * mean).clamp_(min=0.0)


def fold_into_observation_statistics(network: nn.Module, observations: torch.Tensor) -> None:
    """Folds `observations` into the running statistics of `network.observation_normalizer`, when it has one. The
    on-policy learners (PPO, A2C) call it after their gradient steps, so those steps scored the batch with the
    statistics the actors acted with; the new statistics reach the actors with the parameters."""
    normalizer = getattr(network, 'observation_normalizer', None)
    if normalizer is not None:
        normalizer.update(observations)


class RewardScaler:
    """Divides each environment's rewards by the running std of its discounted return
    R_t = gamma * R_{t-1} * (1 - done_{t-1}) + r_t (the reward scaling of Engstrom et al. 2020).

    The statistics start from `prior_count` pseudo-returns of mean 0 and variance 1, which fade as returns come in.
    Without them the first steps of a task with a constant reward (MountainCar's -1) give identical returns, a
    variance of about 0, and rewards scaled by about 10^4."""

    def __init__(self, num_envs: int, discount: float, prior_count: float = 1.0, epsilon: float = 1e-8):
        self.discount = discount
        self.epsilon = epsilon
        self._returns = np.zeros(num_envs)
        self._mean, self._var, self._count = 0.0, 1.0, prior_count

    def scale(self, reward: np.ndarray, episode_end: np.ndarray) -> np.ndarray:
        """Scaled rewards of one vector step; `episode_end` restarts the discounted returns that ended."""
        self._returns = self._returns * self.discount + reward
        self._mean, self._var, self._count = combine_moments(
            self._mean, self._var, self._count, self._returns.mean(), self._returns.var(), len(reward)
        )
        self._returns[episode_end] = 0.0
        return (reward / np.sqrt(self._var + self.epsilon)).astype(np.float32)


class ReturnNormalizer(nn.Module):
    """Running mean and variance of value targets (returns), Sample Factory's `normalize_returns`.

    The value head predicts *normalised* values, (V - mean) / sqrt(var + eps). Each learner step does, in order:

      1. values = denormalize(value head outputs)   (on the rollout's values and its bootstrap value, old statistics);
      2. advantages, returns = GAE(rewards, values)  (in reward units);
      3. update(returns)                             (fold the new returns into the statistics);
      4. targets = normalize(returns)                (new statistics) for the value loss against the value head.

    The advantages stay in reward units (the policy loss standardises them anyway). Only step 4 uses the new
    statistics, so the stored behaviour values that PPO's value clipping compares with were normalised with the
    previous statistics, as in Sample Factory.

    mean, var and count are non-trainable nn.Parameters (float32 scalars), so they travel with the network's
    parameters to the actors and into checkpoints, like `ObservationNormalizer`. `update` combines the moments in
    float64. Normalised values are clipped to +-`clip` (5 in Sample Factory; None disables), and `denormalize`
    clips its input to the same range first, so the two are exact inverses inside it.

    Differences from Sample Factory's statistics, negligible after the first batch: the prior is a tiny count
    (`prior_count`) instead of one pseudo-sample of mean 0 and variance 1, and each batch contributes its population
    (not Bessel-corrected) variance, so two updates give exactly the moments of the union of their batches.
    """

    def __init__(self, clip: float | None = 5.0, epsilon: float = 1e-5, prior_count: float = 1e-8):
        super().__init__()
        if clip is not None and not clip > 0:
            raise ValueError(f'clip must be > 0 or None, got {clip}')
        self.mean = nn.Parameter(torch.tensor(0.0), requires_grad=False)
        self.var = nn.Parameter(torch.tensor(1.0), requires_grad=False)
        self.count = nn.Parameter(torch.tensor(float(prior_count)), requires_grad=False)
        self.clip = clip
        self.epsilon = epsilon

    @torch.no_grad()
    def update(self, returns: torch.Tensor) -> None:
        """Folds a batch of returns (any shape; every element is one sample) into the running statistics."""
        batch = returns.detach().reshape(-1).double()
        if batch.numel() == 0:
            return
        mean, var, count = combine_moments(
            self.mean.double(), self.var.double(), self.count.double(), batch.mean(), batch.var(unbiased=False), batch.numel()
        )
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)

    def _std(self) -> torch.Tensor:
        return torch.sqrt(self.var + self.epsilon)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """(x - mean) / sqrt(var + epsilon), clipped to +-clip: returns in the value head's units."""
        normalized = (x - self.mean) / self._std()
        return normalized if self.clip is None else normalized.clamp(-self.clip, self.clip)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        """clip(x) * sqrt(var + epsilon) + mean: value head outputs in reward units."""
        if self.clip is not None:
            x = x.clamp(-self.clip, self.clip)
        return x * self._std() + self.mean

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.normalize(x)
