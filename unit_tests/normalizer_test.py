"""Exact-number tests of the running statistics used by continuous-control PPO."""

import numpy as np
import pytest
import torch

from deep_rl_zoo.normalizer import FRAMES_PER_EXACT_SUM, ObservationNormalizer, ReturnNormalizer, RewardScaler, combine_moments, frame_moments


def test_combine_moments_equals_moments_of_the_union():
    a = np.array([1.0, 2.0, 4.0])
    b = np.array([3.0, 7.0])
    mean, var, count = combine_moments(a.mean(), a.var(), 3, b.mean(), b.var(), 2)
    # union [1, 2, 4, 3, 7]: mean 17/5 = 3.4, population variance (2.4^2+1.4^2+0.6^2+0.4^2+3.6^2)/5 = 4.24
    assert count == 5
    assert mean == pytest.approx(3.4)
    assert var == pytest.approx(4.24)


def test_observation_normalizer_tracks_batches_and_normalizes():
    normalizer = ObservationNormalizer(2, clip=10.0, epsilon=1e-8)
    normalizer.update(torch.tensor([[1.0, 10.0], [3.0, 10.0]]))
    normalizer.update(torch.tensor([[5.0, 10.0], [7.0, 10.0]]))
    # all four rows: first column mean 4, variance (9+1+1+9)/4 = 5; second column constant 10
    torch.testing.assert_close(normalizer.mean, torch.tensor([4.0, 10.0]), atol=1e-6, rtol=0)
    torch.testing.assert_close(normalizer.var, torch.tensor([5.0, 0.0]), atol=1e-6, rtol=0)
    out = normalizer(torch.tensor([[4.0 + 5**0.5, 10.0], [4.0, 10.0 + 1.0]]))
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.0], [0.0, 10.0]]), atol=1e-4, rtol=0)  # 1/sqrt(1e-8) clipped to 10


