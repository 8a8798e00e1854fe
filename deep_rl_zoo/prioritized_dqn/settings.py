"""Prioritized DQN's settings: DQN's with proportional prioritized replay, its run scripts' defaults (`CLASSIC`;
`ATARI`: Schaul et al. 2016's) and its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the
command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrioritizedDqnSettings(settings.ValueLearning, settings.PrioritizedReplay):
    """Prioritized DQN (Schaul et al. 2016): proportional prioritization on Double DQN."""

    agent_name = 'PrioritizedDQN'


CLASSIC = PrioritizedDqnSettings(
    **settings.VALUE_CLASSIC, priority_exponent=0.6, importance_sampling_exponent_begin_value=0.4, importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=200_000,
)  # fmt: skip
# The paper's baseline is tuned Double DQN (`double_dqn.settings.ATARI`); proportional prioritization adds alpha 0.6
# and beta annealed linearly from 0.4 to 1 over the whole run, and divides the step size by 4.
ATARI = PrioritizedDqnSettings(
    **settings.VALUE_ATARI | dict(
        learning_rate=2.5e-5, target_network_update_interval=7_500, exploration_epsilon_end_value=0.01, eval_exploration_epsilon=0.001,
        priority_exponent=0.6, importance_sampling_exponent_begin_value=0.4, importance_sampling_exponent_end_value=1.0,
        importance_sampling_exponent_decay_step=50 * 250_000,
    )
)  # fmt: skip

PRESETS = settings.presets({
    # Double DQN's CartPole preset (rl-baselines3-zoo's DQN settings with 3-step returns, Adam 1e-3; 50k env steps) on
    # this agent's own run_classic defaults for the rest.
    'CartPole-v1': CLASSIC.replace(**settings.VALUE_CARTPOLE_AT_ADAM_1E3),
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) with the
    # importance-sampling exponent annealed to 1 over those 100k steps. Seeds 1 and 3 reach 200 at 80k and 70k, seed 2
    # ends at 173 (its training return 237).
    'LunarLander-v3': CLASSIC.replace(**settings.VALUE_LUNAR_LANDER, importance_sampling_exponent_decay_step=100_000),
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps) with the prioritized replay of Tianshou's Atari
    # Rainbow example: alpha 0.5, beta 0.4 -> 1 (annealed over the 2M steps here, 5M there), Adam 6.25e-5.
    'Pong': ATARI.replace(
        **settings.VALUE_PONG | dict(learning_rate=6.25e-5), priority_exponent=0.5, importance_sampling_exponent_begin_value=0.4,
        importance_sampling_exponent_decay_step=2_000_000,
    ),
})  # fmt: skip
