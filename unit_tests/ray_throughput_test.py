"""What benchmarks/ray_throughput.py reports the Ray backend moves per PPO update, against hand-worked sizes."""

import pytest

from benchmarks import ray_throughput


def test_bytes_per_update_of_cartpole_and_breakout():
    # CartPole-v1, two tanh MLPs 4-64-64 (4,480 parameters each), policy head 64x2 + 2, value head 64 + 1: 9,155 float32.
    # One rollout of 8 envs x 32 steps: observations 32x8x4 float32 (4,096 B), actions int64 (2,048 B), log-probs,
    # rewards, discounts float32 (1,024 B each) and values 33x8 float32 (1,056 B): 10,272 B, one actor.
    assert ray_throughput.bytes_per_update('CartPole-v1') == (9_155 * 4, 10_272)
    # Breakout, the Nature CNN: convolutions 8,224 + 32,832 + 36,928, dense 3,136x512 + 512 = 1,606,144, policy head
    # 512x4 + 4, value head 513: 1,686,693 float32. Per actor, 4 envs x 128 steps: uint8 frames 128x4x4x84x84
    # (14,450,688 B), actions 4,096 B, log-probs, rewards, discounts 2,048 B each, values 129x4x4 = 2,064 B; 2 actors.
    assert ray_throughput.bytes_per_update('Breakout') == (1_686_693 * 4, 2 * 14_462_992)


def test_pairs_of_runs_give_the_median_ratio_and_its_spread():
    # Pairs (local, Ray): 100 / 90 = 0.9, 200 / 220 = 1.1, 50 / 60 = 1.2; median 1.1, lowest 0.9, highest 1.2. The
    # median of the pairs' ratios, not the ratio of the medians (Ray 90 / local 100 = 0.9): a pair shares its load.
    assert ray_throughput.pair_ratios([100.0, 200.0, 50.0], [90.0, 220.0, 60.0]) == pytest.approx((1.1, 0.9, 1.2))
    with pytest.raises(ValueError, match='pairs of runs needed, got 2 local and 1 Ray run'):
        ray_throughput.pair_ratios([100.0, 200.0], [90.0])
