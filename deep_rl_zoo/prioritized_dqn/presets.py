"""Prioritized DQN's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off and leaves run_classic's defaults).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

from deep_rl_zoo.dqn import presets as dqn_presets

PRESETS = {
    # Double DQN's CartPole preset (rl-baselines3-zoo's DQN settings with 3-step returns, Adam 1e-3; 50k env steps) on
    # this agent's own run_classic defaults for the rest.
    'CartPole-v1': dict(dqn_presets.CARTPOLE_AT_ADAM_1E3),
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) with the
    # importance-sampling exponent annealed to 1 over those 100k steps. Seeds 1 and 3 reach 200 at 80k and 70k, seed 2
    # ends at 173 (its training return 237).
    'LunarLander-v3': {**dqn_presets.PRESETS['LunarLander-v3'], 'importance_sampling_exponent_decay_step': 100_000},
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps) with the prioritized replay of Tianshou's Atari
    # Rainbow example: alpha 0.5, beta 0.4 -> 1 (annealed over the 2M steps here, 5M there), Adam 6.25e-5.
    'Pong': {
        **dqn_presets.TIANSHOU_PONG, 'learning_rate': 6.25e-5, 'priority_exponent': 0.5, 'importance_sampling_exponent_begin_value': 0.4,
        'importance_sampling_exponent_decay_step': 2_000_000,
    },
}
