"""Tests for deep_rl_zoo/replay.py: exact n-step transitions built from stored step timelines."""

import math

import numpy as np
import pytest

from deep_rl_zoo import replay as replay_lib

_NO = np.array([False])
_YES = np.array([True])


def _scalar_replay(capacity=16, n_step=1, discount=0.5, num_streams=1, **kwargs):
    """A replay of observations [step id] so that every number in a transition can be checked by hand."""
    return replay_lib.UniformReplay(
        capacity, (1,), np.float32, n_step=n_step, discount=discount, num_streams=num_streams, **kwargs
    )


def _add_single(replay, observation, action, reward, terminal=False, episode_end=False, final_observation=None):
    """Adds one step to a one-stream replay of scalar observations."""
    replay.add(
        np.array([[observation]], np.float32),
        np.array([action]),
        np.array([reward], np.float32),
        np.array([terminal]),
        np.array([episode_end]),
        None if final_observation is None else np.array([[final_observation]], np.float32),
    )


def _valid_slots(replay, stream=0):
    return np.flatnonzero(replay._valid[stream])


def _assert_transitions(transition, s_tm1, a_tm1, r_t, discount_t, s_t):
    np.testing.assert_array_equal(transition.s_tm1[:, 0], s_tm1)
    np.testing.assert_array_equal(transition.a_tm1, a_tm1)
    np.testing.assert_allclose(transition.r_t, r_t, rtol=1e-6)
    np.testing.assert_allclose(transition.discount_t, discount_t, rtol=1e-6)
    np.testing.assert_array_equal(transition.s_t[:, 0], s_t)
    assert transition.r_t.dtype == np.float32 and transition.discount_t.dtype == np.float32


def test_one_step_returns():
    replay = _scalar_replay(n_step=1, discount=0.9)
    _add_single(replay, 0.0, 5, 1.0)
    _add_single(replay, 1.0, 6, 2.0)
    _add_single(replay, 2.0, 7, 3.0, terminal=True, episode_end=True)
    _add_single(replay, 10.0, 8, 4.0)  # A new episode; its transition waits for the next observation.
    np.testing.assert_array_equal(_valid_slots(replay), [0, 1, 2])
    assert replay.size == len(replay) == 3
    transition = replay.transitions_at(np.zeros(3, int), np.arange(3))
    # At the terminal, discount is 0 and s_t is a copy of s_tm1.
    _assert_transitions(transition, [0, 1, 2], [5, 6, 7], [1, 2, 3], [0.9, 0.9, 0.0], [1, 2, 2])


def test_three_step_returns_with_terminal_inside_window():
    replay = _scalar_replay(n_step=3, discount=0.5)
    for step, reward in enumerate([1.0, 2.0, 3.0, 4.0]):
        _add_single(replay, step, step, reward, terminal=step == 3, episode_end=step == 3)
    for step, reward in enumerate([10.0, 20.0, 30.0, 40.0, 50.0]):
        _add_single(replay, 100 + step, 10 + step, reward)
    np.testing.assert_array_equal(_valid_slots(replay), [0, 1, 2, 3, 4, 5])
    transition = replay.transitions_at(np.zeros(6, int), np.arange(6))
    _assert_transitions(
        transition,
        s_tm1=[0, 1, 2, 3, 100, 101],
        a_tm1=[0, 1, 2, 3, 10, 11],
        r_t=[
            1 + 0.5 * 2 + 0.25 * 3,  # 2.75, bootstraps from step 3.
            2 + 0.5 * 3 + 0.25 * 4,  # 4.5, ends at the terminal.
            3 + 0.5 * 4,
            4,
            10 + 0.5 * 20 + 0.25 * 30,  # 27.5
            20 + 0.5 * 30 + 0.25 * 40,  # 45
        ],
        discount_t=[0.125, 0, 0, 0, 0.125, 0.125],
        s_t=[3, 1, 2, 3, 103, 104],
    )


