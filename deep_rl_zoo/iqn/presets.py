"""IQN's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). run_classic's own defaults are its CartPole-v1 settings.
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/distributional.md.
"""

from deep_rl_zoo.dqn import presets as dqn_presets

PRESETS = {
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) on this agent's
    # N = N' = K = 8 quantile samples: seeds 2 and 3 reach 200 at 80k and 90k, seed 1 ends at 163 (its best); the mean
    # of the three, 206, is above rl-zoo's DQN figure minus its std (154 - 79).
    'LunarLander-v3': dqn_presets.PRESETS['LunarLander-v3'],
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps) with the quantile samples of Tianshou's Atari IQN
    # example: N = N' = 8 for the loss (run_atari: the paper's 64), K = 32 for acting, 64 cosines.
    'Pong': {**dqn_presets.TIANSHOU_PONG, 'tau_samples_s_tm1': 8, 'tau_samples_s_t': 8, 'tau_samples_policy': 32},
}
