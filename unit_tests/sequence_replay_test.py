"""SequenceReplay (DRQN's replay): exact sequence contents, overlap without repeats, padding and masks at episode
ends, truncation against terminal, several streams, the circular buffer, compression, sampling and bad input."""

import numpy as np
import pytest

from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.replay import SequenceReplay

GAMMA = 0.9


def make_replay(capacity=100, sequence_length=4, overlap=2, num_streams=1, **options):
    return SequenceReplay(
        capacity, sequence_length, overlap, observation_shape=(2,), observation_dtype=np.float32,
        discount=GAMMA, num_streams=num_streams, **options,
    )


def observation(t, episode=0):
    return np.array([t, episode], np.float32)


def play(replay, num_steps, episode=0, end='terminal', life_loss_at=()):
    """One stream's episode of `num_steps` steps: observation [t, episode], action t % 3, reward t + 1; it ends
    with `end` ('terminal', 'truncated' or None: it goes on); its last observation is [num_steps, episode]."""
    for t in range(num_steps):
        last = t == num_steps - 1
        replay.add(
            observation(t, episode)[None],
            np.array([t % 3]),
            np.array([t + 1.0]),
            np.array([(last and end == 'terminal') or t in life_loss_at]),
            np.array([last and end is not None]),
            observation(t + 1, episode)[None],
        )


def all_sequences(replay):
    return replay.sequences_at(np.arange(replay.num_sequences))


def steps_of(sequences):
    """The t of each step (observation[..., 0]), -1 on padding; the bootstrap observation's t last."""
    return [
        [int(o[0]) if real else -1 for o, real in zip(seq_observation[:-1], mask)] + [int(seq_observation[mask.sum(), 0])]
        for seq_observation, mask in zip(sequences.observation, sequences.mask)
    ]


# ------------------------------------------------------------------------------------------ contents


def test_overlapping_sequences_of_an_episode_and_padding_at_its_terminal_end():
    """Length 4, overlap 2: sequences start every 2 steps; the 9-step episode's last 3 steps (2 of them
    already in the previous sequence, 1 new) are stored padded with one masked step."""
    replay = make_replay()
    play(replay, 9, end='terminal')
    sequences = all_sequences(replay)
    assert steps_of(sequences) == [[0, 1, 2, 3, 4], [2, 3, 4, 5, 6], [4, 5, 6, 7, 8], [6, 7, 8, -1, 9]]
    np.testing.assert_array_equal(sequences.mask[3], [True, True, True, False])
    np.testing.assert_array_equal(sequences.observation[3, 4], [0, 0])  # padding observations are zeros
    np.testing.assert_array_equal(sequences.action, [[0, 1, 2, 0], [2, 0, 1, 2], [1, 2, 0, 1], [0, 1, 2, 0]])
    np.testing.assert_array_equal(sequences.reward, [[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7, 8], [7, 8, 9, 0]])
    np.testing.assert_allclose(sequences.discount[:3], GAMMA)
    np.testing.assert_allclose(sequences.discount[3], [GAMMA, GAMMA, 0.0, 0.0])  # terminal, then padding
    np.testing.assert_array_equal(sequences.first[:, 0], [True, False, False, False])
    assert not sequences.first[:, 1:].any()
    assert sequences.observation.dtype == np.float32 and sequences.discount.dtype == np.float32
    assert replay.num_sequences == 4 and replay.size == 9  # every step once: 4 + 2 + 2 + 1


def test_episode_ending_with_a_full_sequence_stores_no_sequence_of_overlap_only():
    """8 steps: the third sequence [4..7] is full when the episode ends; the overlap [6, 7] left pending holds no
    new step, so no padded [6, 7] sequence repeats it (the original zoo's bug)."""
    replay = make_replay()
    play(replay, 8, end='terminal')
    assert steps_of(all_sequences(replay)) == [[0, 1, 2, 3, 4], [2, 3, 4, 5, 6], [4, 5, 6, 7, 8]]
    assert replay.size == 8


