"""NGU's intrinsic reward and its family of policies (Badia et al. 2020, "Never Give Up: Learning Directed
Exploration Strategies", section 2 and appendices A and F), as pure functions and small numpy state.

The intrinsic reward of a step is the episodic novelty of the observation it reaches, scaled by a lifelong factor:

    r^i_t = r^episodic_t * min(max(alpha_t, 1), L)                                 (L = 5)

Episodic novelty (Algorithm 1 of appendix A): the embeddings f(x) of the episode's observations so far are kept in a
memory cleared at every episode start. For a new embedding, the squared Euclidean distances d_k to its k nearest
neighbours in memory update a running mean d_m^2 of such distances; then

    d_n = max(d_k / d_m^2 - xi, 0)          (normalised, and distances below the cluster distance xi count as 0)
    K   = eps / (d_n + eps)                  (the inverse kernel, kernel epsilon eps)
    s   = sqrt(sum_k K) + c                  (a pseudo-count of visits, c a small constant)
    r^episodic = 0 if s > s_max, else 1 / s  (the maximum similarity cut-off)

Lifelong novelty (section 2, from RND, Burda et al. 2018): alpha_t = 1 + (err(x_t) - mu_err) / sigma_err with the
running mean and standard deviation of the predictor's errors. (The original zoo computed err / sigma: wrong.)

Policies (appendix A): N pairs (beta_j, gamma_j); policy j learns from r = r^e + beta_j r^i with discount gamma_j.
"""

import math

import numpy as np

from deep_rl_zoo.normalizer import combine_moments

# The paper's values (appendix F, table of NGU's hyperparameters).
NUM_NEIGHBOURS = 10
KERNEL_EPSILON = 1e-4
PSEUDO_COUNT_CONSTANT = 1e-3
CLUSTER_DISTANCE = 8e-3
MAX_SIMILARITY = 8.0
MAX_MODULATION = 5.0


def episodic_reward(
    squared_distances: np.ndarray,
    mean_squared_distance: float,
    kernel_epsilon: float = KERNEL_EPSILON,
    c: float = PSEUDO_COUNT_CONSTANT,
    cluster_distance: float = CLUSTER_DISTANCE,
    max_similarity: float = MAX_SIMILARITY,
) -> float:
    """r^episodic of one embedding from the squared distances [k] to its nearest neighbours in memory and the running
    mean d_m^2 (already updated with them), steps 5-9 of Algorithm 1. A zero mean (all neighbours so far identical)
    counts every distance as 0."""
    if kernel_epsilon <= 0.0 or c <= 0.0 or cluster_distance < 0.0 or max_similarity <= 0.0:
        raise ValueError(
            f'kernel_epsilon, c and max_similarity must be > 0 and cluster_distance >= 0, got {kernel_epsilon}, {c}, {max_similarity}, {cluster_distance}'
        )
    distances = np.asarray(squared_distances, np.float64)
    normalised = distances / mean_squared_distance if mean_squared_distance > 0.0 else np.zeros_like(distances)
    normalised = np.maximum(normalised - cluster_distance, 0.0)
    kernel = kernel_epsilon / (normalised + kernel_epsilon)
    similarity = math.sqrt(float(kernel.sum())) + c
    return 0.0 if similarity > max_similarity else 1.0 / similarity


class EpisodicMemory:
    """The episodic memories of N environments (NGU's per-actor memory), each holding at most `capacity` embeddings
    (the oldest are overwritten), and each environment's running mean of squared k-nearest-neighbour distances (it
    runs on across episodes)."""

    def __init__(
        self,
        num_envs: int,
        embedding_size: int,
        capacity: int,
        num_neighbours: int = NUM_NEIGHBOURS,
        kernel_epsilon: float = KERNEL_EPSILON,
        c: float = PSEUDO_COUNT_CONSTANT,
        cluster_distance: float = CLUSTER_DISTANCE,
        max_similarity: float = MAX_SIMILARITY,
    ):
        if num_envs < 1 or embedding_size < 1 or capacity < 1 or num_neighbours < 1:
            raise ValueError(f'num_envs, embedding_size, capacity and num_neighbours must be >= 1, got {num_envs}, {embedding_size}, {capacity}, {num_neighbours}')
        self.num_neighbours = num_neighbours
        self.kernel = dict(kernel_epsilon=kernel_epsilon, c=c, cluster_distance=cluster_distance, max_similarity=max_similarity)
        self._memory = np.zeros((num_envs, capacity, embedding_size), np.float64)
        self._size = np.zeros(num_envs, np.int64)
        self._written = np.zeros(num_envs, np.int64)
        self._distance_sum = np.zeros(num_envs, np.float64)
        self._distance_count = np.zeros(num_envs, np.int64)

    def mean_squared_distance(self, env: int) -> float:
        """d_m^2 of environment `env` (0 before any distance)."""
        return self._distance_sum[env] / self._distance_count[env] if self._distance_count[env] else 0.0

    def reset(self, env: int, embedding: np.ndarray) -> None:
        """Clears environment `env`'s memory at an episode start and stores the first observation's embedding."""
        self._size[env] = self._written[env] = 0
        self._add(env, embedding)

    def _add(self, env: int, embedding: np.ndarray) -> None:
        capacity = self._memory.shape[1]
        self._memory[env, self._written[env] % capacity] = embedding
        self._written[env] += 1
        self._size[env] = min(self._size[env] + 1, capacity)

    def reward(self, env: int, embedding: np.ndarray) -> float:
        """r^episodic of `embedding` against environment `env`'s memory (steps 1-9 of Algorithm 1), which then stores
        it. An empty memory (no reset yet) gives 0."""
        size = self._size[env]
        if size == 0:
            self._add(env, embedding)
            return 0.0
        distances = np.sum((self._memory[env, :size] - embedding) ** 2, axis=1)
        nearest = np.sort(distances)[: self.num_neighbours]
        self._distance_sum[env] += nearest.sum()
        self._distance_count[env] += nearest.size
        reward = episodic_reward(nearest, self.mean_squared_distance(env), **self.kernel)
        self._add(env, embedding)
        return reward