def test_truncation_bootstraps_from_final_observation():
    replay = _scalar_replay(n_step=3, discount=0.5)
    _add_single(replay, 0.0, 1, 1.0)
    _add_single(replay, 1.0, 2, 2.0, episode_end=True, final_observation=99.0)
    for step, reward in enumerate([3.0, 4.0, 5.0, 6.0]):
        _add_single(replay, 20 + step, 3 + step, reward)
    # Slot 2 holds the final observation 99: it has no action and is never s_tm1.
    np.testing.assert_array_equal(_valid_slots(replay), [0, 1, 3])
    transition = replay.transitions_at(np.zeros(3, int), np.array([0, 1, 3]))
    _assert_transitions(
        transition,
        s_tm1=[0, 1, 20],
        a_tm1=[1, 2, 3],
        r_t=[1 + 0.5 * 2, 2, 3 + 0.5 * 4 + 0.25 * 5],
        discount_t=[0.25, 0.5, 0.125],
        s_t=[99, 99, 23],
    )


def test_truncation_without_final_observation_raises():
    replay = _scalar_replay()
    with pytest.raises(ValueError, match='final_observation'):
        _add_single(replay, 0.0, 1, 1.0, episode_end=True)


def test_life_loss_terminal_inside_episode():
    replay = _scalar_replay(n_step=2, discount=0.5)
    for step in range(5):
        _add_single(replay, step, step, step + 1.0, terminal=step == 1)  # A life is lost at step 1.
    np.testing.assert_array_equal(_valid_slots(replay), [0, 1, 2])
    transition = replay.transitions_at(np.zeros(3, int), np.arange(3))
    _assert_transitions(
        transition, s_tm1=[0, 1, 2], a_tm1=[0, 1, 2], r_t=[1 + 0.5 * 2, 2, 3 + 0.5 * 4], discount_t=[0, 0, 0.25],
        s_t=[0, 1, 4],
    )


def test_wrap_around_overwrites_oldest_and_never_crosses_write_head():
    replay = _scalar_replay(capacity=5, n_step=2, discount=0.5)
    for step in range(8):
        _add_single(replay, step, step, step + 1.0)
    # Slots hold steps [5, 6, 7, 3, 4]; steps 0-2 are gone. Step 6 needs step 8 (not written, its slot still
    # holds step 3) and step 7 needs step 9, so only steps 3, 4 and 5 are valid.
    np.testing.assert_array_equal(replay._valid[0], [True, False, False, True, True])
    transition = replay.transitions_at(np.zeros(3, int), np.array([3, 4, 0]))
    _assert_transitions(
        transition, s_tm1=[3, 4, 5], a_tm1=[3, 4, 5], r_t=[4 + 0.5 * 5, 5 + 0.5 * 6, 6 + 0.5 * 7],
        discount_t=[0.25] * 3, s_t=[5, 6, 7],
    )
    sample = replay.sample(200)
    assert set(sample.s_tm1[:, 0].tolist()) == {3.0, 4.0, 5.0}
    np.testing.assert_array_equal(sample.s_t, sample.s_tm1 + 2)


def test_two_streams_interleaved():
    replay = _scalar_replay(capacity=8, n_step=2, discount=0.5, num_streams=2)
    rewards = [(1.0, 10.0), (2.0, 20.0), (3.0, 30.0)]
    for step, reward in enumerate(rewards):
        stream_1_ends = step == 1
        replay.add(
            np.array([[100 + step], [200 + step]], np.float32),
            np.array([step, 10 + step]),
            np.array(reward, np.float32),
            np.array([False, stream_1_ends]),
            np.array([False, stream_1_ends]),
        )
    np.testing.assert_array_equal(replay._valid, [[True, False, False, False], [True, True, False, False]])
    assert replay.capacity == 8 and replay.size == 3
    transition = replay.transitions_at(np.array([0, 1, 1]), np.array([0, 0, 1]))
    _assert_transitions(
        transition, s_tm1=[100, 200, 201], a_tm1=[0, 10, 11], r_t=[1 + 0.5 * 2, 10 + 0.5 * 20, 20],
        discount_t=[0.25, 0, 0], s_t=[102, 200, 201],
    )


def test_continuous_actions():
    replay = replay_lib.UniformReplay(8, (2,), np.float32, action_shape=(2,), action_dtype=np.float32)
    for step in range(3):
        replay.add(np.full((1, 2), step), np.array([[step, -step]]), np.ones(1), _NO, _NO)
    transition = replay.transitions_at(np.array([0, 0]), np.array([0, 1]))
    np.testing.assert_array_equal(transition.a_tm1, [[0.0, -0.0], [1.0, -1.0]])
    assert transition.a_tm1.dtype == np.float32


