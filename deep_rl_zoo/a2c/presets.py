"""A2C's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). The run scripts' own defaults are the CartPole-v1 and Pong
settings. Results: README, "A2C on LunarLander-v3".
"""

PRESETS = {
    # 2 actors x 4 envs, 16-step unrolls with GAE 0.95, Adam 3e-4, entropy 0.01, for 2M env steps: 3 of 3 seeds reach
    # 150 (the paper's 5-step RMSProp setting and rl-baselines3-zoo's peaked near 100, then collapsed).
    'LunarLander-v3': dict(
        num_iterations=20, num_train_steps=100_000, num_envs_per_actor=4, unroll_length=16, gae_lambda=0.95, discount=0.99,
        optimizer='adam', learning_rate=3e-4, entropy_coef=0.01,
    ),
}  # fmt: skip
