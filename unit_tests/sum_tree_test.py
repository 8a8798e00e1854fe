"""Tests for replay.SumTree: exact sums and prefix-sum search, worked out by hand."""

import numpy as np
import pytest

from deep_rl_zoo.replay import SumTree


def _tree(values):
    tree = SumTree(len(values))
    tree.set(np.arange(len(values)), values)
    return tree


def test_inner_nodes_hold_exact_sums():
    tree = _tree([1.0, 2.0, 3.0, 4.0])
    #        10
    #     3      7
    #   1   2  3   4
    np.testing.assert_array_equal(tree._nodes[1:], [10, 3, 7, 1, 2, 3, 4])
    assert tree.total == 10.0
    tree.set([2], [0.5])
    np.testing.assert_array_equal(tree._nodes[1:], [7.5, 3, 4.5, 1, 2, 0.5, 4])
    np.testing.assert_array_equal(tree.values([3, 2, 0]), [4, 0.5, 1])


def test_find_by_hand_with_capacity_not_a_power_of_two():
    # Capacity 5 is padded to 8 leaves. Prefix sums 0 | 1 | 3 | 6 | 10, and leaf 4 holds 0.
    tree = _tree([1.0, 2.0, 3.0, 4.0, 0.0])
    assert tree.capacity == 5 and tree.total == 10.0
    targets = [0.0, 0.999, 1.0, 2.999, 3.0, 5.999, 6.0, 9.999]
    np.testing.assert_array_equal(tree.find(targets), [0, 0, 1, 1, 2, 2, 3, 3])


def test_find_never_returns_a_zero_leaf():
    # Zeros between, before and after the positive leaves; targets at and past the edges (as rounding can
    # produce) end at a positive leaf.
    tree = _tree([0.0, 1.0, 0.0, 0.0, 2.0, 0.0])
    np.testing.assert_array_equal(tree.find([0.0, 0.5, 1.0, 2.5, 3.0, 3.0 + 1e-9, 100.0]), [1, 1, 4, 4, 4, 4, 4])
    np.testing.assert_array_equal(_tree([5.0, 0.0, 0.0]).find([5.0, 7.0]), [0, 0])


def test_find_matches_a_search_of_the_prefix_sums():
    random = np.random.default_rng(0)
    values = random.random(1000) * (random.random(1000) < 0.7)  # About 30% zeros.
    tree = _tree(values)
    targets = random.random(5000) * values.sum()
    np.testing.assert_array_equal(tree.find(targets), np.searchsorted(np.cumsum(values), targets, side='right'))
    assert np.isclose(tree.total, values.sum(), rtol=1e-12)


def test_repeated_indices_last_write_wins():
    tree = _tree([1.0, 1.0, 1.0])
    tree.set([1, 2, 1, 1, 0], [5.0, 2.0, 7.0, 3.0, 0.0])
    np.testing.assert_array_equal(tree.values([0, 1, 2]), [0, 3, 2])
    assert tree.total == 5.0


def test_sums_do_not_drift_over_many_updates():
    # Sums are recomputed from the children, not adjusted by differences, so no rounding error accumulates.
    random = np.random.default_rng(1)
    tree = SumTree(100)
    for _ in range(300):
        tree.set(random.integers(0, 100, 32), random.random(32) * 1e6)
    tree.set(np.arange(100), np.ones(100))
    assert tree.total == 100.0


def test_capacity_one():
    tree = SumTree(1)
    tree.set([0], [2.5])
    assert tree.total == 2.5
    np.testing.assert_array_equal(tree.find([0.0, 2.4, 9.0]), [0, 0, 0])


def test_large_capacity_not_a_power_of_two():
    tree = SumTree(1_000_003)
    tree.set([1_000_002, 17], [3.0, 1.0])
    np.testing.assert_array_equal(tree.find([0.5, 1.0, 3.9]), [17, 1_000_002, 1_000_002])


@pytest.mark.parametrize('capacity', [0, -3, 2.5, True, '4'])
def test_bad_capacity_raises(capacity):
    with pytest.raises(ValueError, match='capacity'):
        SumTree(capacity)


@pytest.mark.parametrize(
    'indices, values, message',
    [
        ([4], [1.0], 'indices must be in'),
        ([-1], [1.0], 'indices must be in'),
        ([0.0], [1.0], 'integer'),
        ([[0]], [[1.0]], '1-D'),
        ([0, 1], [1.0], 'shape'),
        ([0], [-1.0], 'finite and >= 0'),
        ([0], [np.nan], 'finite and >= 0'),
        ([0], [np.inf], 'finite and >= 0'),
    ],
)
def test_bad_set_raises_and_changes_nothing(indices, values, message):
    tree = _tree([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match=message):
        tree.set(indices, values)
    np.testing.assert_array_equal(tree._nodes[1:], [10, 3, 7, 1, 2, 3, 4])


def test_bad_find_raises():
    with pytest.raises(ValueError, match='every leaf is 0'):
        SumTree(4).find([0.0])
    tree = _tree([1.0, 2.0])
    for targets in ([-0.1], [np.nan]):
        with pytest.raises(ValueError, match='finite and >= 0'):
            tree.find(targets)
    with pytest.raises(ValueError, match='1-D'):
        tree.find(1.0)
    with pytest.raises(ValueError, match='indices must be in'):
        tree.values([2])