class _FakeAtari:
    """Streams of random 3x4 frames stacked 4 deep, with life losses, terminations and truncations.

    First stacks are zeros, repeats of the first frame or unrelated junk, so only an exact rebuild passes.
    Records every added stack per stream in timeline order, the final observations included.
    """

    def __init__(self, num_streams, seed):
        self.random = np.random.default_rng(seed)
        self.num_streams = num_streams
        self.timeline = [[] for _ in range(num_streams)]
        self.episode_starts = [[] for _ in range(num_streams)]
        self.stacks = [self._first_stack(stream) for stream in range(num_streams)]

    def _frame(self):
        return self.random.integers(0, 256, (3, 4), dtype=np.uint8)

    def _first_stack(self, stream):
        self.episode_starts[stream].append(len(self.timeline[stream]))
        frame, kind = self._frame(), self.random.integers(3)
        filler = [np.zeros_like(frame), frame, self._frame()][kind]
        return np.stack([filler, filler, filler, frame])

    def step(self, replay):
        observation = np.stack(self.stacks)
        terminal = self.random.random(self.num_streams) < 0.15
        episode_end = terminal & (self.random.random(self.num_streams) < 0.5)
        truncated = ~terminal & (self.random.random(self.num_streams) < 0.08)
        episode_end |= truncated
        next_stacks = [np.concatenate([stack[1:], self._frame()[None]]) for stack in self.stacks]
        for stream in range(self.num_streams):
            self.timeline[stream].append(observation[stream])
            if truncated[stream]:
                self.timeline[stream].append(next_stacks[stream])
            self.stacks[stream] = self._first_stack(stream) if episode_end[stream] else next_stacks[stream]
        replay.add(
            observation,
            self.random.integers(0, 6, self.num_streams),
            self.random.random(self.num_streams),
            terminal,
            episode_end,
            np.stack(next_stacks),
        )


def _logical_index(replay, stream, slot):
    """Position in the stream's timeline of what `slot` holds."""
    written = replay._num_written[stream]
    return written - 1 - (written - 1 - slot) % replay._slots_per_stream


def _assert_stacks_match_timeline(replay, env):
    streams, slots = np.nonzero(replay._valid)
    assert replay.size == streams.size
    transition = replay.transitions_at(streams, slots)
    for row, (stream, slot) in enumerate(zip(streams, slots)):
        index = _logical_index(replay, stream, slot)
        np.testing.assert_array_equal(transition.s_tm1[row], env.timeline[stream][index])
        if transition.discount_t[row] == 0:
            np.testing.assert_array_equal(transition.s_t[row], transition.s_tm1[row])
        else:
            steps = round(math.log(transition.discount_t[row]) / math.log(0.5))
            np.testing.assert_array_equal(transition.s_t[row], env.timeline[stream][index + steps])
    return streams.size


@pytest.mark.parametrize('capacity, compress', [(48, False), (48, True), (8, False)])
def test_frame_stack_rebuild_equals_added_stacks(capacity, compress):
    replay = replay_lib.UniformReplay(
        capacity, (4, 3, 4), np.uint8, n_step=3, discount=0.5, num_streams=2, frame_stack=4, compress=compress
    )
    env = _FakeAtari(num_streams=2, seed=1)
    num_checked = 0
    for step in range(120):
        env.step(replay)
        if step % 7 == 0:
            num_checked += _assert_stacks_match_timeline(replay, env)
            for stream in range(2):
                # First stacks are kept only for episodes whose first slot is still stored.
                oldest = replay._num_written[stream] - replay._slots_per_stream
                stored = [start for start in env.episode_starts[stream] if oldest <= start < len(env.timeline[stream])]
                assert len(replay._first_stacks[stream]) == len(stored)
    assert num_checked > capacity  # Many transitions were checked, not just a few.


