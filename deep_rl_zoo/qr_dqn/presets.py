"""QR-DQN's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off and leaves run_classic's defaults).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/distributional.md.
"""

from deep_rl_zoo.dqn import presets as dqn_presets

PRESETS = {
    # Double DQN's CartPole preset (rl-baselines3-zoo's DQN settings with 3-step returns, Adam 1e-3; 50k env steps) on
    # this agent's own run_classic defaults for the rest.
    'CartPole-v1': dict(dqn_presets.CARTPOLE_AT_ADAM_1E3),
    # DQN's LunarLander preset (rl-baselines3-zoo's DQN settings with 3-step returns, 100k env steps) on this agent's
    # 32 quantiles: seeds 1-3 reach 200 at 100k, 90k and 90k.
    'LunarLander-v3': dqn_presets.PRESETS['LunarLander-v3'],
    # DQN's Pong preset (Tianshou's Atari DQN example; 2M env steps), which is also Tianshou's Atari QR-DQN example
    # (Adam 1e-4, run_atari's 200 quantiles, 3-step returns, target network every 500 updates, epsilon down to 0.05).
    'Pong': dict(dqn_presets.TIANSHOU_PONG),
}
