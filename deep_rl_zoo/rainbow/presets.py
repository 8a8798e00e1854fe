"""Rainbow's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off and leaves run_classic's defaults). Results: README, "Presets".
"""

PRESETS = {
    # run_classic's defaults (3-step returns, noisy nets, prioritized replay, one update per env step, target network
    # every 1,000 updates) at Adam 1e-3 instead of 5e-4, for 50k env steps evaluated every 10k. Double DQN's preset
    # (an update every 2 env steps, target every 128) left seed 1 at 260 after 50k.
    'CartPole-v1': dict(num_iterations=5, num_train_steps=10_000, learning_rate=1e-3),
}
