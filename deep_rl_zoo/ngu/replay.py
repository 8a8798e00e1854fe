"""R2D2's prioritized sequence replay with a few more numbers per step: what NGU and Agent57 learn from beside the
game's reward (the intrinsic reward, the policy index) and what their Q network sees (the previous action and
rewards). Sequences, overlap, padding, priorities and the extras themselves are `replay.PrioritizedSequenceReplay`'s."""

from typing import Any

from deep_rl_zoo import replay as replay_lib

# The columns of a step's extras.
INTRINSIC_REWARD, PREVIOUS_ACTION, PREVIOUS_REWARD, PREVIOUS_INTRINSIC_REWARD, POLICY = range(5)
NUM_EXTRAS = 5


class ExtrasSequenceReplay(replay_lib.PrioritizedSequenceReplay):
    """`PrioritizedSequenceReplay` whose steps carry `NUM_EXTRAS` extras (the columns above): `add(..., extras=)`,
    `extras_at`."""

    def __init__(self, **prioritized_sequence_replay_args: Any):
        super().__init__(extras_size=NUM_EXTRAS, **prioritized_sequence_replay_args)
