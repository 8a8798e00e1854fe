"""Experience replay that stores a timeline of steps and builds n-step transitions when sampled.

Each environment stream writes its steps, in order, into its own circular buffer of slots (as in
Dopamine's circular replay). A slot holds the observation an action was taken from, that action, the
reward received after it and whether the step ended in a terminal state or ended the episode. A
transition is assembled only when it is sampled:

    r_t        = sum_{k<m} gamma^k r_{i+k}      (m <= n, stopping at a terminal or an episode end)
    discount_t = gamma^m * (1 - terminal)
    s_t        = the observation m steps after s_tm1

so n-step returns are exact (Sutton & Barto, 2018, section 7.1; Hessel et al., 2018, "Rainbow").
With `frame_stack = k > 1` (Atari stacks of the last k frames, Mnih et al., 2015) a slot stores only the
newest frame; stacks are rebuilt from the previous slots of the same episode, and from the full first
stack of each episode, kept in a small side store.
"""

from typing import Any, NamedTuple, Optional, Tuple

import numpy as np
import snappy

# Rounds of redrawing invalid slots before `UniformReplay.sample_indices` lists the valid slots instead.
_MAX_REJECTION_ROUNDS = 4


class Transition(NamedTuple):
    """A batch of n-step transitions, leading dimension B."""

    s_tm1: np.ndarray  # [B, *observation_shape]
    a_tm1: np.ndarray  # [B, *action_shape]
    r_t: np.ndarray  # [B] float32, the discounted sum of the m rewards after a_tm1
    discount_t: np.ndarray  # [B] float32, gamma**m * (1 - terminal)
    s_t: np.ndarray  # [B, *observation_shape], m steps after s_tm1; a copy of s_tm1 where discount_t == 0


def _check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f'{name} must be an integer >= {minimum}, got {value!r}')
    return int(value)


