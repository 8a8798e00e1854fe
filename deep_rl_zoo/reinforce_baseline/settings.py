"""REINFORCE with baseline's settings: REINFORCE's, whose --value_coef weighs the baseline's value loss, its run
scripts' defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`: REINFORCE's) and its tuned presets per task
(`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import settings
from deep_rl_zoo.reinforce import settings as reinforce_settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReinforceBaselineSettings(reinforce_settings.ReinforceSettings):
    """REINFORCE with a learned state-value baseline (Williams 1992; Sutton & Barto 2018, section 13.4)."""

    agent_name = 'REINFORCE_BASELINE'


# One update per episode, Adam 1e-3, value loss weight 0.5: seeds 1-3 reach a greedy 500 within 20k env steps and
# end at 500 after 200k (python -m benchmarks.learning --agents reinforce_baseline --max_steps 200000 --eval_every 20000).
CLASSIC = ReinforceBaselineSettings(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=1e-3, discount=0.99, max_grad_norm=0.0, num_envs=1,
    num_episodes_per_update=1, entropy_coef=0.0,
)  # fmt: skip
ATARI = ReinforceBaselineSettings(**dataclasses.asdict(reinforce_settings.ATARI))  # REINFORCE's run_atari defaults

PRESETS = settings.presets({
    # REINFORCE's Pong preset: run_atari's settings (8 environments, one update per 8 whole episodes, Adam 2.5e-4,
    # entropy 0.01, advantages standardised per update) for the Pong budget (2M env steps).
    'Pong': ATARI.replace(**settings.PONG_BUDGET),
})  # fmt: skip
