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
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f'{name} must have shape {shape} (num_streams first), got {array.shape}')
    if not np.can_cast(array.dtype, dtype, casting='same_kind'):
        raise ValueError(f'{name} must have a dtype convertible to {dtype}, got {array.dtype}')
    return array.astype(dtype, copy=False)


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
        streams = np.arange(self._num_streams)
        batch = (self._num_streams,)
        observation = _as_batch('observation', observation, batch + self._observation_shape, self._observation_dtype)
        action = _as_batch('action', action, batch + self._action_shape, self._action_dtype)
        reward = _as_batch('reward', reward, batch, np.float32)
        terminal = _as_batch('terminal', terminal, batch, np.bool_)
        episode_end = _as_batch('episode_end', episode_end, batch, np.bool_)
        truncated = episode_end & ~terminal
        if truncated.any():
            if final_observation is None:
                raise ValueError('final_observation is required when a stream truncates (episode_end & ~terminal)')
            final_observation = _as_batch(
                'final_observation', final_observation, batch + self._observation_shape, self._observation_dtype
            )
        if self._frame_stack > 1:
            self._check_frames_shift(observation, final_observation, truncated)
        self._write_slots(streams, observation, action, reward, terminal, episode_end, has_action=True)
        if truncated.any():
            truncated_streams = np.flatnonzero(truncated)
            count = truncated_streams.size
            self._write_slots(
                truncated_streams,
                final_observation[truncated_streams],
                np.zeros((count,) + self._action_shape, self._action_dtype),
                np.zeros(count, np.float32),
                np.zeros(count, bool),
                np.ones(count, bool),
                has_action=False,
            )
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

    def _write_slots(
        self,
        streams: np.ndarray,
        observation: np.ndarray,
        action: np.ndarray,
        reward: np.ndarray,
        terminal: np.ndarray,
        episode_end: np.ndarray,
        has_action: bool,
    ) -> None:
        """Writes one slot at the head of each of `streams` (rows of the other arrays follow `streams`)."""
        slots = self._num_written[streams] % self._slots_per_stream
        overwritten = self._valid[streams, slots]
        if overwritten.any():
            self._set_validity(streams[overwritten], slots[overwritten], np.zeros(overwritten.sum(), bool))
        if self._frame_stack > 1:
            starts = self._starts_episode[streams]
            self._last_stack[streams] = observation
            offsets = np.where(starts, 0, np.minimum(self._last_offset[streams] + 1, self._frame_stack - 1))
            self._episode_offset[streams, slots] = offsets
            self._last_offset[streams] = offsets
            for stream, slot, start, stack in zip(streams, slots, starts, observation):
                self._first_stacks[stream].pop(slot, None)
                if start:
                    self._first_stacks[stream][slot] = stack.copy()
            frames = observation[:, -1]
        else:
            frames = observation
        if self._compress:
            for stream, slot, frame in zip(streams, slots, frames):
                self._frames[stream, slot] = snappy.compress(np.ascontiguousarray(frame).tobytes())
        else:
            self._frames[streams, slots] = frames
        self._actions[streams, slots] = action
        self._rewards[streams, slots] = reward
        self._terminal[streams, slots] = terminal
        self._episode_end[streams, slots] = episode_end
        self._has_action[streams, slots] = has_action
        self._num_written[streams] += 1
        self._starts_episode[streams] = False

    def _refresh_validity(self) -> None:
        """Recomputes validity of the slots the last add() can have changed, reporting only changes.

        An add() writes at most two slots per stream. They can complete the windows of the n + 2 newest
        slots, and, with frame stacking, overwrite a frame or first stack needed by the frame_stack - 1
        oldest slots.
        """
        written = self._num_written[:, None]
        logical = written - np.arange(1, self._n_step + 3)  # Timeline positions, [num_streams, candidates].
        if self._frame_stack > 1:
            logical = np.concatenate([logical, written - self._slots_per_stream + np.arange(self._frame_stack - 1)], 1)
        # Every position in [written - slots_per_stream, written) is stored; unique, as the two ranges may overlap.
        flat = np.arange(self._num_streams)[:, None] * self._slots_per_stream + logical % self._slots_per_stream
        streams, slots = np.divmod(np.unique(flat[logical >= 0]), self._slots_per_stream)
        valid = self._compute_validity(streams, slots)
        changed = valid != self._valid[streams, slots]
        if changed.any():
            self._set_validity(streams[changed], slots[changed], valid[changed])

    def _set_validity(self, streams: np.ndarray, slots: np.ndarray, valid: np.ndarray) -> None:
        """Records a change of validity of (streams, slots); the hook for subclasses that index slots."""
        self._valid[streams, slots] = valid
        self._num_valid += 2 * int(np.count_nonzero(valid)) - valid.size

    def _compute_validity(self, streams: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Whether written slots can be sampled as s_tm1 (see the class docstring)."""
        valid = self._has_action[streams, slots] & self._n_step_window(streams, slots)[3]
        if self._frame_stack > 1:
            # The stack needs the min(offset, k - 1) slots before this one: the older frames of the stack
            # or, near the episode's start, its first slot (where the first stack is kept).
            written = self._num_written[streams]
            newer = (written - 1 - slots) % self._slots_per_stream
            older = np.minimum(written, self._slots_per_stream) - 1 - newer
            valid &= self._episode_offset[streams, slots] <= older
        return valid

    def _n_step_window(
        self, streams: np.ndarray, slots: np.ndarray
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The n-step windows starting at written slots.

        Returns:
          reward_sum: float64, sum_{k<m} gamma^k r_{slot+k}.
          steps: m, the number of rewards summed.
          terminal_hit: the window ended at a terminal.
          complete: every slot the transition needs is written, so the window is final.
        """
        newer = (self._num_written[streams] - 1 - slots) % self._slots_per_stream  # Slots written after each.
        offsets = np.arange(self._n_step)
        rows, step_slots = streams[:, None], (slots[:, None] + offsets) % self._slots_per_stream  # [B, n]
        written = offsets <= newer[:, None]
        terminal = written & self._terminal[rows, step_slots]
        ends = terminal | (written & self._episode_end[rows, step_slots])
        ended_before = np.zeros_like(ends)
        ended_before[:, 1:] = np.logical_or.accumulate(ends, axis=1)[:, :-1]
        in_window = written & ~ended_before
        rewards = np.where(in_window, self._rewards[rows, step_slots], 0.0)
        reward_sum = rewards @ (self._discount ** offsets.astype(np.float64))
        steps = np.count_nonzero(in_window, axis=1)
        terminal_hit = np.any(in_window & terminal, axis=1)
        missing = np.any(~written & ~ended_before, axis=1)
        complete = ~missing & (terminal_hit | (steps <= newer))
        return reward_sum, steps, terminal_hit, complete

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
        reward_sum, steps, terminal_hit, _ = self._n_step_window(streams, slots)
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