def test_frame_stack_validity_at_buffer_tail():
    # k = 4 and 6 slots; episode A is steps 0-4 (terminal at 4), episode B starts at step 5; 10 steps written.
    # The buffer holds steps 4-9. Step 4 needs frames of steps 1-3 (overwritten); steps 5-8 rebuild from B's
    # first stack and later frames; step 9 has no s_t yet.
    replay = replay_lib.UniformReplay(6, (4, 1, 1), np.uint8, frame_stack=4, discount=0.5)
    stacks = []
    stack = np.array([7, 7, 7, 0], np.uint8).reshape(4, 1, 1)
    for step in range(10):
        stacks.append(stack)
        replay.add(stack[None], np.array([step]), np.ones(1), np.array([step == 4]), np.array([step == 4]))
        if step == 4:
            stack = np.array([0, 0, 0, 5], np.uint8).reshape(4, 1, 1)
        else:
            stack = np.concatenate([stack[1:], np.full((1, 1, 1), step + 1, np.uint8)])
    np.testing.assert_array_equal(replay._valid[0], [True, True, True, False, False, True])  # steps 6,7,8,9,4,5
    transition = replay.transitions_at(np.zeros(4, int), np.array([5, 0, 1, 2]))
    np.testing.assert_array_equal(transition.s_tm1, np.stack(stacks[5:9]))
    np.testing.assert_array_equal(transition.s_t, np.stack(stacks[6:10]))
    np.testing.assert_array_equal(transition.s_tm1[2, :, 0, 0], [0, 5, 6, 7])


def test_frame_stack_long_episode_needs_only_the_previous_frames():
    # One long episode in 6 slots, k = 4: the buffer holds steps 4-9. Step 7 is the oldest whose 3 previous
    # frames (steps 4-6) are all stored; step 9 has no s_t yet.
    replay = replay_lib.UniformReplay(6, (4, 1, 1), np.uint8, frame_stack=4)
    for step in range(10):
        stack = np.arange(step - 3, step + 1).clip(0).astype(np.uint8).reshape(1, 4, 1, 1)
        replay.add(stack, np.array([step]), np.ones(1), _NO, _NO)
    np.testing.assert_array_equal(np.flatnonzero(replay._valid[0]), [1, 2])
    transition = replay.transitions_at(np.zeros(2, int), np.array([1, 2]))
    np.testing.assert_array_equal(transition.s_tm1[:, :, 0, 0], [[4, 5, 6, 7], [5, 6, 7, 8]])
    np.testing.assert_array_equal(transition.s_t[:, :, 0, 0], [[5, 6, 7, 8], [6, 7, 8, 9]])


def test_frame_stack_that_does_not_shift_raises():
    replay = replay_lib.UniformReplay(8, (2, 1, 1), np.uint8, frame_stack=2)
    replay.add(np.array([1, 2], np.uint8).reshape(1, 2, 1, 1), np.zeros(1, int), np.zeros(1), _NO, _NO)
    with pytest.raises(ValueError, match='did not shift'):
        replay.add(np.array([3, 4], np.uint8).reshape(1, 2, 1, 1), np.zeros(1, int), np.zeros(1), _NO, _NO)


def test_final_observation_that_does_not_shift_raises_before_writing():
    replay = replay_lib.UniformReplay(8, (2, 1, 1), np.uint8, frame_stack=2)
    stack = np.array([1, 2], np.uint8).reshape(1, 2, 1, 1)
    wrong_final = np.array([1, 3], np.uint8).reshape(1, 2, 1, 1)
    with pytest.raises(ValueError, match='did not shift'):
        replay.add(stack, np.zeros(1, int), np.zeros(1), _NO, _YES, wrong_final)
    assert replay._num_written[0] == 0


