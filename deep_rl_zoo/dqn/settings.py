"""DQN's settings: the replay-based value agents' (`settings.ValueLearning`) with flickering observations, its run
scripts' defaults (`CLASSIC`, `ATARI`: Nature DQN's) and its tuned presets per task (`PRESETS`, applied to
--environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class DqnSettings(settings.ValueLearning, settings.ObscuredObservations):
    """DQN (Mnih et al. 2015); flickering observations for the side-by-side comparison with DRQN and R2D2."""

    agent_name = 'DQN'


CLASSIC = DqnSettings(**settings.VALUE_CLASSIC)
ATARI = DqnSettings(**settings.VALUE_ATARI)

PRESETS = settings.presets({
    'CartPole-v1': CLASSIC.replace(**settings.VALUE_CARTPOLE),
    'LunarLander-v3': CLASSIC.replace(**settings.VALUE_LUNAR_LANDER),
    'Pong': ATARI.replace(**settings.VALUE_PONG),
})
