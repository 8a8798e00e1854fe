"""Running statistics for normalising observations and scaling rewards (continuous-control PPO).

Engstrom et al. 2020 ("Implementation Matters in Deep Policy Gradients") and Andrychowicz et al. 2021
("What Matters in On-Policy RL") found both matter for PPO on MuJoCo: observations shifted and scaled by
their running mean and std, and rewards divided by the running std of the discounted return.
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
        mean, var, count = combine_moments(
            self.mean.double(), self.var.double(), self.count.double(), batch.mean(0), batch.var(0, unbiased=False), batch.shape[0]
        )
        self.mean.copy_(mean)
        self.var.copy_(var)
        self.count.copy_(count)

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return ((observation - self.mean) / torch.sqrt(self.var + self.epsilon)).clamp(-self.clip, self.clip)


class RewardScaler:
    """Divides each environment's rewards by the running std of its discounted return
    R_t = gamma * R_{t-1} * (1 - done_{t-1}) + r_t (the reward scaling of Engstrom et al. 2020)."""

    def __init__(self, num_envs: int, discount: float, epsilon: float = 1e-8):
        self.discount = discount
        self.epsilon = epsilon
        self._returns = np.zeros(num_envs)
        self._mean, self._var, self._count = 0.0, 1.0, epsilon

    def scale(self, reward: np.ndarray, episode_end: np.ndarray) -> np.ndarray:
        """Scaled rewards of one vector step; `episode_end` restarts the discounted returns that ended."""
        self._returns = self._returns * self.discount + reward
        self._mean, self._var, self._count = combine_moments(
            self._mean, self._var, self._count, self._returns.mean(), self._returns.var(), len(reward)
        )
        self._returns[episode_end] = 0.0
        return (reward / np.sqrt(self._var + self.epsilon)).astype(np.float32)
