"""A2C's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). The run scripts' own defaults are the CartPole-v1 and Pong
settings.
Results: benchmarks/NOTEBOOK.md, "Presets" and "A2C on LunarLander-v3"; docs/policy-based.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # 2 actors x 4 envs, 16-step unrolls with GAE 0.95, Adam 3e-4, entropy 0.01, for 2M env steps: 3 of 3 seeds reach
    # 150 (the paper's 5-step RMSProp setting and rl-baselines3-zoo's peaked near 100, then collapsed).
    'LunarLander-v3': dict(
        num_iterations=20, num_train_steps=100_000, num_envs_per_actor=4, unroll_length=16, gae_lambda=0.95, discount=0.99,
        optimizer='adam', learning_rate=3e-4, entropy_coef=0.01,
    ),
    # rl-baselines3-zoo's MountainCar settings (16 envs as 2 actors x 8, its 5-step unrolls, RMSProp 7e-4 constant, no
    # entropy bonus, gamma 0.99) with its VecNormalize: running observation normalisation and reward scaling, for 1M
    # env steps. Without them seed 1 stayed at -200 for 1M steps.
    'MountainCar-v0': dict(
        num_iterations=20, num_train_steps=50_000, num_actors=2, num_envs_per_actor=8, unroll_length=5, discount=0.99,
        learning_rate=7e-4, anneal_learning_rate=False, entropy_coef=0.0, normalize_observations=True, scale_rewards=True,
    ),
    # run_atari's settings (the paper's 16 environments x 5 steps with RMSProp annealed to 0, Baselines' learning rate
    # 7e-4, value weight 0.5 and gradient clip 0.5) for the Pong budget (2M env steps).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
