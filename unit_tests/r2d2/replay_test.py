"""R2D2's replay pieces: `SequenceReplay.add` for a subset of streams (several actors feeding one replay), the
prioritized sequence replay (new sequences at the largest priority, stratified sampling by priority with exact
importance weights, stale priority updates skipped) and the memory it reports per sequence."""

import numpy as np
import pytest

from deep_rl_zoo import replay as replay_lib


def steps(num_steps, stream, ends=()):
    """Stream `stream`'s steps: observation [10 * stream + t], reward t, episode ends after the steps in `ends`."""
    for t in range(num_steps):
        end = t in ends
        yield np.array([10.0 * stream + t], np.float32), t % 2, float(t), end, np.array([10.0 * stream + t + 1], np.float32)


def sequence_replay(cls=replay_lib.SequenceReplay, num_streams=2, capacity=20, **options):
    return cls(capacity=capacity, sequence_length=4, overlap=2, observation_shape=(1,), observation_dtype=np.float32, num_streams=num_streams, discount=0.5, state_size=2, **options)


def stored(replay):
    sequences = replay.sequences_at(np.arange(replay.num_sequences))
    rows = [tuple(np.concatenate([o.ravel(), a.ravel(), r, m, s])) for o, a, r, m, s in zip(sequences.observation, sequences.action, sequences.reward, sequences.mask, sequences.initial_state)]
    return sorted(rows)


def test_adding_streams_one_at_a_time_stores_what_adding_them_together_stores():
    together, apart = sequence_replay(), sequence_replay()
    stream_steps = [list(steps(9, 0, ends=(6,))), list(steps(9, 1, ends=(2,)))]
    for t in range(9):
        rows = [stream_steps[s][t] for s in range(2)]
        state = np.array([[t, -t], [t + 100, 0]], np.float32)
        together.add(
            np.stack([row[0] for row in rows]), np.array([row[1] for row in rows]), np.array([row[2] for row in rows]),
            np.array([row[3] for row in rows]), np.array([row[3] for row in rows]), np.stack([row[4] for row in rows]), recurrent_state=state,
        )  # fmt: skip
    # Stream 1 first, then stream 0, as two actors' rollouts may arrive.
    for stream in (1, 0):
        for t, (observation, action, reward, end, final) in enumerate(stream_steps[stream]):
            state = np.array([[t, -t]] if stream == 0 else [[t + 100, 0]], np.float32)
            apart.add(observation[None], np.array([action]), np.array([reward]), np.array([end]), np.array([end]), final[None], recurrent_state=state, streams=[stream])
    assert together.num_sequences == apart.num_sequences > 0
    assert stored(together) == stored(apart)
    assert together.size == apart.size


def test_streams_must_be_distinct_and_in_range():
    replay = sequence_replay()
    row = (np.zeros((1, 1), np.float32), np.zeros(1, np.int64), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool), np.zeros((1, 1), np.float32))
    for streams in ([2], [-1], [0, 0], []):
        with pytest.raises(ValueError, match=r'streams must be distinct integers in \[0, 2\)'):
            replay.add(*row, recurrent_state=np.zeros((1, 2), np.float32), streams=streams)


def prioritized(capacity=20, exponent=1.0, eps=1e-9):
    return sequence_replay(replay_lib.PrioritizedSequenceReplay, num_streams=1, capacity=capacity, priority_exponent=exponent, priority_eps=eps, seed=3)


def add_episode(replay, num_steps):
    for observation, action, reward, end, final in steps(num_steps, 0, ends=(num_steps - 1,)):
        replay.add(observation[None], np.array([action]), np.array([reward]), np.array([end]), np.array([end]), final[None], recurrent_state=np.zeros((1, 2), np.float32))


def test_sampling_follows_priorities_with_exact_importance_weights():
    replay = prioritized()
    add_episode(replay, 7)  # sequences start at steps 0, 2 and 4 (the last one padded): three of them
    assert replay.num_sequences == 3
    # Priorities 1, 0 and 3 (alpha = 1): P = 1/4, ~0, 3/4. Four strata of the total 4: [0, 1) draws sequence 0, the
    # other three sequence 2. Weights (N P)^-1 = (3/4)^-1 and (9/4)^-1, divided by the largest: 1 and 1/3.
    replay.update_priorities((np.arange(3), np.arange(3)), np.array([1.0, 0.0, 3.0]))
    sample = replay.sample_prioritized(4, importance_sampling_exponent=1.0)
    assert sample.keys[0].tolist() == [0, 2, 2, 2]
    np.testing.assert_allclose(sample.weights, [1.0, 1 / 3, 1 / 3, 1 / 3], rtol=1e-6)
    assert sample.sequences.observation[0, :, 0].tolist() == [0, 1, 2, 3, 4]  # the sequence of slot 0
    assert replay.max_priority == pytest.approx(3.0)
    # beta = 0: no correction.
    assert replay.sample_prioritized(4, 0.0).weights.tolist() == [1.0] * 4


def test_new_sequences_get_the_largest_priority_and_stale_updates_are_skipped():
    replay = prioritized(capacity=2)
    add_episode(replay, 6)  # two sequences (steps 0-3 and 2-5): slots 0 and 1
    sample = replay.sample_prioritized(2, 1.0)
    replay.update_priorities(sample.keys, np.array([5.0, 5.0]))
    replay.update_priorities((np.array([0, 1]), np.array([0, 1])), np.array([2.0, 4.0]))
    add_episode(replay, 2)  # overwrites slot 0 with a new sequence, at the largest priority so far (5)
    replay.update_priorities((np.array([0]), np.array([0])), np.array([0.0]))  # meant for the overwritten one: skipped
    # Slot 0 holds 5 (new), slot 1 holds 4: strata of 9/2 draw slot 0 then slot 1 (4.5 + u * 4.5 >= 5 only when u >= 1/9).
    slots = [replay.sample_prioritized(2, 1.0).keys[0].tolist() for _ in range(20)]
    assert all(pair[0] == 0 for pair in slots)
    with pytest.raises(ValueError, match='priorities must be finite and >= 0'):
        replay.update_priorities((np.array([1]), np.array([1])), np.array([-1.0]))


def test_bytes_per_sequence_raw_and_compressed():
    replay = sequence_replay(capacity=10)
    # observations 5 x 4 bytes, actions 4 x 8, rewards 4 x 4, terminal, first and mask 4 x 1 each, state 2 x 4, count 8
    assert replay.bytes_per_sequence() == 5 * 4 + 4 * 8 + 4 * 4 + 3 * 4 + 2 * 4 + 8
    frames = dict(capacity=10, sequence_length=4, overlap=2, observation_shape=(4, 84, 84), observation_dtype=np.uint8)
    raw, compressed = replay_lib.SequenceReplay(**frames), replay_lib.SequenceReplay(**frames, compress=True)
    for replay in (raw, compressed):
        for t in range(8):
            frame = np.full((1, 4, 84, 84), t, np.uint8)
            replay.add(frame, np.zeros(1, np.int64), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool), frame)
    assert raw.bytes_per_sequence() > 5 * 4 * 84 * 84
    assert compressed.bytes_per_sequence() < raw.bytes_per_sequence() / 20  # flat frames compress well
