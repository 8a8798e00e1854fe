"""IQN's settings: DQN's with sampled quantiles, its run scripts' defaults (`CLASSIC`, its CartPole-v1 settings;
`ATARI`: the paper's, Dabney et al. 2018: N = N' = 64, K = 32, 64 cosines, kappa = 1, Adam 5e-5 with eps 0.01/32, the
rest QR-DQN's and Nature DQN's) and its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the
command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/distributional.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class IqnSettings(settings.ValueLearning, settings.Quantile):
    """IQN (Dabney et al. 2018)."""

    agent_name = 'IQN'


CLASSIC = IqnSettings(**settings.VALUE_CLASSIC, tau_samples_s_tm1=8, tau_samples_s_t=8, tau_samples_policy=8)
ATARI = IqnSettings(
    **settings.VALUE_ATARI | dict(learning_rate=5e-5, adam_eps=0.01 / 32, exploration_epsilon_end_value=0.01), huber_param=1.0,
    tau_samples_s_tm1=64, tau_samples_s_t=64, tau_samples_policy=32, tau_embed_dim=64,
)  # fmt: skip

PRESETS = settings.presets({
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) on this agent's
    # N = N' = K = 8 quantile samples: seeds 2 and 3 reach 200 at 80k and 90k, seed 1 ends at 163 (its best); the mean
    # of the three, 206, is above rl-zoo's DQN figure minus its std (154 - 79).
    'LunarLander-v3': CLASSIC.replace(**settings.VALUE_LUNAR_LANDER),
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps) with the quantile samples of Tianshou's Atari IQN
    # example: N = N' = 8 for the loss (run_atari: the paper's 64), K = 32 for acting, 64 cosines.
    'Pong': ATARI.replace(**settings.VALUE_PONG, tau_samples_s_tm1=8, tau_samples_s_t=8, tau_samples_policy=32),
})  # fmt: skip
