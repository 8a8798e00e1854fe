"""Tests for replay.PrioritizedReplay (Schaul et al. 2016, proportional): sampling probabilities, importance
weights and priorities, worked out by hand; transitions identical to the uniform replay's."""

import numpy as np
import pytest

from deep_rl_zoo import replay as replay_lib
from unit_tests.replay_test import _FakeAtari


def _replay(capacity=8, alpha=1.0, eps=0.5, n_step=1, num_streams=1, **kwargs):
    """A replay of scalar observations [step id]; eps 0.5 keeps priorities |td| + eps exact in float."""
    return replay_lib.PrioritizedReplay(
        priority_exponent=alpha,
        priority_eps=eps,
        capacity=capacity,
        observation_shape=(1,),
        observation_dtype=np.float32,
        n_step=n_step,
        discount=0.5,
        num_streams=num_streams,
        **kwargs,
    )


def _add_steps(replay, count, start=0, episode_end_at=()):
    streams = replay._num_streams
    for step in range(start, start + count):
        end = np.full(streams, step in episode_end_at)
        replay.add(np.full((streams, 1), step), np.full(streams, step % 3), np.ones(streams), end, end)


def _leaf_values(replay, stream=0):
    return replay._tree.values(stream * replay._slots_per_stream + np.arange(replay._slots_per_stream))


def _replay_with_priorities_1_2_3_4(alpha=1.0):
    """Slots 0-3 valid with priorities (|td| + eps) 1, 2, 3, 4; slot 4 holds the newest step (no s_t yet)."""
    replay = _replay(alpha=alpha)
    _add_steps(replay, 5)
    replay.update_priorities((np.zeros(4, int), np.arange(4)), np.array([0.5, 1.5, 2.5, 3.5]))
    return replay


def test_new_transitions_get_the_largest_priority_so_far():
    replay = _replay(alpha=0.5)
    _add_steps(replay, 3)
    np.testing.assert_array_equal(_leaf_values(replay), [1, 1, 0, 0, 0, 0, 0, 0])  # Priority 1 at first.
    replay.update_priorities((np.array([0, 0]), np.array([0, 1])), np.array([3.5, 0.0]))
    assert replay.max_priority == 4.0
    # Stored values are (|td| + eps) ** alpha: 4 ** 0.5 and 0.5 ** 0.5.
    np.testing.assert_allclose(_leaf_values(replay)[:2], [2.0, 0.5**0.5])
    _add_steps(replay, 2, start=3)  # Slots 2 and 3 become valid at the max priority 4.
    np.testing.assert_allclose(_leaf_values(replay), [2.0, 0.5**0.5, 2.0, 2.0, 0, 0, 0, 0])
    replay.update_priorities((np.array([0]), np.array([2])), np.array([1.0]))  # Lower: the max stays 4.
    assert replay.max_priority == 4.0


def test_stratified_batch_frequencies_are_the_probabilities_to_within_one_per_segment_edge():
    replay = _replay_with_priorities_1_2_3_4()
    streams, slots = replay.sample_indices(100_000)  # 100k strata, one draw each.
    assert np.all(streams == 0)
    counts = np.bincount(slots, minlength=5)
    assert np.all(np.abs(counts - [10_000, 20_000, 30_000, 40_000, 0]) <= 2), counts


@pytest.mark.slow
@pytest.mark.parametrize('alpha, probabilities', [(1.0, [0.1, 0.2, 0.3, 0.4]), (0.0, [0.25] * 4)])
def test_single_draws_follow_priority_to_the_alpha(alpha, probabilities):
    replay = _replay_with_priorities_1_2_3_4(alpha)
    counts = np.bincount([replay.sample_indices(1)[1][0] for _ in range(20_000)], minlength=4)
    expected = 20_000 * np.array(probabilities)
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    assert chi_square < 21.1, counts  # The 0.9999 quantile of chi-square with 3 degrees of freedom.


@pytest.mark.slow
def test_sample_draws_by_priority_too():
    replay = _replay_with_priorities_1_2_3_4()
    s_tm1 = np.concatenate([replay.sample(4).s_tm1[:, 0] for _ in range(5000)])
    frequencies = np.bincount(s_tm1.astype(int), minlength=4) / s_tm1.size
    np.testing.assert_allclose(frequencies, [0.1, 0.2, 0.3, 0.4], atol=0.01)


@pytest.mark.parametrize('beta', [1.0, 0.5, 0.0])
def test_importance_weights_by_hand(beta):
    # N = 4 valid slots, P = 0.1, 0.2, 0.3, 0.4: N * P = 0.4, 0.8, 1.2, 1.6.
    replay = _replay_with_priorities_1_2_3_4()
    unnormalised = np.array([0.4, 0.8, 1.2, 1.6]) ** -beta  # beta 1: 2.5, 1.25, 0.8333, 0.625.
    for _ in range(50):
        sample = replay.sample_prioritized(4, beta)
        streams, slots = sample.keys
        assert sample.weights.dtype == np.float32 and sample.weights.shape == (4,)
        np.testing.assert_allclose(sample.weights, unnormalised[slots] / unnormalised[slots].max(), rtol=1e-6)
        np.testing.assert_array_equal(sample.transitions.s_tm1[:, 0], slots)  # Observations are the step ids.
    # A batch holding slot 0 (the rarest) has weights 1, 1/2, 1/3, 1/4 with beta 1.
    sample = replay.sample_prioritized(10_000, 1.0)
    assert sample.weights.min() == np.float32(0.25) and np.isclose(sample.weights[0], 1.0)