def test_frame_moments_are_exact_past_float32s_integers():
    """Bytes 254 and 255 over 2,000 frames: sums of squares near 1.3e8, far past float32's exact integers (2^24)
    unless summed in parts. A column with k bytes of 255 has mean 254 + k / N and variance p (1 - p), p = k / N; one
    unit lost in a sum of squares would move the variance by 1 / N = 5e-4."""
    assert FRAMES_PER_EXACT_SUM * 255**2 < 2**24
    frames = (254 + torch.randint(0, 2, (2000, 64), generator=torch.Generator().manual_seed(0))).to(torch.uint8)
    share = frames.eq(255).double().mean(0)
    mean, var = frame_moments(frames)
    assert mean.dtype == var.dtype == torch.float64
    torch.testing.assert_close(mean, 254 + share, atol=1e-12, rtol=0)
    torch.testing.assert_close(var, share * (1 - share), atol=1e-9, rtol=0)
    # Any bytes, a last part shorter than the others: the float64 moments of the frames.
    frames = torch.randint(0, 256, (FRAMES_PER_EXACT_SUM * 2 + 37, 300), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    mean, var = frame_moments(frames)
    torch.testing.assert_close(mean, frames.double().mean(0), atol=1e-12, rtol=0)
    torch.testing.assert_close(var, frames.double().var(0, unbiased=False), atol=1e-9, rtol=0)
    with pytest.raises(TypeError, match='uint8'):
        frame_moments(frames.float())


def test_folded_moments_give_the_moments_of_every_observation_seen():
    """Rows [0, 1], [2, 3] by update, then a batch [1, 10], [3, 10], [8, 12] by its moments only: the statistics are
    those of all five rows (the 1e-8 prior count aside). First column 0, 2, 1, 3, 8: mean 14/5 = 2.8, population
    variance (7.84 + 0.64 + 3.24 + 0.04 + 27.04) / 5 = 7.76; second column 1, 3, 10, 10, 12: mean 7.2, variance
    (38.44 + 17.64 + 7.84 + 7.84 + 23.04) / 5 = 18.96."""
    normalizer = ObservationNormalizer(2)
    normalizer.update(torch.tensor([[0.0, 1.0], [2.0, 3.0]]))
    batch = torch.tensor([[1.0, 10.0], [3.0, 10.0], [8.0, 12.0]], dtype=torch.float64)
    normalizer.fold_moments(batch.mean(0), batch.var(0, unbiased=False), 3)
    torch.testing.assert_close(normalizer.mean, torch.tensor([2.8, 7.2]), atol=1e-6, rtol=0)
    torch.testing.assert_close(normalizer.var, torch.tensor([7.76, 18.96]), atol=1e-5, rtol=0)
    torch.testing.assert_close(normalizer.count, torch.tensor(5.0), atol=1e-6, rtol=0)


def test_observation_normalizer_statistics_are_frozen_parameters():
    normalizer = ObservationNormalizer(3)
    assert all(not parameter.requires_grad for parameter in normalizer.parameters())
    assert {name for name, _ in normalizer.named_parameters()} == {'mean', 'var', 'count'}


def test_reward_scaler_divides_by_running_std_of_discounted_returns():
    scaler = RewardScaler(num_envs=2, discount=0.5, prior_count=0.0, epsilon=0.0)
    first = scaler.scale(np.array([1.0, 3.0]), np.array([False, True]))
    # returns [1, 3]: mean 2, var 1 (no prior) -> rewards / 1
    np.testing.assert_allclose(first, [1.0, 3.0], rtol=1e-6)
    second = scaler.scale(np.array([2.0, 2.0]), np.array([False, False]))
    # returns [0.5*1 + 2, 0 + 2] = [2.5, 2]; all four returns [1, 3, 2.5, 2]: mean 2.125,
    # var ((1.125)^2 + 0.875^2 + 0.375^2 + 0.125^2) / 4 = 0.546875
    np.testing.assert_allclose(second, np.array([2.0, 2.0]) / np.sqrt(0.546875), rtol=1e-6)


def test_reward_scaler_prior_keeps_the_first_constant_rewards_in_scale():
    """MountainCar's first step: every environment's return is -1, a variance of 0. The prior pseudo-return (mean 0,
    var 1, count 1) with the 2 returns: mean -2/3, M2 = 1 + 0 + 1 * 1 * 2 / 3 = 5/3, var 5/9."""
    scaler = RewardScaler(num_envs=2, discount=0.99, epsilon=0.0)
    first = scaler.scale(np.array([-1.0, -1.0]), np.array([False, False]))
    np.testing.assert_allclose(first, [-1.0 / np.sqrt(5 / 9)] * 2, rtol=1e-6)
    assert abs(RewardScaler(num_envs=2, discount=0.99, prior_count=1e-8).scale(np.array([-1.0, -1.0]), np.array([False, False]))[0]) > 1e3  # the old prior


def test_return_normalizer_update_on_two_batches_gives_moments_of_their_union():
    normalizer = ReturnNormalizer(clip=None)
    first = np.array([[1.0, 2.0], [4.0, 0.5]])
    second = np.array([3.0, 7.0, -2.5])
    normalizer.update(torch.tensor(first))
    normalizer.update(torch.tensor(second))
    union = np.concatenate([first.reshape(-1), second])  # [1, 2, 4, 0.5, 3, 7, -2.5]: mean 15/7
    assert normalizer.mean.item() == pytest.approx(union.mean(), abs=1e-6)
    assert normalizer.var.item() == pytest.approx(union.var(), abs=1e-6)  # population variance
    assert normalizer.count.item() == pytest.approx(7.0)
    assert normalizer.mean.item() == pytest.approx(15 / 7, abs=1e-6)


def test_return_normalizer_normalizes_with_its_statistics():
    normalizer = ReturnNormalizer(clip=5.0, epsilon=0.0)
    normalizer.update(torch.tensor([1.0, 3.0, 5.0, 7.0]))  # mean 4, variance (9+1+1+9)/4 = 5
    out = normalizer.normalize(torch.tensor([4.0, 4.0 + 5**0.5, 4.0 - 2 * 5**0.5, 100.0]))
    torch.testing.assert_close(out, torch.tensor([0.0, 1.0, -2.0, 5.0]), atol=1e-5, rtol=0)  # 96/sqrt(5) clipped to 5
    back = normalizer.denormalize(torch.tensor([0.0, 1.0, -2.0, 7.0]))
    torch.testing.assert_close(back, torch.tensor([4.0, 4.0 + 5**0.5, 4.0 - 2 * 5**0.5, 4.0 + 5 * 5**0.5]), atol=1e-5, rtol=0)
    assert torch.equal(normalizer(torch.tensor([6.0])), normalizer.normalize(torch.tensor([6.0])))


def test_return_normalizer_normalize_and_denormalize_are_inverses():
    normalizer = ReturnNormalizer()  # default clip 5: inverses inside +-5 standard deviations
    normalizer.update(torch.tensor([10.0, -3.0, 25.0, 7.5, 0.0]))
    values = torch.tensor([-4.9, -1.0, 0.0, 0.3, 2.5, 4.99])
    torch.testing.assert_close(normalizer.normalize(normalizer.denormalize(values)), values, atol=1e-5, rtol=0)
    returns = torch.tensor([-20.0, 0.0, 8.0, 31.0])  # within 5 std (std about 9.5) of the mean 7.9
    torch.testing.assert_close(normalizer.denormalize(normalizer.normalize(returns)), returns, atol=1e-4, rtol=0)
    unclipped = ReturnNormalizer(clip=None)
    unclipped.update(torch.tensor([1.0, 2.0]))
    far = torch.tensor([-1000.0, 1000.0])
    torch.testing.assert_close(unclipped.denormalize(unclipped.normalize(far)), far, atol=1e-2, rtol=0)


def test_return_normalizer_starts_as_identity_and_its_statistics_are_frozen_parameters():
    normalizer = ReturnNormalizer(epsilon=0.0)
    x = torch.tensor([-1.5, 0.0, 2.0])
    torch.testing.assert_close(normalizer.normalize(x), x)
    torch.testing.assert_close(normalizer.denormalize(x), x)
    assert {name for name, _ in normalizer.named_parameters()} == {'mean', 'var', 'count'}
    assert all(not parameter.requires_grad for parameter in normalizer.parameters())
    assert all(parameter.dtype == torch.float32 for parameter in normalizer.parameters())


def test_return_normalizer_state_dict_round_trip():
    normalizer = ReturnNormalizer()
    normalizer.update(torch.tensor([2.0, 4.0, 9.0]))
    restored = ReturnNormalizer()
    restored.load_state_dict(normalizer.state_dict())
    for name in ('mean', 'var', 'count'):
        assert torch.equal(getattr(restored, name), getattr(normalizer, name))
    x = torch.tensor([0.0, 5.0, 12.0])
    assert torch.equal(restored.normalize(x), normalizer.normalize(x))
    # the statistics keep counting from where they were
    normalizer.update(torch.tensor([1.0]))
    restored.update(torch.tensor([1.0]))
    assert torch.equal(restored.mean, normalizer.mean) and torch.equal(restored.var, normalizer.var)
