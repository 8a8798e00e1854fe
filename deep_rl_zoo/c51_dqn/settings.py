"""C51's settings: DQN's with a categorical return distribution, its run scripts' defaults (`CLASSIC`; `ATARI`: the
paper's: Adam 0.00025 with eps 0.01/32, 51 atoms on [-10, 10], otherwise Nature DQN's) and its tuned presets per task
(`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/distributional.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class C51Settings(settings.ValueLearning, settings.Categorical):
    """C51 (Bellemare et al. 2017)."""

    agent_name = 'C51'


# CartPole pays 1 per step: returns discounted by 0.99 stay below 1 / (1 - 0.99) = 100.
CLASSIC = C51Settings(**settings.VALUE_CLASSIC, num_atoms=51, v_min=0.0, v_max=100.0)
ATARI = C51Settings(**settings.VALUE_ATARI | dict(learning_rate=0.00025, adam_eps=0.01 / 32), num_atoms=51, v_min=-10.0, v_max=10.0)

PRESETS = settings.presets({
    # Double DQN's CartPole preset (rl-baselines3-zoo's DQN settings with 3-step returns, Adam 1e-3; 50k env steps) on
    # this agent's own run_classic defaults for the rest.
    'CartPole-v1': CLASSIC.replace(**settings.VALUE_CARTPOLE_AT_ADAM_1E3),
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) with the 51 atoms
    # on [-200, 200], which holds LunarLander's discounted returns (a crash costs 100, coming to rest earns 100): seeds
    # 1-3 reach 200 at 80k, 80k and 90k.
    'LunarLander-v3': CLASSIC.replace(**settings.VALUE_LUNAR_LANDER, v_min=-200.0, v_max=200.0),
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps), which is also Tianshou's Atari C51 example (Adam
    # 1e-4, 51 atoms on [-10, 10] as run_atari has them, 3-step returns, target network every 500 updates).
    'Pong': ATARI.replace(**settings.VALUE_PONG),
})  # fmt: skip