def test_episode_shorter_than_a_sequence_is_one_padded_sequence():
    replay = make_replay()
    play(replay, 2, end='terminal')
    sequences = all_sequences(replay)
    assert steps_of(sequences) == [[0, 1, -1, -1, 2]]
    np.testing.assert_array_equal(sequences.mask, [[True, True, False, False]])
    np.testing.assert_allclose(sequences.discount, [[GAMMA, 0, 0, 0]])
    np.testing.assert_array_equal(sequences.first, [[True, False, False, False]])


def test_next_episode_starts_a_fresh_sequence_without_the_previous_episode():
    replay = make_replay()
    play(replay, 3, episode=0, end='terminal')
    play(replay, 5, episode=1, end='terminal')
    sequences = all_sequences(replay)
    episodes = [set(sequences.observation[i, :-1, 1][sequences.mask[i]].astype(int)) for i in range(replay.num_sequences)]
    assert episodes == [{0}, {1}, {1}]
    assert steps_of(sequences) == [[0, 1, 2, -1, 3], [0, 1, 2, 3, 4], [2, 3, 4, -1, 5]]
    np.testing.assert_array_equal(sequences.first[:, 0], [True, True, False])


@pytest.mark.parametrize('end, last_discount', [('terminal', 0.0), ('truncated', GAMMA)])
def test_truncation_bootstraps_from_the_final_observation_and_a_terminal_does_not(end, last_discount):
    replay = make_replay()
    play(replay, 3, end=end)
    sequences = all_sequences(replay)
    np.testing.assert_allclose(sequences.discount, [[GAMMA, GAMMA, last_discount, 0.0]])
    np.testing.assert_array_equal(sequences.observation[0, 3], observation(3))  # the final observation, kept


def test_life_lost_as_terminal_stops_bootstrapping_but_not_the_sequence():
    replay = make_replay(sequence_length=4, overlap=0)
    play(replay, 4, end=None, life_loss_at=(1,))
    sequences = all_sequences(replay)
    assert steps_of(sequences) == [[0, 1, 2, 3, 4]]
    np.testing.assert_allclose(sequences.discount, [[GAMMA, 0.0, GAMMA, GAMMA]])
    assert sequences.mask.all()


def test_no_overlap_and_stride_one():
    replay = make_replay(sequence_length=3, overlap=0)
    play(replay, 7, end='truncated')
    assert steps_of(all_sequences(replay)) == [[0, 1, 2, 3], [3, 4, 5, 6], [6, -1, -1, 7]]
    replay = make_replay(sequence_length=3, overlap=2)
    play(replay, 5, end='terminal')
    assert steps_of(all_sequences(replay)) == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]
    assert replay.size == 5


def test_streams_fill_their_own_sequences():
    """Two streams side by side: stream 0's episode lasts 3 steps, stream 1's goes on; sequences are stored in
    the order they complete, each from one stream only."""
    replay = make_replay(sequence_length=4, overlap=2, num_streams=2)
    for t in range(5):
        replay.add(
            np.stack([observation(t, 0), observation(t, 1)]),
            np.array([0, 1]),
            np.array([1.0, 2.0]),
            np.array([t == 2, False]),
            np.array([t == 2, False]),
            np.stack([observation(t + 1, 0), observation(t + 1, 1)]),
        )
    sequences = all_sequences(replay)
    assert steps_of(sequences) == [[0, 1, 2, -1, 3], [0, 1, 2, 3, 4]]
    np.testing.assert_array_equal(sequences.observation[:, 0, 1], [0, 1])
    np.testing.assert_array_equal(sequences.action[1], [1, 1, 1, 1])
    assert replay.size == 3 + 4  # stream 0's next episode (2 steps so far) is still pending


# ---------------------------------------------------------------------------------------- circular buffer


def test_oldest_sequences_are_overwritten_and_size_counts_steps_held():
    replay = make_replay(capacity=2, sequence_length=4, overlap=2)
    play(replay, 9, end='terminal')  # 4 sequences through 2 slots: slots hold the 3rd and 4th
    sequences = all_sequences(replay)
    assert steps_of(sequences) == [[4, 5, 6, 7, 8], [6, 7, 8, -1, 9]]
    assert replay.num_sequences == 2 and replay.capacity == 2
    assert replay.size == 2 + 1  # the new steps of the two kept sequences