def lifelong_modulator(error: np.ndarray, mean: float, std: float, max_modulation: float = MAX_MODULATION) -> np.ndarray:
    """min(max(1 + (err - mu) / sigma, 1), L): RND's error, standardised by its running moments, as a factor in
    [1, L] (NGU, section 2)."""
    if not std > 0.0:
        raise ValueError(f'the running std of the RND error must be > 0, got {std}')
    if max_modulation < 1.0:
        raise ValueError(f'--max_lifelong_modulation must be >= 1, got {max_modulation}')
    return np.clip(1.0 + (np.asarray(error, np.float64) - mean) / std, 1.0, max_modulation)


class RunningMoments:
    """Running mean and population variance of every value seen (`normalizer.combine_moments`), for the RND errors
    that `lifelong_modulator` standardises."""

    def __init__(self, epsilon: float = 1e-8):
        self.mean, self.var, self.count = 0.0, 0.0, 0.0
        self.epsilon = epsilon

    def update(self, values: np.ndarray) -> None:
        values = np.asarray(values, np.float64).ravel()
        if values.size:
            self.mean, self.var, self.count = combine_moments(self.mean, self.var, self.count, float(values.mean()), float(values.var()), values.size)

    @property
    def std(self) -> float:
        return math.sqrt(self.var + self.epsilon)


def intrinsic_reward(episodic: np.ndarray, modulator: np.ndarray) -> np.ndarray:
    """r^i = r^episodic * modulator (NGU, eq. 1), the modulator already clipped to [1, L]."""
    return np.asarray(episodic, np.float64) * np.asarray(modulator, np.float64)


def mixed_reward(extrinsic, intrinsic, beta):
    """r = r^e + beta r^i, the reward NGU's policy j learns from (beta = beta_j; arrays broadcast)."""
    return extrinsic + beta * intrinsic


def policy_family(num_policies: int, beta: float, gamma_max: float, gamma_min: float) -> tuple[np.ndarray, np.ndarray]:
    """NGU's N policies (appendix A), ([N] betas, [N] discounts):

        beta_j  = 0 (j = 0),  beta (j = N - 1),  beta * sigmoid(10 (2 j - (N - 2)) / (N - 2)) otherwise;
        gamma_j = 1 - exp(((N - 1 - j) log(1 - gamma_max) + j log(1 - gamma_min)) / (N - 1)).

    Policy 0 exploits (beta 0, the longest horizon gamma_max); policy N - 1 explores most (gamma_min)."""
    if num_policies < 2:
        raise ValueError(f'--num_policies must be >= 2 (policy 0 exploits, the others explore), got {num_policies}')
    if not 0.0 <= gamma_min <= gamma_max < 1.0:
        raise ValueError(f'the discounts need 0 <= --gamma_min <= --gamma_max < 1, got {gamma_min} and {gamma_max}')
    if beta < 0.0:
        raise ValueError(f'--intrinsic_reward_beta must be >= 0, got {beta}')
    n = num_policies
    j = np.arange(n, dtype=np.float64)
    betas = np.zeros(n)
    if n > 2:
        middle = j[1:-1]
        betas[1:-1] = beta / (1.0 + np.exp(-10.0 * (2.0 * middle - (n - 2)) / (n - 2)))
    betas[-1] = beta
    gammas = 1.0 - np.exp(((n - 1 - j) * np.log(1.0 - gamma_max) + j * np.log(1.0 - gamma_min)) / (n - 1))
    return betas, gammas
