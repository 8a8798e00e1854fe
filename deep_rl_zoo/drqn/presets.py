"""DRQN's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). run_classic's own defaults are its CartPole-v1 settings.
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

PRESETS = {
    # run_classic's defaults (sequences of 8, batch 32, one update per 4 env steps, target network every 250 updates)
    # with DQN's LunarLander learning rate (Adam 6.3e-4), 3-step returns and epsilon 1 -> 0.1 over 12k steps, for 200k
    # env steps: seeds 1 and 3 reach 200 at 120k, seed 2 ends at 184 (best 197).
    'LunarLander-v3': dict(
        num_iterations=10, num_train_steps=20_000, learning_rate=6.3e-4, n_step=3,
        exploration_epsilon_decay_step=12_000, exploration_epsilon_end_value=0.1,
    ),
}  # fmt: skip