def test_compressed_storage_returns_the_same_sequences():
    plain, compressed = make_replay(), make_replay(compress=True)
    for replay in (plain, compressed):
        play(replay, 9, end='truncated')
    for left, right in zip(all_sequences(plain), all_sequences(compressed)):
        np.testing.assert_array_equal(left, right)


def test_uint8_frames_keep_their_dtype():
    replay = SequenceReplay(10, 3, 1, observation_shape=(1, 4, 4), observation_dtype=np.uint8, compress=True)
    frame = np.full((1, 1, 4, 4), 7, np.uint8)
    for _ in range(3):
        replay.add(frame, np.array([1]), np.array([0.0]), np.array([False]), np.array([False]), frame)
    sequences = replay.sample(2)
    assert sequences.observation.shape == (2, 4, 1, 4, 4) and sequences.observation.dtype == np.uint8
    assert (sequences.observation == 7).all()


# --------------------------------------------------------------------------------------------- sampling


def test_sampling_is_uniform_over_stored_sequences_and_seeded():
    replay = make_replay(sequence_length=2, overlap=0, seed=3)
    play(replay, 8, end='terminal')  # 4 sequences, starting at t = 0, 2, 4, 6
    starts = replay.sample(8000).observation[:, 0, 0]
    counts = np.array([np.sum(starts == t) for t in (0, 2, 4, 6)])
    assert counts.sum() == 8000 and np.all(np.abs(counts - 2000) < 200)  # about 5 binomial standard deviations
    again = make_replay(sequence_length=2, overlap=0, seed=3)
    play(again, 8, end='terminal')
    np.testing.assert_array_equal(again.sample(8000).observation[:, 0, 0], starts)


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    'options, message',
    [
        (dict(overlap=4), r'overlap must be smaller than sequence_length \(4\), got 4'),
        (dict(overlap=-1), r'overlap must be an integer >= 0'),
        (dict(capacity=0), r'capacity must be an integer >= 1'),
        (dict(sequence_length=0, overlap=0), r'sequence_length must be an integer >= 1'),
        (dict(discount=1.5), r'discount must be a number in \[0, 1\]'),
    ],
)
def test_bad_construction_is_refused(options, message):
    arguments = dict(capacity=10, sequence_length=4, overlap=2, observation_shape=(2,), observation_dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        SequenceReplay(**{**arguments, **options})


def test_bad_steps_and_early_sampling_are_refused():
    replay = make_replay()
    with pytest.raises(RuntimeError, match='no sequence yet'):
        replay.sample(1)
    good = dict(
        observation=np.zeros((1, 2), np.float32), action=np.array([0]), reward=np.array([0.0]),
        terminal=np.array([False]), episode_end=np.array([False]), final_observation=np.zeros((1, 2), np.float32),
    )
    with pytest.raises(ValueError, match='final_observation is required'):
        replay.add(**{**good, 'final_observation': None})
    with pytest.raises(ValueError, match=r'observation must have shape \(1, 2\)'):
        replay.add(**{**good, 'observation': np.zeros((1, 3), np.float32)})
    replay.add(**good)
    with pytest.raises(ValueError, match=r'indices must lie in \[0, 0\)'):
        replay.sequences_at(np.array([0]))


# ------------------------------------------------------------------------------------ stored state (R2D2)


def test_each_sequence_keeps_the_recurrent_state_before_its_first_step():
    """state_size=2, the state before step t of episode e is [t, e]: sequences of 4 steps overlapping by 2 start at
    t = 0, 2, 4 of the first episode; the next episode's sequence starts at its t = 0."""
    replay = make_replay(state_size=2)
    for episode, num_steps in ((0, 7), (1, 3)):
        for t in range(num_steps):
            last = t == num_steps - 1
            replay.add(
                observation(t, episode)[None], np.array([0]), np.array([1.0]), np.array([last]), np.array([last]),
                observation(t + 1, episode)[None], recurrent_state=np.array([[t, episode]], np.float32),
            )
    sequences = all_sequences(replay)
    np.testing.assert_array_equal(sequences.initial_state, [[0, 0], [2, 0], [4, 0], [0, 1]])
    np.testing.assert_array_equal(sequences.observation[:, 0, 0], [0, 2, 4, 0])
    assert sequences.initial_state.dtype == np.float32


def test_without_a_state_size_sequences_carry_an_empty_state():
    replay = make_replay()
    play(replay, 4)
    assert all_sequences(replay).initial_state.shape == (1, 0)


def test_a_replay_that_stores_states_refuses_steps_without_one():
    replay = make_replay(state_size=3)
    step = dict(
        observation=np.zeros((1, 2), np.float32), action=np.array([0]), reward=np.array([0.0]),
        terminal=np.array([False]), episode_end=np.array([False]), final_observation=np.zeros((1, 2), np.float32),
    )
    with pytest.raises(ValueError, match='recurrent_state is required'):
        replay.add(**step)
    with pytest.raises(ValueError, match=r'recurrent_state must have shape \(1, 3\)'):
        replay.add(**step, recurrent_state=np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match='state_size must be an integer >= 0'):
        make_replay(state_size=-1)


def test_each_steps_extras_are_kept_with_its_sequences_through_overlap_and_padding():
    """extras_size=3, the extras of step t of stream s are [t, s, 1]: stream 0 plays one episode of 7 steps, stream 1
    steps without an end; every sequence holds its own steps' extras, zeros on its padding."""
    replay = make_replay(num_streams=2, extras_size=3)
    plain = make_replay(num_streams=2)
    for t in range(7):
        end = np.array([t == 6, False])
        replay.add(
            np.stack([observation(t), observation(t, 1)]), np.zeros(2, np.int64), np.zeros(2), end, end,
            np.stack([observation(t + 1), observation(t + 1, 1)]), extras=np.array([[t, 0, 1], [t, 1, 1]], np.float32),
        )
    assert replay.num_sequences == 5  # stream 0: steps 0-3, 2-5, 4-6 (padded); stream 1: 0-3, 2-5
    sequences, extras = all_sequences(replay), replay.extras_at(np.arange(5))
    assert extras.shape == (5, 4, 3) and extras.dtype == np.float32
    np.testing.assert_array_equal(extras[..., 0][sequences.mask], sequences.observation[:, :-1, 0][sequences.mask])
    np.testing.assert_array_equal(extras[..., 1][sequences.mask], sequences.observation[:, :-1, 1][sequences.mask])
    assert not extras[~sequences.mask].any() and extras[sequences.mask, 2].all()
    assert replay.bytes_per_sequence() == plain.bytes_per_sequence() + 4 * 3 * 4  # T steps of 3 float32
    step = dict(
        observation=np.zeros((2, 2), np.float32), action=np.zeros(2, np.int64), reward=np.zeros(2),
        terminal=np.zeros(2, bool), episode_end=np.zeros(2, bool), final_observation=np.zeros((2, 2), np.float32),
    )
    with pytest.raises(ValueError, match='extras is required'):
        replay.add(**step)
    with pytest.raises(ValueError, match=r'extras must have shape \(2, 3\)'):
        replay.add(**step, extras=np.zeros((2, 2), np.float32))


def test_a_replay_saved_before_extras_existed_loads():
    replay = make_replay()
    play(replay, 6)
    state = replay_lib.replay_state(replay)
    items = state['attributes']['items']
    state['attributes']['items'] = [item for item in items if item[0] not in ('_extras', '_pending_extras', '_extras_size')]
    restored = make_replay()
    replay_lib.load_replay_state(restored, state)
    np.testing.assert_array_equal(all_sequences(restored).observation, all_sequences(replay).observation)
    assert restored.extras_at(np.arange(restored.num_sequences)).shape == (restored.num_sequences, 4, 0)
