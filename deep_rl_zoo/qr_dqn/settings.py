"""QR-DQN's settings: DQN's with quantile regression, its run scripts' defaults (`CLASSIC`; `ATARI`: the paper's,
Dabney et al. 2017: N = 200, kappa = 1, Adam 5e-5 with eps 0.01/32, the rest Nature DQN's) and its tuned presets per
task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/distributional.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class QrDqnSettings(settings.ValueLearning, settings.Quantile):
    """QR-DQN (Dabney et al. 2017)."""

    agent_name = 'QRDQN'


CLASSIC = QrDqnSettings(**settings.VALUE_CLASSIC, num_quantiles=32)
ATARI = QrDqnSettings(
    **settings.VALUE_ATARI | dict(learning_rate=5e-5, adam_eps=0.01 / 32, exploration_epsilon_end_value=0.01), num_quantiles=200, huber_param=1.0
)

PRESETS = settings.presets({
    # Double DQN's CartPole preset (rl-baselines3-zoo's DQN settings with 3-step returns, Adam 1e-3; 50k env steps) on
    # this agent's own run_classic defaults for the rest.
    'CartPole-v1': CLASSIC.replace(**settings.VALUE_CARTPOLE_AT_ADAM_1E3),
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) on this agent's
    # 32 quantiles: seeds 1-3 reach 200 at 100k, 90k and 90k.
    'LunarLander-v3': CLASSIC.replace(**settings.VALUE_LUNAR_LANDER),
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps), which is also Tianshou's Atari QR-DQN example
    # (Adam 1e-4, run_atari's 200 quantiles, 3-step returns, target network every 500 updates, epsilon down to 0.05).
    'Pong': ATARI.replace(**settings.VALUE_PONG),
})  # fmt: skip
