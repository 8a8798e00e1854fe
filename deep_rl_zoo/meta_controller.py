"""Agent57's meta-controller (Badia et al. 2020, "Agent57: Outperforming the Atari Human Benchmark", section 4 and
appendix): a sliding-window UCB bandit that picks, each episode, which of the N policies (beta_j, gamma_j) an actor
plays, rewarded by the episode's undiscounted extrinsic return.

With the last `window` episodes of this actor (arms and returns), arm j's count N(j) and mean return mu(j) are
taken over that window only; the choice is

    the first N episodes: arm k (each arm once, in order);
    then, with probability epsilon: a uniformly random arm;
    else: argmax_j mu(j) + beta sqrt(1 / N(j))          (an arm absent from the window is taken first)
"""

import collections
import math

import numpy as np


class SlidingWindowUcb:
    """One actor's bandit over `num_arms` policies (see the module docstring); `select()` then `update(arm, return)`."""

    def __init__(self, num_arms: int, window: int, beta: float, epsilon: float, seed: int = 0):
        if num_arms < 1:
            raise ValueError(f'--num_policies must be >= 1, got {num_arms}')
        if window < 1:
            raise ValueError(f'--ucb_window_size must be >= 1, got {window}')
        if beta < 0.0 or not 0.0 <= epsilon <= 1.0:
            raise ValueError(f'--ucb_beta must be >= 0 and --ucb_epsilon in [0, 1], got {beta} and {epsilon}')
        self.num_arms = num_arms
        self.beta = beta
        self.epsilon = epsilon
        self._history: collections.deque[tuple[int, float]] = collections.deque(maxlen=window)
        self._episodes = 0
        self._random = np.random.default_rng(seed)

    def scores(self) -> np.ndarray:
        """mu(j) + beta sqrt(1 / N(j)) over the window, [num_arms]; +inf for arms absent from it."""
        counts = np.zeros(self.num_arms)
        sums = np.zeros(self.num_arms)
        for arm, episode_return in self._history:
            counts[arm] += 1
            sums[arm] += episode_return
        scores = np.full(self.num_arms, math.inf)
        seen = counts > 0
        scores[seen] = sums[seen] / counts[seen] + self.beta * np.sqrt(1.0 / counts[seen])
        return scores

    def select(self) -> int:
        """The arm of the next episode."""
        if self._episodes < self.num_arms:
            return self._episodes
        if self._random.random() < self.epsilon:
            return int(self._random.integers(self.num_arms))
        return int(np.argmax(self.scores()))

    def update(self, arm: int, episode_return: float) -> None:
        """Records the return of an episode played with `arm`."""
        if not 0 <= arm < self.num_arms:
            raise ValueError(f'arm must lie in [0, {self.num_arms}), got {arm}')
        self._history.append((int(arm), float(episode_return)))
        self._episodes += 1
