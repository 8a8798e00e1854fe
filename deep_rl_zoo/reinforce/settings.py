"""REINFORCE's settings: Monte-Carlo policy gradient in one process (`settings.SingleProcess`) with the
policy-gradient loss weights, its run scripts' defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`, untuned) and
its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none
turns them off).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReinforceSettings(settings.Common, settings.SingleProcess, settings.LossWeights):
    """REINFORCE, with or without a baseline (Williams 1992): one update per batch of complete episodes;
    `value_coef` is read by REINFORCE with baseline only."""

    agent_name = 'REINFORCE'

    num_episodes_per_update: int = settings.setting(
        1, 'Complete episodes of each update (a multiple of --num_envs: each environment gives the same number).', lower=1
    )
    normalize_advantages: bool = settings.setting(False, 'Standardise the returns (REINFORCE) or advantages (with baseline) over each update.')


# One update per episode, Adam 1e-3, returns standardised over each episode (a constant baseline: without it
# seeds 1-3 also reach a greedy 500 within 100k env steps but fall back to 150-330 by 200k; with it they reach
# 475 by 20k-40k and end at 500 after 200k; python -m benchmarks.learning --agents reinforce --max_steps 200000
# --eval_every 20000). No entropy bonus.
CLASSIC = ReinforceSettings(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=1e-3, discount=0.99, max_grad_norm=0.0, num_envs=1,
    num_episodes_per_update=1, entropy_coef=0.0, normalize_advantages=True,
)  # fmt: skip
# Untuned: PPO's Atari learning rate, entropy bonus and gradient clipping, 8 games per update, standardised
# returns/advantages (Pong's scores span -21..21).
ATARI = ReinforceSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=10, num_train_steps=1_000_000, num_eval_steps=27_000, learning_rate=2.5e-4,
    discount=0.99, max_grad_norm=0.5, num_envs=8, num_episodes_per_update=8, entropy_coef=0.01, normalize_advantages=True,
)  # fmt: skip

PRESETS = settings.presets({
    # run_atari's settings (8 environments, one update per 8 whole episodes, Adam 2.5e-4, entropy 0.01, returns
    # standardised per update; no published Atari settings exist for this agent) for the Pong budget (2M env steps).
    'Pong': ATARI.replace(**settings.PONG_BUDGET),
})  # fmt: skip
