"""R2D2's prioritized sequence replay with a few more numbers per step: what NGU and Agent57 learn from beside the
game's reward (the intrinsic reward, the policy index) and what their Q network sees (the previous action and
rewards). Sequences, overlap, padding and priorities are `replay.PrioritizedSequenceReplay`'s."""

from typing import Any

import numpy as np

from deep_rl_zoo import replay as replay_lib

# The columns of a step's extras.
INTRINSIC_REWARD, PREVIOUS_ACTION, PREVIOUS_REWARD, PREVIOUS_INTRINSIC_REWARD, POLICY = range(5)
NUM_EXTRAS = 5


class ExtrasSequenceReplay(replay_lib.PrioritizedSequenceReplay):
    """`PrioritizedSequenceReplay` whose steps carry `NUM_EXTRAS` float32 extras (columns above), stored with the
    step's sequence (zeros on padding) and read back with `extras_at`."""

    def __init__(self, **prioritized_sequence_replay_args: Any):
        super().__init__(**prioritized_sequence_replay_args)
        self._extras = np.zeros((self._capacity, self._length, NUM_EXTRAS), np.float32)
        self._pending_extras = np.zeros((self._num_streams, self._length, NUM_EXTRAS), np.float32)

    def add(self, *step: Any, extras: np.ndarray, recurrent_state: np.ndarray, streams: np.ndarray | None = None) -> None:
        """`SequenceReplay.add`'s arguments and `extras` [len(streams), NUM_EXTRAS]."""
        rows = np.arange(self._num_streams) if streams is None else np.asarray(streams)
        extras = np.asarray(extras, np.float32)
        if extras.shape != (rows.size, NUM_EXTRAS):
            raise ValueError(f'extras must have shape ({rows.size}, {NUM_EXTRAS}), got {extras.shape}')
        if rows.size and 0 <= rows.min() and rows.max() < self._num_streams:  # else the base class refuses the streams
            self._pending_extras[rows, self._pending_count[rows]] = extras
        super().add(*step, recurrent_state=recurrent_state, streams=streams)

    def _store(self, stream: int, next_observation: np.ndarray) -> None:
        slot, count = self._num_added % self._capacity, self._pending_count[stream]
        self._extras[slot] = 0.0
        self._extras[slot, :count] = self._pending_extras[stream, :count]
        super()._store(stream, next_observation)

    def _carry_overlap(self, stream: int) -> None:
        self._pending_extras[stream, : self._overlap] = self._pending_extras[stream, self._length - self._overlap :].copy()
        super()._carry_overlap(stream)

    def extras_at(self, indices: np.ndarray) -> np.ndarray:
        """The extras [B, T, NUM_EXTRAS] of the sequences at `indices` (as `sequences_at`)."""
        return self._extras[np.asarray(indices)]

    def bytes_per_sequence(self) -> float:
        return super().bytes_per_sequence() + self._extras.nbytes / self._capacity
