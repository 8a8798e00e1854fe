"""Agent57's settings: NGU's with the per-environment meta-controllers' sliding-window UCB (`Agent57Settings`), its
run scripts' defaults (`CLASSIC`, `ATARI`: NGU's) and its tuned presets per task (`PRESETS`: NGU's, applied to
--environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Exploration benchmark"; docs/exploration.md.
"""

import dataclasses

from deep_rl_zoo import settings
from deep_rl_zoo.ngu import settings as ngu_settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class Agent57Settings(ngu_settings.NguSettings):
    """Agent57 (Badia et al. 2020): NGU's settings and the meta-controller's, a sliding-window UCB per environment
    choosing among the N policies every episode."""

    agent_name = 'Agent57'

    ucb_window_size: int = settings.setting(160, "Episodes of each environment the meta-controller's sliding-window UCB looks back on.", lower=1)
    ucb_beta: float = settings.setting(1.0, 'beta of the UCB bonus beta sqrt(1 / N(j)).', lower=0.0)
    ucb_epsilon: float = settings.setting(0.5, 'Chance the meta-controller picks a uniformly random policy for an episode.', lower=0.0, upper=1.0)


def of_ngu(ngu_run_settings: ngu_settings.NguSettings) -> Agent57Settings:
    """NGU's settings as Agent57's, with the meta-controller's defaults."""
    return Agent57Settings(**dataclasses.asdict(ngu_run_settings))


# NGU's settings: run_classic's 8 environments (2 actors of 4) each have their own meta-controller choosing among the
# N = 8 policies every episode; run_atari's 2 actor processes of 4 environments and N = 8 policies (the paper: 32
# policies, 256 actors).
CLASSIC = of_ngu(ngu_settings.CLASSIC)
ATARI = of_ngu(ngu_settings.ATARI)

PRESETS = settings.presets({
    # NGU's MultiRoom settings, R2D2's (2 actors of 8 environments, 4 + 16-step sequences, one gradient step per 64 env
    # steps, 500k env steps; see r2d2/settings.py), with run_classic's family of 8 policies (gamma 0.99 down to 0.97).
    'MiniGrid-MultiRoom-N4-S5-v0': of_ngu(ngu_settings.PRESETS['MiniGrid-MultiRoom-N4-S5-v0']),
    # NGU's Pong settings, R2D2's (batches of 32 sequences of 20 + 40 steps, one gradient step per 400 env
    # steps, target network every 50, replay of 10,000 sequences; 2M env steps; see r2d2/settings.py) with run_atari's
    # family of 8 policies.
    'Pong': of_ngu(ngu_settings.PRESETS['Pong']),
})  # fmt: skip
