"""Tests of deep_rl_zoo/gradient_compression.py: sizes of each encoding, exact numbers of bfloat16 rounding and of
int8 block scales and levels, the error bounds, and the unbiasedness of int8's stochastic rounding."""

import math

import numpy as np
import pytest
import torch

from deep_rl_zoo import gradient_compression as gc


def round_trip(method, gradient, seed=0):
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in gc.buffer_spec(method, gradient.numel()).items()}
    gc.encode(method, gradient, buffer, torch.Generator().manual_seed(seed))
    return gc.decode(method, buffer), buffer


def test_buffer_specs_and_bytes_per_method():
    assert gc.buffer_spec('none', 1000) == {'gradient': ((1000,), torch.float32)}
    assert gc.buffer_spec('bfloat16', 1000) == {'gradient': ((1000,), torch.bfloat16)}
    assert gc.buffer_spec('int8', 1000) == {'gradient': ((1000,), torch.int8), 'gradient_scale': ((4,), torch.float32)}  # ceil(1000 / 256)
    assert [gc.encoded_bytes(method, 1000) for method in gc.METHODS] == [4000, 2000, 1016]


def test_bad_method_or_size_is_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="none, bfloat16, int8, got 'fp8'"):
        gc.buffer_spec('fp8', 10)
    with pytest.raises(ValueError, match='num_parameters must be >= 1'):
        gc.buffer_spec('none', 0)


def test_none_is_exact():
    gradient = torch.tensor([1e-30, -3.3, 123456.789, 0.0])
    decoded, _ = round_trip('none', gradient)
    assert torch.equal(decoded, gradient)


def test_bfloat16_rounds_to_the_nearest_of_8_significant_bits():
    # bfloat16 steps by 2^-7 in [1, 2): 1 + 2^-9 (a quarter step) rounds down to 1, 1 + 3 * 2^-9 (three quarters)
    # up to 1 + 2^-7; in [2, 4) it steps by 2^-6, so pi = 201.06 steps becomes 201 / 64 = 3.140625.
    gradient = torch.tensor([1.0, 1.0 + 2**-9, 1.0 + 3 * 2**-9, math.pi, -2.0**-100, 3e38])
    decoded, _ = round_trip('bfloat16', gradient)
    assert decoded.tolist()[:4] == [1.0, 1.0, 1.0 + 2**-7, 3.140625]
    assert decoded[4].item() == -(2.0**-100)  # float32's exponent range: tiny numbers survive without scaling
    assert decoded[5].item() == pytest.approx(3e38, rel=2**-8)


def test_bfloat16_relative_error_is_at_most_2_to_the_minus_8():
    gradient = torch.randn(10_000, generator=torch.Generator().manual_seed(1)) * torch.logspace(-6, 3, 10_000)
    decoded, _ = round_trip('bfloat16', gradient)
    assert ((decoded - gradient).abs() <= gradient.abs() * 2**-8).all()


def test_int8_scales_each_block_by_its_largest_magnitude_and_keeps_levels_exact():
    # Block 0 (256 numbers): max |g| = 2.54, scale 0.02: 2.54 -> 127, -1.0 -> -50, 0.5 -> 25 exactly (integers
    # on the grid never round). Block 1 (the last 44 numbers, padded): all zero -> scale 0, decodes to 0.
    gradient = torch.zeros(300)
    gradient[0], gradient[1], gradient[2] = 2.54, -1.0, 0.5
    decoded, buffer = round_trip('int8', gradient)
    assert buffer['gradient_scale'].tolist() == pytest.approx([0.02, 0.0])
    assert buffer['gradient'][:3].tolist() == [127, -50, 25]
    assert (buffer['gradient'][3:] == 0).all()
    assert decoded[:3].tolist() == pytest.approx([2.54, -1.0, 0.5])
    assert (decoded[3:] == 0).all()


def test_int8_rounds_stochastically_to_the_two_nearest_levels_with_the_right_odds():
    # scale 1 / 127 (max 1.0): 0.3 is 38.1 levels, so it decodes to 38 or 39 levels, 39 with probability 0.1.
    draws = []
    for seed in range(2000):
        decoded, buffer = round_trip('int8', torch.tensor([1.0, 0.3]), seed)
        draws.append(int(buffer['gradient'][1]))
    assert set(draws) == {38, 39}
    assert np.mean(np.array(draws) == 39) == pytest.approx(0.1, abs=0.02)  # 4 standard deviations
    assert np.mean(draws) / 127 == pytest.approx(0.3, abs=0.0003)  # unbiased


def test_int8_error_is_below_one_level_and_the_mean_of_many_encodings_converges():
    gradient = torch.randn(1000, generator=torch.Generator().manual_seed(2))
    decoded, buffer = round_trip('int8', gradient)
    level = buffer['gradient_scale'].repeat_interleave(256)[:1000]
    assert ((decoded - gradient).abs() < level + 1e-7).all()
    mean = sum(round_trip('int8', gradient, seed)[0] for seed in range(400)) / 400
    assert (mean - gradient).abs().max() < 0.3 * level.max()  # one level's error shrinks as 1 / sqrt(400)
