"""Agent57's sliding-window UCB meta-controller on a hand-worked sequence of episodes."""

import math

import numpy as np
import pytest

from deep_rl_zoo.meta_controller import SlidingWindowUcb


def test_each_arm_once_then_the_best_upper_bound_over_the_window():
    bandit = SlidingWindowUcb(num_arms=3, window=4, beta=1.0, epsilon=0.0)
    for arm, episode_return in ((0, 1.0), (1, 3.0), (2, 0.0)):
        assert bandit.select() == arm
        bandit.update(arm, episode_return)
    # mu + beta sqrt(1 / N): 1 + 1, 3 + 1, 0 + 1.
    np.testing.assert_allclose(bandit.scores(), [2.0, 4.0, 1.0])
    assert bandit.select() == 1
    bandit.update(1, 1.0)  # arm 1: returns 3 and 1, mean 2 + sqrt(1/2)
    np.testing.assert_allclose(bandit.scores(), [2.0, 2.0 + math.sqrt(0.5), 1.0])
    assert bandit.select() == 1
    bandit.update(1, 0.0)  # the window of 4 drops arm 0's episode: arm 0 is absent, so it comes first
    scores = bandit.scores()
    assert scores[0] == math.inf and scores[1:].tolist() == pytest.approx([4 / 3 + math.sqrt(1 / 3), 1.0])
    assert bandit.select() == 0


def test_epsilon_picks_uniformly_and_bad_settings_name_their_flag():
    bandit = SlidingWindowUcb(num_arms=3, window=10, beta=1.0, epsilon=1.0, seed=0)
    for arm in range(3):
        bandit.update(arm, 10.0 if arm == 0 else 0.0)
    picks = np.bincount([bandit.select() for _ in range(300)], minlength=3)
    assert picks.min() > 70  # the greedy choice would always be 0
    with pytest.raises(ValueError, match='--ucb_window_size'):
        SlidingWindowUcb(3, 0, 1.0, 0.5)
    with pytest.raises(ValueError, match='--ucb_epsilon'):
        SlidingWindowUcb(3, 5, 1.0, 1.5)
    with pytest.raises(ValueError, match=r'arm must lie in \[0, 3\)'):
        bandit.update(3, 0.0)