def test_overwritten_and_unfinished_slots_are_never_sampled():
    replay = _replay(capacity=6, n_step=2)
    _add_steps(replay, 15, episode_end_at=(9,))
    valid = replay._valid[0]
    # Invalid slots hold priority 0, valid ones a positive one.
    np.testing.assert_array_equal(_leaf_values(replay) > 0, valid)
    assert replay._tree.total == valid.sum()
    streams, slots = replay.sample_indices(10_000)
    assert valid[slots].all()


def test_updates_of_slots_overwritten_since_sampling_are_ignored():
    replay = _replay(capacity=4)
    _add_steps(replay, 4)  # Steps 0-3 in slots 0-3; slots 0-2 valid.
    keys = (np.zeros(3, int), np.arange(3))
    _add_steps(replay, 1, start=4)  # Step 4 overwrites slot 0, invalid until its s_t arrives; slot 3 is valid.
    replay.update_priorities(keys, np.array([9.5, 1.5, 2.5]))
    np.testing.assert_array_equal(_leaf_values(replay), [0, 2, 3, 1])
    assert replay.max_priority == 3.0  # The ignored 9.5 + 0.5 does not count.


def test_priorities_of_a_slot_drawn_twice_keep_the_last():
    replay = _replay_with_priorities_1_2_3_4()
    replay.update_priorities((np.zeros(3, int), np.array([1, 1, 2])), np.array([5.5, 0.5, 0.0]))
    np.testing.assert_array_equal(_leaf_values(replay)[:4], [1, 1, 0.5, 4])


def test_leaves_map_streams_and_slots():
    replay = _replay(capacity=8, num_streams=2)  # 4 slots per stream.
    _add_steps(replay, 3)
    replay.update_priorities((np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])), np.zeros(4))
    replay.update_priorities((np.array([1]), np.array([1])), np.array([99.5]))
    np.testing.assert_array_equal(replay._tree.values(np.arange(8)), [0.5, 0.5, 0, 0, 0.5, 100, 0, 0])
    streams, slots = replay.sample_indices(1000)
    assert np.mean((streams == 1) & (slots == 1)) > 0.98


def _twin_replays(**kwargs):
    """A uniform and a prioritized replay with the same storage arguments, and an `add` feeding both."""
    uniform = replay_lib.UniformReplay(**kwargs)
    prioritized = replay_lib.PrioritizedReplay(priority_exponent=0.6, priority_eps=1e-6, **kwargs)

    class Both:
        @staticmethod
        def add(*step):
            uniform.add(*step)
            prioritized.add(*step)

    return uniform, prioritized, Both()


@pytest.mark.parametrize('compress', [False, True])
def test_n_step_frame_stacked_transitions_are_the_uniform_replays(compress):
    # The uniform replay's transitions are checked exactly in replay_test.py; the prioritized replay must build
    # the same ones, through truncations, terminals and wrap-around, and sample only valid slots.
    uniform, prioritized, both = _twin_replays(
        capacity=48, observation_shape=(4, 3, 4), observation_dtype=np.uint8, n_step=3, discount=0.5,
        num_streams=2, frame_stack=4, compress=compress,
    )
    env = _FakeAtari(num_streams=2, seed=3)
    random = np.random.default_rng(0)
    for step in range(150):
        env.step(both)
        np.testing.assert_array_equal(uniform._valid, prioritized._valid)
        np.testing.assert_array_equal(prioritized._tree.values(np.arange(48)) > 0, prioritized._valid.ravel())
        if prioritized.size >= 8:
            sample = prioritized.sample_prioritized(8, 0.4)
            for expected, actual in zip(uniform.transitions_at(*sample.keys), sample.transitions):
                np.testing.assert_array_equal(expected, actual)
            prioritized.update_priorities(sample.keys, random.random(8) * 3)


@pytest.mark.parametrize(
    'kwargs, message',
    [
        (dict(alpha=-0.1), 'priority_exponent'),
        (dict(alpha=np.nan), 'priority_exponent'),
        (dict(alpha='0.6'), 'priority_exponent'),
        (dict(eps=0.0), 'priority_eps'),
        (dict(eps=-1.0), 'priority_eps'),
        (dict(capacity=0), 'capacity'),
    ],
)
def test_bad_constructor_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _replay(**kwargs)


def test_bad_sampling_and_update_arguments_raise():
    replay = _replay()
    with pytest.raises(RuntimeError, match='no sampleable'):
        replay.sample_prioritized(4, 0.4)
    _add_steps(replay, 5)
    for beta in (-0.1, 1.5, np.nan, None):
        with pytest.raises(ValueError, match='importance_sampling_exponent'):
            replay.sample_prioritized(4, beta)
    with pytest.raises(ValueError, match='batch_size'):
        replay.sample_prioritized(0, 0.4)
    keys = replay.sample_prioritized(4, 0.4).keys
    before = _leaf_values(replay)
    for priorities in (np.array([1.0, 1.0, -1.0, 1.0]), np.array([1.0, np.nan, 1.0, 1.0]), np.array([1.0, np.inf, 1.0, 1.0])):
        with pytest.raises(ValueError, match='finite and >= 0'):
            replay.update_priorities(keys, priorities)
    with pytest.raises(ValueError, match='1-D of one length'):
        replay.update_priorities(keys, np.ones(3))
    with pytest.raises(ValueError, match='1-D of one length'):
        replay.update_priorities((keys[0], keys[1][:2]), np.ones(4))
    np.testing.assert_array_equal(_leaf_values(replay), before)


def test_replay_speed_benchmark_runs_at_a_small_size(capsys):
    from benchmarks import replay_speed

    timings = replay_speed.benchmark_prioritized(capacity=4096, repeats=5)
    assert len(timings) == 8 and all(microseconds > 0 for microseconds in timings.values())
    assert '| prioritized: sample 32 + update 32 priorities |' in capsys.readouterr().out
