"""NGU's intrinsic reward and policy family (`episodic_novelty`), on numbers worked out by hand."""

import math

import numpy as np
import pytest

from deep_rl_zoo import episodic_novelty as novelty


def test_episodic_reward_normalises_clusters_and_sums_the_kernel():
    # d / d_m^2 = [0.5, 2.0], minus xi 0.25: [0.25, 1.75]; K = 0.5 / 0.75, 0.5 / 2.25 = 2/3, 2/9; sum 8/9.
    reward = novelty.episodic_reward(np.array([0.5, 2.0]), 1.0, kernel_epsilon=0.5, c=0.1, cluster_distance=0.25, max_similarity=8.0)
    assert reward == pytest.approx(1.0 / (math.sqrt(8 / 9) + 0.1))
    # A distance below the cluster distance counts as 0: K = 1 for it.
    assert novelty.episodic_reward(np.array([0.1]), 1.0, kernel_epsilon=0.5, c=0.1, cluster_distance=0.25) == pytest.approx(1 / 1.1)
    # s = sqrt(8/9) + 0.1 = 1.0428 is above a maximum similarity of 1: no reward.
    assert novelty.episodic_reward(np.array([0.5, 2.0]), 1.0, kernel_epsilon=0.5, c=0.1, cluster_distance=0.25, max_similarity=1.0) == 0.0
    with pytest.raises(ValueError, match='kernel_epsilon'):
        novelty.episodic_reward(np.array([1.0]), 1.0, kernel_epsilon=0.0)


def test_the_memory_keeps_a_running_mean_of_neighbour_distances_and_clears_at_episode_start():
    memory = novelty.EpisodicMemory(num_envs=2, embedding_size=1, capacity=10, num_neighbours=2, kernel_epsilon=1.0, c=0.1, cluster_distance=0.0)
    memory.reset(0, np.array([0.0]))
    # [1] against {0}: d = [1], d_m^2 = 1, K = 1 / (1 + 1).
    assert memory.reward(0, np.array([1.0])) == pytest.approx(1 / (math.sqrt(0.5) + 0.1))
    # [3] against {0, 1}: the 2 nearest d = [4, 9]; d_m^2 = (1 + 4 + 9) / 3 = 14/3; d_n = [6/7, 27/14];
    # K = 1 / (1 + 6/7) = 7/13 and 1 / (1 + 27/14) = 14/41.
    assert memory.mean_squared_distance(0) == 1.0
    assert memory.reward(0, np.array([3.0])) == pytest.approx(1 / (math.sqrt(7 / 13 + 14 / 41) + 0.1))
    assert memory.mean_squared_distance(0) == pytest.approx(14 / 3)
    # Environment 1 has its own memory and mean: nothing stored yet, so no reward and no distance.
    assert memory.reward(1, np.array([5.0])) == 0.0 and memory.mean_squared_distance(1) == 0.0
    # A new episode forgets 0, 1 and 3: [0] against {3} only (d = 9), the mean runs on: (14 + 9) / 4.
    memory.reset(0, np.array([3.0]))
    assert memory.reward(0, np.array([0.0])) == pytest.approx(1 / (math.sqrt(1 / (1 + 9 / (23 / 4))) + 0.1))


def test_the_memory_overwrites_its_oldest_embedding_when_full():
    memory = novelty.EpisodicMemory(num_envs=1, embedding_size=1, capacity=2, num_neighbours=1, kernel_epsilon=1.0, c=0.1, cluster_distance=0.0)
    memory.reset(0, np.array([0.0]))
    memory.reward(0, np.array([10.0]))  # d = 100
    memory.reward(0, np.array([20.0]))  # nearest 10: d = 100; the memory now holds {20, 10}: 0 is gone
    # [0] against {10, 20}: nearest d = 100 (it would be 0 had 0 been kept); mean 100: K = 1/2.
    assert memory.reward(0, np.array([0.0])) == pytest.approx(1 / (math.sqrt(0.5) + 0.1))


def test_lifelong_modulator_is_one_plus_the_standardised_error_clipped_to_one_and_l():
    errors = np.array([0.5, 1.6, 3.0, 100.0])
    # mean 1, std 0.5: 1 + (err - 1) / 0.5 = 0 -> 1, 2.2, 5, 199 -> 5 (the original's err / std would give 3.2 for 1.6).
    np.testing.assert_allclose(novelty.lifelong_modulator(errors, 1.0, 0.5, max_modulation=5.0), [1.0, 2.2, 5.0, 5.0])
    with pytest.raises(ValueError, match='max_lifelong_modulation'):
        novelty.lifelong_modulator(errors, 1.0, 0.5, max_modulation=0.5)


def test_running_moments_intrinsic_and_mixed_rewards():
    moments = novelty.RunningMoments(epsilon=0.0)
    moments.update(np.array([1.0, 2.0, 3.0]))
    moments.update(np.array([4.0]))
    assert (moments.mean, moments.var, moments.count) == pytest.approx((2.5, 1.25, 4))
    assert moments.std == pytest.approx(math.sqrt(1.25))
    np.testing.assert_allclose(novelty.intrinsic_reward(np.array([0.5, 0.25]), np.array([1.0, 4.0])), [0.5, 1.0])
    np.testing.assert_allclose(novelty.mixed_reward(np.array([1.0, 0.0]), np.array([0.5, 2.0]), np.array([0.0, 0.3])), [1.0, 0.6])


def test_policy_family_of_the_paper():
    betas, gammas = novelty.policy_family(4, beta=0.3, gamma_max=0.997, gamma_min=0.99)
    # beta_1 = 0.3 sigmoid(10 (2 - 2) / 2) = 0.15, beta_2 = 0.3 sigmoid(10 (4 - 2) / 2) = 0.3 / (1 + e^-10).
    np.testing.assert_allclose(betas, [0.0, 0.15, 0.3 / (1 + math.exp(-10)), 0.3])
    # gamma_j = 1 - 0.003^((3 - j) / 3) 0.01^(j / 3).
    np.testing.assert_allclose(gammas, [0.997, 1 - 0.003 ** (2 / 3) * 0.01 ** (1 / 3), 1 - 0.003 ** (1 / 3) * 0.01 ** (2 / 3), 0.99])
    betas, gammas = novelty.policy_family(2, beta=0.3, gamma_max=0.997, gamma_min=0.99)
    np.testing.assert_allclose(betas, [0.0, 0.3])
    np.testing.assert_allclose(gammas, [0.997, 0.99])
    with pytest.raises(ValueError, match='--num_policies must be >= 2'):
        novelty.policy_family(1, 0.3, 0.997, 0.99)
    with pytest.raises(ValueError, match='--gamma_min'):
        novelty.policy_family(4, 0.3, 0.99, 0.997)