def _as_batch(name: str, value: Any, shape: Tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`value` as an array of `dtype`, checked to have `shape` and a dtype that converts without changing kind."""
    if type(value) is np.ndarray and value.dtype == dtype and value.shape == shape:
        return value  # the common case, on every step: nothing to check or convert
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f'{name} must have shape {shape} (num_streams first), got {array.shape}')
    if not np.can_cast(array.dtype, dtype, casting='same_kind'):
        raise ValueError(f'{name} must have a dtype convertible to {dtype}, got {array.dtype}')
    return array.astype(dtype, copy=False)


def uniform_replay_bytes(capacity: int, observation_shape: Tuple[int, ...], observation_dtype: Any, frame_stack: int = 1, compress: bool = False) -> int:
    """The memory `UniformReplay` allocates for `capacity` slots (discrete actions): the newest frame of each step
    (nothing up front when `compress`: compressed frames are stored as they come), its action, reward and flags."""
    frame_shape = tuple(observation_shape)[1:] if frame_stack > 1 else tuple(observation_shape)
    frame_bytes = 0 if compress else int(np.prod(frame_shape, dtype=np.int64)) * np.dtype(observation_dtype).itemsize
    per_slot = frame_bytes + np.dtype(np.int64).itemsize + np.dtype(np.float32).itemsize + 4 + (4 if frame_stack > 1 else 0)  # 4 flags
    return int(capacity) * per_slot


class UniformReplay:
    """Circular replay of step timelines, one per environment stream, sampled uniformly with replacement.

    `capacity` slots are split evenly between `num_streams` streams (each gets `capacity // num_streams`).
    A slot (stream, slot) is valid, i.e. sampleable as s_tm1, when it holds an action, every step of its
    n-step window (and the slot of s_t, unless the window ends at a terminal) is written and not yet
    overwritten, and with frame stacking every frame of its stack is still stored. Windows never cross the
    write head. A truncated episode's final observation takes one extra slot that is never valid itself.

    Seam for other sampling schemes (e.g. prioritized replay over a sum tree of the same slots):
      - `sample_indices(batch_size) -> (streams, slots)` picks the slots; override it to sample differently.
      - `transitions_at(streams, slots) -> Transition` builds the transitions of given valid slots.
      - `_set_validity(streams, slots, valid)` is called exactly when slots change validity: valid once
        a window completes; invalid when overwritten (just before the new write, so an overwritten slot
        that is valid again is reported twice) or when frames its stack needs are overwritten. Extend it,
        calling super(), to keep priorities of invalid slots at zero and give new transitions a starting
        priority. `self._valid[stream, slot]` holds the current validity.
    `sample(batch_size)` is `transitions_at(*sample_indices(batch_size))`.
    """

    def __init__(
        self,
        capacity: int,
        observation_shape: Tuple[int, ...],
        observation_dtype: Any,
        action_shape: Tuple[int, ...] = (),
        action_dtype: Any = np.int64,
        n_step: int = 1,
        discount: float = 0.99,
        num_streams: int = 1,
        frame_stack: int = 1,
        compress: bool = False,
        seed: int = 0,
    ):
        """Allocates storage for `capacity` slots.

        Args:
          capacity: total number of slots (steps) kept, over all streams.
          observation_shape: shape of one observation, e.g. (4, 84, 84) for Atari with `frame_stack=4`.
          observation_dtype: numpy dtype of observations.
          action_shape: shape of one action: () for discrete actions, (D,) for continuous ones.
          action_dtype: numpy dtype of actions.
          n_step: the most rewards summed into one transition.
          discount: gamma, in [0, 1].
          num_streams: number of environments adding steps side by side.
          frame_stack: k > 1 when observations are stacks of the last k frames along axis 0 that shift by one
            frame per step; only the newest frame of each step is then stored.
          compress: store each slot's frame compressed with snappy; sampling decompresses it exactly.
          seed: seed of the sampling random generator.
        """
        capacity = _check_positive_int('capacity', capacity)
        self._n_step = _check_positive_int('n_step', n_step)
        self._num_streams = _check_positive_int('num_streams', num_streams)
        self._frame_stack = _check_positive_int('frame_stack', frame_stack)
        if not isinstance(discount, (int, float, np.floating)) or not 0.0 <= discount <= 1.0:
            raise ValueError(f'discount must be a number in [0, 1], got {discount!r}')
        try:
            self._observation_shape = tuple(int(size) for size in observation_shape)
            self._action_shape = tuple(int(size) for size in action_shape)
        except TypeError as error:
            raise ValueError('observation_shape and action_shape must be tuples of integers') from error
        if any(size < 1 for size in self._observation_shape + self._action_shape):
            raise ValueError(
                f'observation_shape and action_shape must hold positive sizes, got '
                f'{self._observation_shape} and {self._action_shape}'
            )
        if self._frame_stack > 1 and (
            len(self._observation_shape) < 2 or self._observation_shape[0] != self._frame_stack
        ):
            raise ValueError(
                f'with frame_stack={frame_stack}, observation_shape must be (frame_stack, *frame_shape), '
                f'got {self._observation_shape}'
            )
        self._slots_per_stream = capacity // self._num_streams
        min_slots = max(self._n_step + 1, self._frame_stack)
        if self._slots_per_stream < min_slots:
            raise ValueError(
                f'capacity must give each of the {self._num_streams} streams at least max(n_step + 1, '
                f'frame_stack) = {min_slots} slots, got capacity={capacity}'
            )
        self._discount = float(discount)
        self._observation_dtype = np.dtype(observation_dtype)
        self._action_dtype = np.dtype(action_dtype)
        self._compress = bool(compress)
        self._random = np.random.default_rng(seed)

        shape = (self._num_streams, self._slots_per_stream)
        self._frame_shape = self._observation_shape[1:] if self._frame_stack > 1 else self._observation_shape
        if self._compress:
            self._frames = np.empty(shape, dtype=object)
        else:
            self._frames = np.empty(shape + self._frame_shape, dtype=self._observation_dtype)
        self._actions = np.zeros(shape + self._action_shape, dtype=self._action_dtype)
        self._rewards = np.zeros(shape, dtype=np.float32)
        self._terminal = np.zeros(shape, dtype=bool)
        self._episode_end = np.zeros(shape, dtype=bool)
        self._has_action = np.zeros(shape, dtype=bool)
        self._valid = np.zeros(shape, dtype=bool)
        self._num_valid = 0
        self._num_written = np.zeros(self._num_streams, dtype=np.int64)  # slots ever written, per stream
        self._starts_episode = np.ones(self._num_streams, dtype=bool)  # the next add() begins an episode
        if self._frame_stack > 1:
            # Steps since the episode's first slot, capped at frame_stack - 1: all a stack rebuild needs.
            self._episode_offset = np.zeros(shape, dtype=np.int32)
            self._last_offset = np.zeros(self._num_streams, dtype=np.int32)
            self._last_stack = np.zeros((self._num_streams,) + self._observation_shape, self._observation_dtype)
            # Per stream: {slot of an episode's first step: that step's full stack}; freed when overwritten.
            self._first_stacks = [{} for _ in range(self._num_streams)]

    @property
    def capacity(self) -> int:
        """Total number of slots over all streams."""
        return self._num_streams * self._slots_per_stream

    @property
    def size(self) -> int:
        """Number of slots that can be sampled as s_tm1 now."""
        return self._num_valid

    def __len__(self) -> int:
        return self._num_valid

    def add(
        self,
        observation: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminal: np.ndarray,
        episode_end: np.ndarray,
        final_observation: Optional[np.ndarray] = None,
    ) -> None:
        """Appends one step to every stream.

        Args:
          observation: [num_streams, *observation_shape], the observations the actions were taken from.
          action: [num_streams, *action_shape].
          reward: [num_streams], the rewards received after the actions.
          terminal: [num_streams] bool, the step reached a learning terminal (game over, or a lost life when
            lives count as terminals): no bootstrapping past it. The episode may continue in the stream.
          episode_end: [num_streams] bool, the episode really ended (terminated or truncated); the next add()
            starts a new episode in that stream.
          final_observation: [num_streams, *observation_shape]; the rows where `episode_end & ~terminal`
            (truncation) hold the last observation, used to bootstrap. Needed only if some stream truncates.
        """
        batch = (self._num_streams,)
        observation = _as_batch('observation', observation, batch + self._observation_shape, self._observation_dtype)
        action = _as_batch('action', action, batch + self._action_shape, self._action_dtype)
        reward = _as_batch('reward', reward, batch, np.float32)
        terminal = _as_batch('terminal', terminal, batch, np.bool_)
        episode_end = _as_batch('episode_end', episode_end, batch, np.bool_)
        truncated_streams = [stream for stream in range(self._num_streams) if episode_end[stream] and not terminal[stream]]
        if truncated_streams:
            if final_observation is None:
                raise ValueError('final_observation is required when a stream truncates (episode_end & ~terminal)')
            final_observation = _as_batch(
                'final_observation', final_observation, batch + self._observation_shape, self._observation_dtype
            )
        if self._frame_stack > 1:
            self._check_frames_shift(observation, final_observation, episode_end & ~terminal)
        # Each stream's step goes to its head slot; a truncated episode's final observation to the slot after it.
        heads = self._num_written.tolist()
        self._invalidate_overwritten([(stream, heads[stream]) for stream in range(self._num_streams)]
                                     + [(stream, heads[stream] + 1) for stream in truncated_streams])  # fmt: skip
        for stream in range(self._num_streams):
            self._write_slot(stream, observation[stream], action[stream], reward[stream], terminal[stream], episode_end[stream], True)
        for stream in truncated_streams:
            self._write_slot(stream, final_observation[stream], 0, 0.0, False, True, False)
        self._starts_episode[:] = episode_end
        self._refresh_validity()

    def _check_frames_shift(
        self, observation: np.ndarray, final_observation: Optional[np.ndarray], truncated: np.ndarray
    ) -> None:
        """Raises unless each stack continuing an episode is the previous one shifted by one frame."""
        continuing = ~self._starts_episode
        shifted = np.ones(self._num_streams, bool)
        shifted[continuing] = np.all(
            observation[continuing, :-1] == self._last_stack[continuing, 1:], axis=tuple(range(1, observation.ndim))
        )
        if truncated.any():
            shifted[truncated] &= np.all(
                final_observation[truncated, :-1] == observation[truncated, 1:], axis=tuple(range(1, observation.ndim))
            )
        if not shifted.all():
            raise ValueError(
                f'frame stacks of streams {np.flatnonzero(~shifted).tolist()} did not shift by one frame since the '
                f'previous step of the episode; pass episode_end=True where the environment restarted its frame stack'
            )

    def _invalidate_overwritten(self, writes: list) -> None:
        """Reports the valid slots that the (stream, timeline position) writes are about to overwrite as invalid."""
        overwritten = [(stream, position % self._slots_per_stream) for stream, position in writes]
        overwritten = [(stream, slot) for stream, slot in overwritten if self._valid[stream, slot]]
        if overwritten:
            streams, slots = np.array(overwritten, np.int64).T
            self._set_validity(streams, slots, np.zeros(len(overwritten), bool))

    def _write_slot(
        self, stream: int, observation: np.ndarray, action: Any, reward: Any, terminal: Any, episode_end: Any, has_action: bool
    ) -> None:
        """Writes one step (or a truncated episode's final observation) at the head of `stream`. Few streams step
        together, so plain Python per stream is faster than numpy calls over them."""
        slot = int(self._num_written[stream]) % self._slots_per_stream
        if self._frame_stack > 1:
            start = bool(self._starts_episode[stream])
            self._last_stack[stream] = observation
            offset = 0 if start else min(int(self._last_offset[stream]) + 1, self._frame_stack - 1)
            self._episode_offset[stream, slot] = self._last_offset[stream] = offset
            self._first_stacks[stream].pop(slot, None)
            if start:
                self._first_stacks[stream][slot] = observation.copy()
            observation = observation[-1]  # only the newest frame is stored
        if self._compress:
            self._frames[stream, slot] = snappy.compress(np.ascontiguousarray(observation).tobytes())
        else:
            self._frames[stream, slot] = observation
        self._actions[stream, slot] = action
        self._rewards[stream, slot] = reward
        self._terminal[stream, slot] = terminal
        self._episode_end[stream, slot] = episode_end
        self._has_action[stream, slot] = has_action
        self._num_written[stream] += 1
        self._starts_episode[stream] = False

    def _refresh_validity(self) -> None:
        """Recomputes validity of the slots the last add() can have changed, reporting only changes.

        An add() writes at most two slots per stream. They can complete the windows of the n + 2 newest
        slots (a complete window stays complete: only the overwrite, reported before it, ends a valid slot), and,
        with frame stacking, overwrite a frame or first stack needed by the frame_stack - 1 oldest slots. So few
        slots change per add that plain Python over them is faster than numpy calls.
        """
        streams, slots, valid = [], [], []
        for stream in range(self._num_streams):
            written = int(self._num_written[stream])
            oldest = max(written - self._slots_per_stream, 0)  # the oldest position of the timeline still stored
            newest = range(max(written - self._n_step - 2, oldest), written)
            tail = range(oldest, written - self._slots_per_stream + self._frame_stack - 1)  # empty without frame stacks
            for position in sorted(set(newest).union(tail)) if tail else newest:
                slot = position % self._slots_per_stream
                was_valid = bool(self._valid[stream, slot])
                if was_valid and position not in tail:
                    continue
                now = self._is_valid(stream, slot)
                if now != was_valid:
                    streams.append(stream)
                    slots.append(slot)
                    valid.append(now)
        if streams:
            self._set_validity(np.array(streams, np.int64), np.array(slots, np.int64), np.array(valid, bool))

    def _set_validity(self, streams: np.ndarray, slots: np.ndarray, valid: np.ndarray) -> None:
        """Records a change of validity of (streams, slots); the hook for subclasses that index slots."""
        self._valid[streams, slots] = valid
        self._num_valid += 2 * int(np.count_nonzero(valid)) - valid.size

    def _is_valid(self, stream: int, slot: int) -> bool:
        """Whether a written slot can be sampled as s_tm1 (see the class docstring): it holds an action and its
        n-step window is complete: every step up to the window's end is written and, unless the window ends at a
        terminal, so is the slot of s_t; with frame stacking, the frames of its stack are still stored."""
        if not self._has_action[stream, slot]:
            return False
        written = int(self._num_written[stream])
        newer = (written - 1 - slot) % self._slots_per_stream  # slots written after this one
        s_t_offset = self._n_step  # where s_t is, in slots after this one (as `transitions_at` reads it)
        for offset in range(self._n_step):
            if offset > newer:
                return False  # the window's next step is not written yet
            step_slot = (slot + offset) % self._slots_per_stream
            if self._terminal[stream, step_slot]:
                s_t_offset = 0  # a terminal: nothing to bootstrap from, s_t is a copy of s_tm1
                break
            if self._episode_end[stream, step_slot]:
                s_t_offset = offset + 1  # truncated: s_t is the final observation, in the next slot
                break
        if s_t_offset > newer:
            return False  # s_t is not written yet
        if self._frame_stack > 1:
            # The stack needs the min(offset, k - 1) slots before this one: the older frames of the stack
            # or, near the episode's start, its first slot (where the first stack is kept).
            older = min(written, self._slots_per_stream) - 1 - newer
            return bool(self._episode_offset[stream, slot] <= older)
        return True

    def _n_step_window(self, streams: np.ndarray, slots: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The n-step windows starting at valid slots, whose steps up to the window's end are all written.

        Returns:
          reward_sum: float64, sum_{k<m} gamma^k r_{slot+k}.
          steps: m, the number of rewards summed (n, or fewer when the episode ends first).
          terminal_hit: the window ended at a terminal.
        """
        offsets = np.arange(self._n_step)
        rows, step_slots = streams[:, None], (slots[:, None] + offsets) % self._slots_per_stream  # [B, n]
        terminal = self._terminal[rows, step_slots]
        ends = terminal | self._episode_end[rows, step_slots]
        in_window = np.ones_like(ends)  # no earlier step of the window ended the episode
        in_window[:, 1:] = ~np.logical_or.accumulate(ends, axis=1)[:, :-1]
        rewards = np.where(in_window, self._rewards[rows, step_slots], 0.0)
        reward_sum = rewards @ (self._discount ** offsets.astype(np.float64))
        return reward_sum, np.count_nonzero(in_window, axis=1), np.any(in_window & terminal, axis=1)

    def sample_indices(self, batch_size: int) -> Tuple[np.ndarray, np.ndarray]:
        """`batch_size` valid (streams, slots), uniformly with replacement."""
        batch_size = _check_positive_int('batch_size', batch_size)
        if self._num_valid == 0:
            raise RuntimeError('replay holds no sampleable transition yet; add more steps before sampling')
        filled = np.minimum(self._num_written, self._slots_per_stream)
        ends = np.cumsum(filled)
        starts = ends - filled
        streams = np.empty(batch_size, np.int64)
        slots = np.empty(batch_size, np.int64)
        pending = np.arange(batch_size)
        # Draw among written slots and redraw the invalid ones: each accepted draw is uniform over valid slots.
        for _ in range(_MAX_REJECTION_ROUNDS):
            flat = self._random.integers(ends[-1], size=pending.size)
            drawn_streams = np.searchsorted(ends, flat, side='right')
            drawn_slots = flat - starts[drawn_streams]
            accepted = self._valid[drawn_streams, drawn_slots]
            streams[pending[accepted]] = drawn_streams[accepted]
            slots[pending[accepted]] = drawn_slots[accepted]
            pending = pending[~accepted]
            if pending.size == 0:
                return streams, slots
        # Few valid slots: choose the rest directly among them.
        valid_flat = np.flatnonzero(self._valid)
        chosen = valid_flat[self._random.integers(valid_flat.size, size=pending.size)]
        streams[pending], slots[pending] = np.divmod(chosen, self._slots_per_stream)
        return streams, slots

    def transitions_at(self, streams: np.ndarray, slots: np.ndarray) -> Transition:
        """The n-step transitions whose s_tm1 is at the valid (streams, slots)."""
        streams, slots = np.asarray(streams), np.asarray(slots)
        if streams.ndim != 1 or streams.shape != slots.shape or not (
            np.issubdtype(streams.dtype, np.integer) and np.issubdtype(slots.dtype, np.integer)
        ):
            raise ValueError(
                f'streams and slots must be 1-D integer arrays of one length, got {streams.shape} and {slots.shape}'
            )
        in_range = (
            (streams >= 0) & (streams < self._num_streams) & (slots >= 0) & (slots < self._slots_per_stream)
        )
        if not in_range.all() or not self._valid[streams, slots].all():
            raise ValueError('transitions_at got (stream, slot) pairs that are not sampleable')
        reward_sum, steps, terminal_hit = self._n_step_window(streams, slots)
        discount = np.where(terminal_hit, 0.0, self._discount ** steps.astype(np.float64))
        next_slots = np.where(terminal_hit, slots, (slots + steps) % self._slots_per_stream)
        return Transition(
            s_tm1=self._observations_at(streams, slots),
            a_tm1=self._actions[streams, slots],
            r_t=reward_sum.astype(np.float32),
            discount_t=discount.astype(np.float32),
            s_t=self._observations_at(streams, next_slots),
        )

    def sample(self, batch_size: int) -> Transition:
        """A batch of `batch_size` transitions drawn uniformly, with replacement, from the valid slots."""
        return self.transitions_at(*self.sample_indices(batch_size))

    def _frames_at(self, streams: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Stored frames at (streams, slots), index arrays that broadcast to shape S: [*S, *frame_shape]."""
        if not self._compress:
            return self._frames[streams, slots]
        streams = np.broadcast_to(streams, slots.shape)
        frames = np.empty(slots.shape + self._frame_shape, self._observation_dtype)
        for index in np.ndindex(slots.shape):
            data = snappy.decompress(self._frames[streams[index], slots[index]])
            frames[index] = np.frombuffer(data, self._observation_dtype).reshape(self._frame_shape)
        return frames

    def _observations_at(self, streams: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Observations at (streams, slots), with frame stacks rebuilt: [B, *observation_shape]."""
        if self._frame_stack == 1:
            return self._frames_at(streams, slots)
        k = self._frame_stack
        offsets = self._episode_offset[streams, slots]
        # Position q of the stack shows the frame k-1-q steps back, clamped to the episode's first slot...
        steps_back = np.minimum(np.arange(k - 1, -1, -1)[None, :], offsets[:, None])
        stacks = self._frames_at(streams[:, None], (slots[:, None] - steps_back) % self._slots_per_stream)
        # ...whose full stack supplies the frames from before the episode: stack[q] = first_stack[q + offset].
        for row in np.flatnonzero(offsets < k - 1):
            offset = offsets[row]
            first_slot = (slots[row] - offset) % self._slots_per_stream
            stacks[row, : k - 1 - offset] = self._first_stacks[streams[row]][first_slot][offset : k - 1]
        return stacks


class SumTree:
    """Non-negative values at `capacity` leaves, with their total and prefix-sum search in O(log capacity).

    An array-backed complete binary tree of float64: node 1 is the root, node i has children 2i and 2i + 1,
    and leaf j is node `leaves + j`, where `leaves` is `capacity` rounded up to a power of two (the padding
    leaves hold 0). Every inner node holds the sum of its children, recomputed from them on each change, so
    sums never drift. Operations are vectorised over a batch of leaves, one numpy step per tree level.
    """

    def __init__(self, capacity: int):
        self._capacity = _check_positive_int('capacity', capacity)
        self._leaves = 1 << (self._capacity - 1).bit_length()
        self._depth = self._leaves.bit_length() - 1
        self._nodes = np.zeros(2 * self._leaves, np.float64)
        self._levels_up = np.arange(self._depth + 1)[:, None]  # Shifts from a leaf to each of its ancestors.

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def total(self) -> float:
        """The sum of all leaves."""
        return float(self._nodes[1])

    def _check_indices(self, indices: Any) -> np.ndarray:
        indices = np.asarray(indices)
        if indices.ndim != 1 or not (np.issubdtype(indices.dtype, np.integer) or indices.size == 0):
            raise ValueError(f'indices must be a 1-D integer array, got shape {indices.shape} and dtype {indices.dtype}')
        indices = indices.astype(np.int64, copy=False)
        if indices.size and (indices.min() < 0 or indices.max() >= self._capacity):
            raise ValueError(f'indices must be in [0, {self._capacity}), got {indices.min()} to {indices.max()}')
        return indices

    def values(self, indices: Any) -> np.ndarray:
        """The leaf values at `indices`, float64."""
        return self._nodes[self._leaves + self._check_indices(indices)]

    def set(self, indices: Any, values: Any) -> None:
        """Sets leaves `indices` to `values` (>= 0 and finite); of repeated indices, the last value wins."""
        indices = self._check_indices(indices)
        values = np.asarray(values, np.float64)
        if values.shape != indices.shape:
            raise ValueError(f'values must have the shape of indices {indices.shape}, got {values.shape}')
        if not np.all(np.isfinite(values) & (values >= 0)):
            raise ValueError('SumTree values must be finite and >= 0')
        self._write(indices, values)

    def _write(self, indices: np.ndarray, values: np.ndarray) -> None:
        """`set` without its checks: `indices` int64 in range, `values` float64, finite and >= 0, of one shape."""
        if indices.size == 1:  # one leaf (a replay's add, most of the time): its ancestors one by one, in Python
            nodes, node = self._nodes, self._leaves + int(indices[0])
            nodes[node] = values[0]
            while node > 1:
                node >>= 1
                nodes[node] = nodes[2 * node] + nodes[2 * node + 1]
            return
        if indices.size > 1:
            last = indices.size - 1 - np.unique(indices[::-1], return_index=True)[1]  # Last occurrence of each.
            indices, values = indices[last], values[last]
        # paths[k] are the ancestors k levels above the leaves. Paths that merge write equal sums (x + y == y + x).
        paths = (self._leaves + indices) >> self._levels_up
        siblings = paths ^ 1
        self._nodes[paths[0]] = values
        for level in range(1, self._depth + 1):
            self._nodes[paths[level]] = self._nodes[paths[level - 1]] + self._nodes[siblings[level - 1]]

    def find(self, targets: Any) -> np.ndarray:
        """For each target in [0, total), the leaf j with sum(leaves before j) <= target < sum(leaves up to j).

        Descends from the root: left while the target is below the left child's sum, else right with the
        left sum taken off. The leaf found always holds a positive value: a target that rounding carries to
        or past the sum of a subtree (so that it would end on a zero leaf) is searched again never entering
        a zero right child, which ends it at the last positive leaf of that prefix.
        """
        targets = np.array(targets, np.float64)  # A copy: the descent updates it in place.
        if targets.ndim != 1:
            raise ValueError(f'targets must be a 1-D array, got shape {targets.shape}')
        if self.total <= 0:
            raise ValueError('SumTree.find needs a positive total; every leaf is 0')
        if not np.all(np.isfinite(targets) & (targets >= 0)):
            raise ValueError('SumTree.find targets must be finite and >= 0')
        nodes = self._descend(targets.copy(), avoid_zero=False)
        empty = self._nodes[nodes] == 0
        if empty.any():
            nodes[empty] = self._descend(targets[empty], avoid_zero=True)
        return nodes - self._leaves

    def _descend(self, targets: np.ndarray, avoid_zero: bool) -> np.ndarray:
        """The leaf nodes (not indices) the targets lead to; `targets` is overwritten."""
        nodes = np.ones(targets.size, np.int64)
        for _ in range(self._depth):
            nodes <<= 1
            left_sum = self._nodes[nodes]
            go_right = targets >= left_sum
            if avoid_zero:
                go_right &= self._nodes[nodes + 1] > 0
            np.subtract(targets, left_sum, out=targets, where=go_right)
            nodes += go_right
        return nodes


def _check_priority_settings(priority_exponent: Any, priority_eps: Any) -> None:
    if not isinstance(priority_exponent, (int, float, np.floating)) or not 0.0 <= priority_exponent < np.inf:
        raise ValueError(f'priority_exponent must be a finite number >= 0, got {priority_exponent!r}')
    if not isinstance(priority_eps, (int, float, np.floating)) or not 0.0 < priority_eps < np.inf:
        raise ValueError(f'priority_eps must be a finite number > 0 (so no transition is starved), got {priority_eps!r}')


class PrioritizedSample(NamedTuple):
    """A prioritized minibatch: the transitions, where they are stored, and their importance-sampling weights."""

    transitions: Transition
    keys: Tuple[np.ndarray, np.ndarray]  # (streams, slots) of the sampled slots, for `update_priorities`.
    weights: np.ndarray  # [B] float32, (N * P(i)) ** -beta divided by their max over the batch.


class PrioritizedReplay(UniformReplay):
    """Proportional prioritized replay (Schaul et al. 2016, "Prioritized Experience Replay", Algorithm 1).

    Slot i is drawn with probability P(i) = p_i^alpha / sum_k p_k^alpha, where p_i = |td error| + eps is the
    priority last given by `update_priorities`; a new transition gets the largest priority given so far (1 at
    first), so it is soon replayed. A sum tree over all slots (leaf = stream * slots_per_stream +
    slot) holds p^alpha for valid slots and 0 for the others, which are thus never drawn. A batch of B is
    stratified: the total is cut into B equal segments and one value drawn uniformly in each. The importance-
    sampling weights w_i = (N * P(i))^-beta, N the number of valid slots, are divided by the batch's largest.
    `sample(batch_size)` draws by priority too and drops the weights.
    """

    def __init__(self, *, priority_exponent: float, priority_eps: float, **uniform_replay_args: Any):
        """`priority_exponent` is alpha (0 samples uniformly); `priority_eps` > 0 is added to every |td error|.
        The other arguments are `UniformReplay`'s."""
        _check_priority_settings(priority_exponent, priority_eps)
        super().__init__(**uniform_replay_args)
        self._priority_exponent = float(priority_exponent)
        self._priority_eps = float(priority_eps)
        self._max_priority = 1.0
        self._tree = SumTree(self.capacity)

    @property
    def max_priority(self) -> float:
        """The priority a new transition gets: the largest |td error| + eps given so far, at least 1."""
        return self._max_priority

    def _set_validity(self, streams: np.ndarray, slots: np.ndarray, valid: np.ndarray) -> None:
        super()._set_validity(streams, slots, valid)
        new_value = self._max_priority**self._priority_exponent
        self._tree._write((streams * self._slots_per_stream + slots).astype(np.int64, copy=False), np.where(valid, new_value, 0.0))

    def sample_indices(self, batch_size: int) -> Tuple[np.ndarray, np.ndarray]:
        """`batch_size` valid (streams, slots) drawn in proportion to priority ** alpha, one per stratum."""
        batch_size = _check_positive_int('batch_size', batch_size)
        if self._num_valid == 0:
            raise RuntimeError('replay holds no sampleable transition yet; add more steps before sampling')
        segment = self._tree.total / batch_size
        targets = (np.arange(batch_size) + self._random.random(batch_size)) * segment
        return np.divmod(self._tree.find(targets), self._slots_per_stream)

    def sample_prioritized(self, batch_size: int, importance_sampling_exponent: float) -> PrioritizedSample:
        """A batch drawn by priority, with importance-sampling weights of exponent beta in [0, 1]."""
        beta = importance_sampling_exponent
        if not isinstance(beta, (int, float, np.floating)) or not 0.0 <= beta <= 1.0:
            raise ValueError(f'importance_sampling_exponent must be a number in [0, 1], got {beta!r}')
        streams, slots = self.sample_indices(batch_size)
        probabilities = self._tree.values(streams * self._slots_per_stream + slots) / self._tree.total
        weights = (self._num_valid * probabilities) ** -beta
        return PrioritizedSample(
            transitions=self.transitions_at(streams, slots),
            keys=(streams, slots),
            weights=(weights / weights.max()).astype(np.float32),
        )

    def update_priorities(self, keys: Tuple[np.ndarray, np.ndarray], priorities: np.ndarray) -> None:
        """Sets the priorities of sampled slots to |td error| + eps; slots no longer valid are skipped.

        Args:
          keys: `PrioritizedSample.keys` of the batch. Call before the next `add()`, which may overwrite them.
          priorities: [B] |td error| >= 0 of the batch; of a slot drawn twice, the last one counts.
        """
        streams, slots = (np.asarray(key) for key in keys)
        priorities = np.asarray(priorities, np.float64)
        if priorities.shape != streams.shape or streams.shape != slots.shape or streams.ndim != 1:
            raise ValueError(
                f'priorities and both keys must be 1-D of one length, got {priorities.shape}, {streams.shape} '
                f'and {slots.shape}'
            )
        if not np.all(np.isfinite(priorities) & (priorities >= 0)):
            raise ValueError('priorities must be finite and >= 0 (pass |td error|)')
        valid = self._valid[streams, slots]
        priorities = priorities[valid] + self._priority_eps
        if priorities.size:
            self._max_priority = max(self._max_priority, float(priorities.max()))
            leaves = streams[valid] * self._slots_per_stream + slots[valid]
            self._tree.set(leaves, priorities**self._priority_exponent)


class Sequences(NamedTuple):
    """A batch of B sequences of T consecutive steps, each within one episode; leading dimensions [B, T]."""

    observation: np.ndarray  # [B, T + 1, *observation_shape]: action[:, t] was taken at observation[:, t]; the
    # observation after a sequence's last real step (n - 1) is at n, where bootstrapping reads it; zeros after n
    action: np.ndarray  # [B, T, *action_shape]; 0 on padding
    reward: np.ndarray  # [B, T] float32; 0 on padding
    discount: np.ndarray  # [B, T] float32, gamma * (1 - terminal); 0 on padding
    first: np.ndarray  # [B, T] bool: the step is the first of its episode
    mask: np.ndarray  # [B, T] bool: the step is real (False on the padding after an episode's end)
    initial_state: np.ndarray  # [B, state_size] float32: the actor's recurrent state before the first step


class SequenceReplay:
    """Fixed-length sequences of consecutive steps, sampled uniformly with replacement: the "bootstrapped random
    updates" of DRQN (Hausknecht & Stone 2015, section 4), with R2D2's overlapping sequences (Kapturowski et al. 2019).

    Each environment stream collects its steps. Once `sequence_length` steps are pending they are stored as one
    sequence, and the last `overlap` of them begin the next one: consecutive sequences of an episode share
    `overlap` steps and start `sequence_length - overlap` steps apart. Sequences never cross episodes: when an
    episode ends, its pending steps are stored padded to `sequence_length` (mask False) if at least one of them
    is new, and dropped otherwise (they are then all in the previous sequence: storing them again would repeat
    the overlap, a bug of the original zoo). Sequences are kept in a circular buffer of `capacity`.

    With `state_size` > 0 each step also carries the actor's recurrent state before it, and each sequence keeps
    the one before its first step: R2D2's "stored state" (Kapturowski et al. 2019, section 3), from which the
    learner unrolls instead of from zeros. With `extras_size` > 0 each step carries that many more float32 numbers
    (NGU's intrinsic reward, policy index, ...), stored with its sequence (zeros on padding), read with `extras_at`.
    """

    def __init__(
        self,
        capacity: int,
        sequence_length: int,
        overlap: int,
        observation_shape: Tuple[int, ...],
        observation_dtype: Any,
        action_shape: Tuple[int, ...] = (),
        action_dtype: Any = np.int64,
        discount: float = 0.99,
        num_streams: int = 1,
        compress: bool = False,
        seed: int = 0,
        state_size: int = 0,
        extras_size: int = 0,
    ):
        """Allocates storage for `capacity` sequences of `sequence_length` steps.

        Args:
          capacity: number of sequences kept.
          sequence_length: T, steps per sequence.
          overlap: steps shared by consecutive sequences of an episode, in [0, T).
          observation_shape, observation_dtype: one observation's shape and numpy dtype.
          action_shape, action_dtype: one action's shape (() for discrete actions) and dtype.
          discount: gamma, in [0, 1].
          num_streams: environments adding steps side by side.
          compress: store each sequence's observations compressed with snappy.
          seed: seed of the sampling random generator.
          state_size: size of the recurrent state stored with each sequence (0: none, `initial_state` is [B, 0]).
          extras_size: float32 numbers stored with each step (0: none).
        """
        self._capacity = _check_positive_int('capacity', capacity)
        self._length = _check_positive_int('sequence_length', sequence_length)
        self._state_size = _check_positive_int('state_size', state_size, minimum=0)
        self._extras_size = _check_positive_int('extras_size', extras_size, minimum=0)
        self._overlap = _check_positive_int('overlap', overlap, minimum=0)
        if self._overlap >= self._length:
            raise ValueError(f'overlap must be smaller than sequence_length ({self._length}), got {overlap}')
        self._num_streams = _check_positive_int('num_streams', num_streams)
        if not isinstance(discount, (int, float, np.floating)) or not 0.0 <= discount <= 1.0:
            raise ValueError(f'discount must be a number in [0, 1], got {discount!r}')
        self._discount = float(discount)
        self._observation_shape = tuple(int(size) for size in observation_shape)
        self._action_shape = tuple(int(size) for size in action_shape)
        self._observation_dtype = np.dtype(observation_dtype)
        self._action_dtype = np.dtype(action_dtype)
        self._compress = bool(compress)
        self._random = np.random.default_rng(seed)

        def zeros(leading: Tuple[int, ...], shape: Tuple[int, ...] = (), dtype: Any = np.float32) -> np.ndarray:
            return np.zeros(leading + shape, dtype)

        # Stored sequences.
        stored = (self._capacity, self._length)
        if self._compress:
            self._observations = np.empty(self._capacity, dtype=object)
        else:
            self._observations = zeros((self._capacity, self._length + 1), self._observation_shape, self._observation_dtype)
        self._actions = zeros(stored, self._action_shape, self._action_dtype)
        self._rewards = zeros(stored)
        self._terminal = zeros(stored, dtype=bool)
        self._first = zeros(stored, dtype=bool)
        self._mask = zeros(stored, dtype=bool)
        self._initial_state = zeros((self._capacity,), (self._state_size,))
        self._extras = zeros(stored, (self._extras_size,))
        self._new_steps = np.zeros(self._capacity, np.int64)  # steps each sequence added beyond its overlap
        self._num_stored = 0
        self._num_added = 0  # sequences ever stored; the next one goes to slot _num_added % capacity
        self._num_steps = 0
        # Each stream's pending steps: the overlap carried from its previous sequence, then new ones.
        pending = (self._num_streams, self._length)
        self._pending_observations = zeros(pending, self._observation_shape, self._observation_dtype)
        self._pending_actions = zeros(pending, self._action_shape, self._action_dtype)
        self._pending_rewards = zeros(pending)
        self._pending_terminal = zeros(pending, dtype=bool)
        self._pending_first = zeros(pending, dtype=bool)
        self._pending_state = zeros(pending, (self._state_size,))
        self._pending_extras = zeros(pending, (self._extras_size,))
        self._pending_count = np.zeros(self._num_streams, np.int64)
        self._carried = np.zeros(self._num_streams, np.int64)
        self._starts_episode = np.ones(self._num_streams, bool)

    @property
    def capacity(self) -> int:
        """Number of sequences kept."""
        return self._capacity

    @property
    def num_sequences(self) -> int:
        """Sequences stored now."""
        return self._num_stored

    @property
    def size(self) -> int:
        """Distinct steps in the stored sequences (each counts the steps it added beyond its overlap)."""
        return self._num_steps

    def __len__(self) -> int:
        return self._num_steps

    def add(
        self,
        observation: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminal: np.ndarray,
        episode_end: np.ndarray,
        final_observation: np.ndarray,
        recurrent_state: np.ndarray | None = None,
        streams: np.ndarray | None = None,
        extras: np.ndarray | None = None,
    ) -> None:
        """Appends one step to every stream, or to `streams` only (the arguments of `UniformReplay.add`, the
        recurrent state and the extras).

        Args:
          observation: [num_streams, *observation_shape], the observations the actions were taken from.
          action: [num_streams, *action_shape].
          reward: [num_streams], the rewards received after the actions.
          terminal: [num_streams] bool, no bootstrapping past this step (game over, or a lost life counted as one).
          episode_end: [num_streams] bool, the episode ended (terminated or truncated): the stream's pending steps
            are stored and the next step starts a new sequence.
          final_observation: [num_streams, *observation_shape], the observation that followed each action within
            its episode (`VectorStep.final_observation`): where a sequence ends, bootstrapping reads it.
          recurrent_state: [num_streams, state_size] float32, the actor's state before this step; required when
            state_size > 0, ignored otherwise.
          streams: distinct stream indices the rows belong to (default: all streams, in order); the leading
            dimension of every other argument is then len(streams). Several actors' environments feed one replay
            this way, each adding its steps when they arrive.
          extras: [num_streams, extras_size] float32; required when extras_size > 0, ignored otherwise.
        """
        if streams is None:
            streams = np.arange(self._num_streams)
        else:
            streams = np.asarray(streams)
            if (
                streams.ndim != 1 or not np.issubdtype(streams.dtype, np.integer) or streams.size == 0
                or streams.min() < 0 or streams.max() >= self._num_streams or np.unique(streams).size != streams.size
            ):
                raise ValueError(f'streams must be distinct integers in [0, {self._num_streams}), got {streams.tolist()}')
        batch = (streams.size,)
        observation = _as_batch('observation', observation, batch + self._observation_shape, self._observation_dtype)
        action = _as_batch('action', action, batch + self._action_shape, self._action_dtype)
        reward = _as_batch('reward', reward, batch, np.float32)
        terminal = _as_batch('terminal', terminal, batch, np.bool_)
        episode_end = _as_batch('episode_end', episode_end, batch, np.bool_)
        if final_observation is None:
            raise ValueError('final_observation is required: a sequence bootstraps from the observation after its last step')
        final_observation = _as_batch(
            'final_observation', final_observation, batch + self._observation_shape, self._observation_dtype
        )
        if self._state_size:
            if recurrent_state is None:
                raise ValueError(f'recurrent_state is required: this replay stores states of size {self._state_size}')
            self._pending_state[streams, self._pending_count[streams]] = _as_batch(
                'recurrent_state', recurrent_state, batch + (self._state_size,), np.float32
            )
        if self._extras_size:
            if extras is None:
                raise ValueError(f'extras is required: this replay stores {self._extras_size} extras per step')
            self._pending_extras[streams, self._pending_count[streams]] = _as_batch('extras', extras, batch + (self._extras_size,), np.float32)
        for row, stream in enumerate(streams):
            index = self._pending_count[stream]
            self._pending_observations[stream, index] = observation[row]
            self._pending_actions[stream, index] = action[row]
            self._pending_rewards[stream, index] = reward[row]
            self._pending_terminal[stream, index] = terminal[row]
            self._pending_first[stream, index] = self._starts_episode[stream]
            self._pending_count[stream] += 1
            self._starts_episode[stream] = episode_end[row]
            full = self._pending_count[stream] == self._length
            if (full or episode_end[row]) and self._pending_count[stream] > self._carried[stream]:
                self._store(stream, final_observation[row])
            if episode_end[row]:
                self._pending_count[stream] = self._carried[stream] = 0
            elif full:
                self._carry_overlap(stream)

    def _store(self, stream: int, next_observation: np.ndarray) -> None:
        """Stores the stream's pending steps as one sequence, padded after them; overwrites the oldest one."""
        count = self._pending_count[stream]
        slot = self._num_added % self._capacity
        observations = np.zeros((self._length + 1,) + self._observation_shape, self._observation_dtype)
        observations[:count] = self._pending_observations[stream, :count]
        observations[count] = next_observation
        if self._compress:
            self._observations[slot] = snappy.compress(observations.tobytes())
        else:
            self._observations[slot] = observations
        for stored, pending in (
            (self._actions, self._pending_actions),
            (self._rewards, self._pending_rewards),
            (self._terminal, self._pending_terminal),
            (self._first, self._pending_first),
            (self._extras, self._pending_extras),
        ):
            stored[slot] = 0
            stored[slot, :count] = pending[stream, :count]
        self._mask[slot] = np.arange(self._length) < count
        self._initial_state[slot] = self._pending_state[stream, 0]
        self._num_steps += count - self._carried[stream] - self._new_steps[slot]
        self._new_steps[slot] = count - self._carried[stream]
        self._num_added += 1
        self._num_stored = min(self._num_stored + 1, self._capacity)

    def _carry_overlap(self, stream: int) -> None:
        """Moves the last `overlap` pending steps of a full sequence to the front: the next sequence starts with them."""
        kept = slice(self._length - self._overlap, self._length)
        for pending in (
            self._pending_observations,
            self._pending_actions,
            self._pending_rewards,
            self._pending_terminal,
            self._pending_first,
            self._pending_state,
            self._pending_extras,
        ):
            pending[stream, : self._overlap] = pending[stream, kept].copy()
        self._pending_count[stream] = self._carried[stream] = self._overlap

    def sequences_at(self, indices: np.ndarray) -> Sequences:
        """The stored sequences at `indices` (slots in [0, num_sequences), the i-th stored in slot i % capacity)."""
        indices = np.asarray(indices)
        if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(f'indices must be a 1-D integer array, got shape {indices.shape} and dtype {indices.dtype}')
        if indices.size and (indices.min() < 0 or indices.max() >= self._num_stored):
            raise ValueError(f'indices must lie in [0, {self._num_stored}), the stored sequences')
        if self._compress:
            shape = (self._length + 1,) + self._observation_shape
            observations = np.empty((indices.size,) + shape, self._observation_dtype)
            for row, index in enumerate(indices):
                data = snappy.decompress(self._observations[index])
                observations[row] = np.frombuffer(data, self._observation_dtype).reshape(shape)
        else:
            observations = self._observations[indices]
        mask = self._mask[indices]
        return Sequences(
            observation=observations,
            action=self._actions[indices],
            reward=self._rewards[indices],
            discount=np.where(mask & ~self._terminal[indices], self._discount, 0.0).astype(np.float32),
            first=self._first[indices],
            mask=mask,
            initial_state=self._initial_state[indices],
        )

    def extras_at(self, indices: np.ndarray) -> np.ndarray:
        """The extras [B, T, extras_size] of the sequences at `indices` (as `sequences_at`)."""
        return self._extras[np.asarray(indices)]

    def sample(self, batch_size: int) -> Sequences:
        """`batch_size` stored sequences drawn uniformly, with replacement."""
        batch_size = _check_positive_int('batch_size', batch_size)
        if self._num_stored == 0:
            raise RuntimeError('replay holds no sequence yet; add more steps before sampling')
        return self.sequences_at(self._random.integers(self._num_stored, size=batch_size))

    def bytes_per_sequence(self) -> float:
        """Memory one stored sequence takes: its share of the per-sequence arrays, and its observations (raw, or the
        mean size of the stored snappy-compressed ones). Multiply by `capacity` for the memory of a full replay."""
        arrays = (self._actions, self._rewards, self._terminal, self._first, self._mask, self._initial_state, self._extras, self._new_steps)
        fixed = sum(array.nbytes for array in arrays) / self._capacity
        if not self._compress:
            return fixed + self._observations.nbytes / self._capacity
        if self._num_stored == 0:
            return fixed
        return fixed + sum(len(data) for data in self._observations[: self._num_stored]) / self._num_stored


class PrioritizedSequenceSample(NamedTuple):
    """A prioritized batch of sequences, where they are stored, and their importance-sampling weights."""

    sequences: Sequences
    keys: Tuple[np.ndarray, np.ndarray]  # (slots, the count of sequences stored when each was written)
    weights: np.ndarray  # [B] float32, (N * P(i)) ** -beta divided by their max over the batch


class PrioritizedSequenceReplay(SequenceReplay):
    """`SequenceReplay` sampled in proportion to priority ** alpha (Schaul et al. 2016), with sequence priorities
    (R2D2, Kapturowski et al. 2019: `transformed_returns.sequence_priorities`).

    A sum tree over the `capacity` slots holds p^alpha of each stored sequence (p = priority + eps); a new sequence
    gets the largest priority given so far (1 at first). A batch of B is stratified (one draw in each of B equal
    segments of the total); the importance-sampling weights w_i = (N * P(i))^-beta, N the sequences stored, are
    divided by the batch's largest. A priority update skips slots overwritten since they were sampled.
    """

    def __init__(self, *, priority_exponent: float, priority_eps: float, **sequence_replay_args: Any):
        """`priority_exponent` is alpha (0 samples uniformly); `priority_eps` > 0 is added to every priority. The other
        arguments are `SequenceReplay`'s."""
        _check_priority_settings(priority_exponent, priority_eps)
        super().__init__(**sequence_replay_args)
        self._priority_exponent = float(priority_exponent)
        self._priority_eps = float(priority_eps)
        self._max_priority = 1.0
        self._tree = SumTree(self.capacity)
        self._written_as = np.full(self.capacity, -1, np.int64)  # which stored sequence (0, 1, ...) each slot holds

    @property
    def max_priority(self) -> float:
        """The priority a new sequence gets: the largest priority + eps given so far, at least 1."""
        return self._max_priority

    def _store(self, stream: int, next_observation: np.ndarray) -> None:
        slot = self._num_added % self._capacity
        self._written_as[slot] = self._num_added
        super()._store(stream, next_observation)
        self._tree.set(np.array([slot]), np.array([self._max_priority**self._priority_exponent]))

    def sample_prioritized(self, batch_size: int, importance_sampling_exponent: float) -> PrioritizedSequenceSample:
        """A batch of sequences drawn by priority, with importance-sampling weights of exponent beta in [0, 1]."""
        batch_size = _check_positive_int('batch_size', batch_size)
        beta = importance_sampling_exponent
        if not isinstance(beta, (int, float, np.floating)) or not 0.0 <= beta <= 1.0:
            raise ValueError(f'importance_sampling_exponent must be a number in [0, 1], got {beta!r}')
        if self._num_stored == 0:
            raise RuntimeError('replay holds no sequence yet; add more steps before sampling')
        total = self._tree.total
        targets = (np.arange(batch_size) + self._random.random(batch_size)) * (total / batch_size)
        slots = self._tree.find(targets)
        weights = (self._num_stored * self._tree.values(slots) / total) ** -beta
        return PrioritizedSequenceSample(
            sequences=self.sequences_at(slots),
            keys=(slots, self._written_as[slots].copy()),
            weights=(weights / weights.max()).astype(np.float32),
        )

    def update_priorities(self, keys: Tuple[np.ndarray, np.ndarray], priorities: np.ndarray) -> None:
        """Sets the sampled sequences' priorities to `priorities` [B] (>= 0) + eps; of a slot drawn twice the last
        one counts; slots written again since `keys` were sampled keep their new sequence's priority."""
        slots, written_as = (np.asarray(key) for key in keys)
        priorities = np.asarray(priorities, np.float64)
        if priorities.shape != slots.shape or slots.shape != written_as.shape or slots.ndim != 1:
            raise ValueError(f'priorities and both keys must be 1-D of one length, got {priorities.shape}, {slots.shape} and {written_as.shape}')
        if not np.all(np.isfinite(priorities) & (priorities >= 0)):
            raise ValueError('priorities must be finite and >= 0')
        current = self._written_as[slots] == written_as
        priorities = priorities[current] + self._priority_eps
        if priorities.size:
            self._max_priority = max(self._max_priority, float(priorities.max()))
            self._tree.set(slots[current], priorities**self._priority_exponent)


# --- Saving a replay with a checkpoint (--save_replay) ---------------------------------------------------------------


def replay_state(replay: Any) -> dict:
    """Everything a replay (uniform, prioritized or sequence) holds, as plain values and snappy-compressed uint8
    tensors that a checkpoint stores and loads without unpickling code; `load_replay_state` puts it back, so a
    resumed agent samples exactly what it would have sampled without the stop."""
    return {'class': type(replay).__name__, 'attributes': _encode(vars(replay))}


def load_replay_state(replay: Any, state: dict) -> None:
    """Restores `replay_state(...)` into `replay`, which must be of the same class and sizes (same flags)."""
    if state.get('class') != type(replay).__name__:
        raise ValueError(f'the saved replay is a {state.get("class")}, this run uses a {type(replay).__name__}')
    attributes = _decode(state['attributes'])
    _check_same_layout(vars(replay), attributes, type(replay).__name__)
    _restore_attributes(replay, attributes)
    _cut_open_episodes(replay)


def _cut_open_episodes(replay: Any) -> None:
    """The resumed run restarts its environments, so no stored episode continues: each stream's open episode ends
    at its last stored step. A timeline replay turns that step into a truncation, bootstrapping from the last stored
    observation (which becomes a final-observation slot, never sampled itself); a sequence replay drops the steps
    not yet stored as a sequence."""
    if isinstance(replay, SequenceReplay):
        replay._pending_count[:] = 0
        replay._carried[:] = 0
        replay._starts_episode[:] = True
        return
    slots_per_stream = replay._slots_per_stream
    for stream in range(replay._num_streams):
        written = int(replay._num_written[stream])
        last = (written - 1) % slots_per_stream
        if written == 0 or replay._starts_episode[stream] or replay._episode_end[stream, last]:
            continue  # empty, or the episode already ended at the last step
        previous = (written - 2) % slots_per_stream
        if written >= 2 and not replay._episode_end[stream, previous]:
            replay._episode_end[stream, previous] = True  # the step before: truncated, s_t = the last observation
        replay._has_action[stream, last] = False
        replay._episode_end[stream, last] = True
        replay._rewards[stream, last] = 0.0
        replay._terminal[stream, last] = False
    replay._starts_episode[:] = True
    replay._refresh_validity()


def _restore_attributes(target: Any, attributes: dict) -> None:
    for name, value in attributes.items():
        current = getattr(target, name)
        if isinstance(current, (SumTree,)):
            _restore_attributes(current, value)
        else:
            setattr(target, name, value)


def _check_same_layout(current: dict, saved: dict, where: str) -> None:
    """Refuses a saved replay whose arrays differ in shape or dtype (another capacity, observation, ...); an empty
    array the saved replay lacks (a sequence replay's extras, saved before they existed) keeps its value."""
    for name, value in current.items():
        other = saved.get(name)
        if other is None and isinstance(value, np.ndarray) and value.size == 0:
            continue
        if isinstance(value, SumTree):
            _check_same_layout(vars(value), other if isinstance(other, dict) else {}, f'{where}.{name}')
        elif isinstance(value, np.ndarray) and (
            not isinstance(other, np.ndarray) or other.shape != value.shape or other.dtype != value.dtype
        ):
            found = f'{other.shape} {other.dtype}' if isinstance(other, np.ndarray) else 'nothing'
            raise ValueError(
                f'the saved replay does not fit this run ({where}.{name}: saved {found}, here {value.shape} {value.dtype}): '
                'resume with the replay flags it was saved with (--replay_capacity, --num_envs, ...) or without --save_replay'
            )


def _compressed(data: bytes) -> 'torch.Tensor':
    import torch

    return torch.frombuffer(bytearray(snappy.compress(data)), dtype=torch.uint8)


def _encode(value: Any) -> Any:
    """A tagged tree of plain values and tensors (the types `checkpoint.save_checkpoint` accepts)."""
    import json

    import torch

    if isinstance(value, np.ndarray) and value.dtype != object:
        return {'kind': 'array', 'dtype': value.dtype.str, 'shape': list(value.shape), 'data': _compressed(np.ascontiguousarray(value).tobytes())}
    if isinstance(value, np.ndarray):  # compressed frames: bytes per slot, None where nothing was written
        items = list(value.reshape(-1))
        lengths = [-1 if item is None else len(item) for item in items]
        return {
            'kind': 'blobs',
            'shape': list(value.shape),
            'lengths': torch.tensor(lengths, dtype=torch.int64),
            'data': _compressed(b''.join(item for item in items if item is not None)),
        }
    if isinstance(value, np.dtype):
        return {'kind': 'dtype', 'value': value.str}
    if isinstance(value, np.random.Generator):
        return {'kind': 'generator', 'state': json.dumps(value.bit_generator.state)}
    if isinstance(value, SumTree):
        return {'kind': 'object', 'attributes': _encode(vars(value))}
    if isinstance(value, dict):
        return {'kind': 'dict', 'items': [[_plain(key), _encode(item)] for key, item in value.items()]}
    if isinstance(value, (list, tuple)):
        return {'kind': 'list' if isinstance(value, list) else 'tuple', 'items': [_encode(item) for item in value]}
    return {'kind': 'value', 'value': _plain(value)}


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f'cannot save a replay attribute of type {type(value).__name__}')


def _decode(node: dict) -> Any:
    import json

    kind = node['kind']
    if kind == 'array':
        data = snappy.decompress(node['data'].numpy().tobytes())
        return np.frombuffer(data, dtype=np.dtype(node['dtype'])).reshape(node['shape']).copy()
    if kind == 'blobs':
        data = snappy.decompress(node['data'].numpy().tobytes())
        items, offset = np.empty(len(node['lengths']), dtype=object), 0
        for index, length in enumerate(node['lengths'].tolist()):
            if length >= 0:
                items[index] = data[offset : offset + length]
                offset += length
        return items.reshape(node['shape'])
    if kind == 'dtype':
        return np.dtype(node['value'])
    if kind == 'generator':
        state = json.loads(node['state'])
        generator = np.random.Generator(getattr(np.random, state['bit_generator'])())
        generator.bit_generator.state = state
        return generator
    if kind == 'object':
        return _decode(node['attributes'])
    if kind == 'dict':
        return {key: _decode(item) for key, item in node['items']}
    if kind in ('list', 'tuple'):
        items = [_decode(item) for item in node['items']]
        return items if kind == 'list' else tuple(items)
    return node['value']