class _ValidityLog(replay_lib.UniformReplay):
    """A subclass that records validity changes, as a prioritized replay would to keep its sum tree."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.changes = []

    def _set_validity(self, streams, slots, valid):
        super()._set_validity(streams, slots, valid)
        self.changes.extend(zip(streams.tolist(), slots.tolist(), valid.tolist()))


def test_validity_changes_are_reported_once_each_for_subclasses():
    replay = _ValidityLog(2, (1,), np.float32)
    for step in range(3):  # Every step is terminal, so valid as soon as written.
        replay.add(np.array([[step]]), np.zeros(1, int), np.ones(1), _YES, _YES)
    # Step 2 overwrites step 0: slot 0 is reported invalid, then valid again as a new transition.
    assert replay.changes == [(0, 0, True), (0, 1, True), (0, 0, False), (0, 0, True)]
    assert replay.size == 2


@pytest.mark.parametrize('capacity, n_step, num_streams', [(30, 1, 1), (30, 3, 2), (4, 3, 1), (9, 2, 3)])
def test_validity_after_every_add_equals_recomputing_every_slot(capacity, n_step, num_streams):
    """add() recomputes only the slots it can change (the n + 2 newest of each stream, fewer when a stream has fewer
    slots than that): after each add, validity must equal a recomputation of every slot."""
    random = np.random.default_rng(5)
    replay = _scalar_replay(capacity, n_step=n_step, num_streams=num_streams)
    slots_per_stream = capacity // num_streams
    for step in range(80):  # wraps around every buffer
        ends = random.random(num_streams) < 0.2
        terminal = (ends & (random.random(num_streams) < 0.5)) | (random.random(num_streams) < 0.05)  # life losses too
        observation = np.full((num_streams, 1), step, np.float32)
        replay.add(observation, np.zeros(num_streams, int), np.ones(num_streams, np.float32), terminal, ends, observation + 0.5)
        expected = np.zeros_like(replay._valid)
        for stream, slot in zip(*np.nonzero(replay._num_written[:, None] > np.arange(slots_per_stream))):  # written slots
            expected[stream, slot] = replay._is_valid(stream, slot)
        np.testing.assert_array_equal(replay._valid, expected, err_msg=f'after add {step}')
        assert replay.size == expected.sum()
    assert replay.size > 0


def test_compression_round_trip_is_bit_identical():
    random = np.random.default_rng(3)
    plain, packed = (
        replay_lib.UniformReplay(12, (5, 2), np.float32, n_step=2, num_streams=2, compress=compress)
        for compress in (False, True)
    )
    for _ in range(20):
        step = (
            random.standard_normal((2, 5, 2)).astype(np.float32),
            random.integers(0, 4, 2),
            random.random(2),
            random.random(2) < 0.2,
            random.random(2) < 0.3,
            random.standard_normal((2, 5, 2)).astype(np.float32),
        )
        plain.add(*step)
        packed.add(*step)
    assert isinstance(packed._frames[0, 0], bytes)
    np.testing.assert_array_equal(plain._valid, packed._valid)
    streams, slots = np.nonzero(plain._valid)
    for expected, actual in zip(plain.transitions_at(streams, slots), packed.transitions_at(streams, slots)):
        assert expected.dtype == actual.dtype
        np.testing.assert_array_equal(expected, actual)


def _chi_square(counts):
    expected = counts.sum() / counts.size
    return float(((counts - expected) ** 2 / expected).sum())


def test_sampling_is_uniform_over_valid_slots_of_all_streams():
    replay = _scalar_replay(capacity=20, n_step=1, num_streams=2)
    for step in range(6):
        truncated = np.array([step == 2, False])
        replay.add(np.full((2, 1), step), np.zeros(2, int), np.zeros(2), np.zeros(2, bool), truncated, np.zeros((2, 1)))
    # Stream 0 holds 7 slots (2 invalid: the final observation and the newest), stream 1 holds 6 (1 invalid).
    np.testing.assert_array_equal(np.flatnonzero(replay._valid[0]), [0, 1, 2, 4, 5])
    np.testing.assert_array_equal(np.flatnonzero(replay._valid[1]), [0, 1, 2, 3, 4])
    streams, slots = replay.sample_indices(50_000)
    assert replay._valid[streams, slots].all()
    counts = np.bincount(streams * 10 + slots, minlength=20)[replay._valid.ravel()]
    assert _chi_square(counts) < 33.7  # The 0.9999 quantile of chi-square with 9 degrees of freedom.


def test_sampling_is_uniform_when_most_slots_are_invalid():
    # One-step episodes that all truncate: every other slot is a final observation, so many draws need the
    # fallback to listing valid slots.
    replay = _scalar_replay(capacity=16, n_step=3)
    for step in range(8):
        _add_single(replay, step, 0, 1.0, episode_end=True, final_observation=-1.0)
    np.testing.assert_array_equal(_valid_slots(replay), np.arange(0, 16, 2))
    streams, slots = replay.sample_indices(40_000)
    assert replay._valid[streams, slots].all()
    assert _chi_square(np.bincount(slots, minlength=16)[::2]) < 31.8  # 0.9999 quantile, 7 degrees of freedom.


@pytest.mark.parametrize(
    'kwargs, message',
    [
        (dict(capacity=0), 'capacity'),
        (dict(capacity=2, n_step=3), 'capacity'),
        (dict(capacity=12, num_streams=5, n_step=2), 'capacity'),
        (dict(n_step=0), 'n_step'),
        (dict(discount=1.5), 'discount'),
        (dict(discount=-0.1), 'discount'),
        (dict(num_streams=0), 'num_streams'),
        (dict(frame_stack=0), 'frame_stack'),
        (dict(frame_stack=4), 'observation_shape'),
        (dict(observation_shape=(0,)), 'observation_shape'),
    ],
)
def test_bad_constructor_arguments_raise(kwargs, message):
    arguments = dict(capacity=16, observation_shape=(3,), observation_dtype=np.float32)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        replay_lib.UniformReplay(**arguments)


@pytest.mark.parametrize(
    'step, message',
    [
        ((np.zeros((2, 3)), np.zeros(1, int), np.zeros(1), _NO, _NO), 'observation'),  # Two rows for one stream.
        ((np.zeros((1, 4)), np.zeros(1, int), np.zeros(1), _NO, _NO), 'observation'),
        ((np.zeros((1, 3)), np.zeros((1, 2), int), np.zeros(1), _NO, _NO), 'action'),
        ((np.zeros((1, 3)), np.zeros(1), np.zeros(1), _NO, _NO), 'action'),  # Float actions into int64 ones.
        ((np.zeros((1, 3)), np.zeros(1, int), 0.0, _NO, _NO), 'reward'),
        ((np.zeros((1, 3)), np.zeros(1, int), np.zeros(1), np.zeros(2, bool), _NO), 'terminal'),
        ((np.zeros((1, 3)), np.zeros(1, int), np.zeros(1), _NO, _YES, np.zeros((1, 2))), 'final_observation'),
    ],
)
def test_bad_add_arguments_raise(step, message):
    replay = replay_lib.UniformReplay(16, (3,), np.float32)
    with pytest.raises(ValueError, match=message):
        replay.add(*step)
    assert replay._num_written[0] == 0


def test_uint8_observations_refuse_floats():
    replay = replay_lib.UniformReplay(16, (3,), np.uint8)
    with pytest.raises(ValueError, match='observation'):
        replay.add(np.zeros((1, 3), np.float32), np.zeros(1, int), np.zeros(1), _NO, _NO)


def test_bad_sampling_requests_raise():
    replay = _scalar_replay()
    with pytest.raises(RuntimeError, match='no sampleable'):
        replay.sample(4)
    for step in range(3):
        _add_single(replay, step, 0, 0.0)
    with pytest.raises(ValueError, match='batch_size'):
        replay.sample(0)
    with pytest.raises(ValueError, match='not sampleable'):
        replay.transitions_at(np.array([0]), np.array([2]))  # The newest step has no s_t yet.
    with pytest.raises(ValueError, match='not sampleable'):
        replay.transitions_at(np.array([1]), np.array([0]))  # No stream 1.
    with pytest.raises(ValueError, match='1-D integer'):
        replay.transitions_at(np.array([0.0]), np.array([0]))


@pytest.mark.parametrize('frame_stack, compress', [(1, False), (4, False), (4, True)])
def test_uniform_replay_bytes_is_what_the_replay_allocates_up_front(frame_stack, compress):
    """The estimate `replay_agent.build_replay` checks against the free memory before allocating (a replay of 10^9
    Atari frames would need 6.6 TiB: one line naming --replay_capacity, not a numpy error or an out-of-memory kill)."""
    shape = (frame_stack, 6, 5) if frame_stack > 1 else (6, 5)
    replay = replay_lib.UniformReplay(capacity=40, observation_shape=shape, observation_dtype=np.uint8, num_streams=2, frame_stack=frame_stack, compress=compress)
    per_slot = [value for value in vars(replay).values() if isinstance(value, np.ndarray) and value.shape[:2] == (2, 20)]
    allocated = sum(array.nbytes for array in per_slot if array.dtype != object)
    assert replay_lib.uniform_replay_bytes(40, shape, np.uint8, frame_stack, compress) == allocated
    assert replay_lib.uniform_replay_bytes(10**9, (4, 84, 84), np.uint8, 4) == 10**9 * (84 * 84 + 8 + 4 + 4 + 4)
