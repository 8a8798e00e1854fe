"""PPO's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). The run scripts' own defaults are the CartPole-v1 (run_classic),
Breakout (run_atari) and Pendulum-v1 (run_continuous) settings.
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/policy-based.md.
"""

from deep_rl_zoo import flags

# The MuJoCo settings of the PPO paper (Schulman et al. 2017, table 3: one env x 2048 steps, 10 epochs of 64-sample
# minibatches, gamma 0.99, lambda 0.95, Adam 3e-4; the epochs, lambda and clip 0.2 are run_continuous's defaults) for
# 12 x 40,960 = 492k env steps.
PPO_PAPER_MUJOCO = dict(
    num_iterations=12, num_train_steps=40_960, discount=0.99, num_envs_per_actor=1, unroll_length=2048, num_minibatches=32, learning_rate=3e-4,
)

PRESETS = {
    # rl-baselines3-zoo's LunarLander settings (16 envs x 1024 steps, 4 epochs of 64-sample minibatches, gamma 0.999,
    # lambda 0.98, entropy 0.01) at a constant Adam 3e-4, for 983k env steps.
    'LunarLander-v3': dict(
        num_iterations=20, num_train_steps=49_152, num_envs_per_actor=16, unroll_length=1024, num_minibatches=256, num_epochs=4,
        discount=0.999, gae_lambda=0.98, entropy_coef=0.01, learning_rate=3e-4, anneal_learning_rate=False,
    ),
    # rl-baselines3-zoo's MountainCar settings (16 envs x 16 steps, 4 epochs of 64-sample minibatches, gamma 0.99,
    # lambda 0.98, no entropy bonus, clip 0.2, Adam 3e-4 constant) with its VecNormalize: running observation
    # normalisation and reward scaling, for 1M env steps. Without the observation normalisation (and at clip 0.1) seed 1
    # stayed at -200 for 502k steps: the velocity (+-0.07) is invisible next to the position (1.8 wide).
    'MountainCar-v0': dict(
        num_iterations=20, num_train_steps=50_000, num_envs_per_actor=16, unroll_length=16, num_minibatches=4, num_epochs=4,
        discount=0.99, gae_lambda=0.98, entropy_coef=0.0, clip_epsilon=0.2, learning_rate=3e-4, anneal_learning_rate=False,
        normalize_observations=True, scale_rewards=True,
    ),
    # 492k env steps of the PPO paper's MuJoCo settings (above), with run_continuous's observation normalisation and
    # reward scaling. HalfCheetah: seeds 1-3 reached 1,500 (a progress threshold) at 205k, 287k and 328k env steps and
    # ended at 2,537, 1,764 and 845. Hopper: seeds 1-3 reached 2,000 at 205k, 164k and 246k and ended
    # at 3,382, 1,627 and 1,204 (best 3,382, 3,236 and 3,256).
    'HalfCheetah-v5': PPO_PAPER_MUJOCO,
    'Hopper-v5': PPO_PAPER_MUJOCO,
    # run_atari's settings (CleanRL's and rl-baselines3-zoo's Atari PPO: 8 environments x 128 steps, 4 epochs of 4
    # minibatches, Adam 2.5e-4 annealed to 0, clip 0.1, entropy 0.01, GAE 0.95) for the Pong budget (2M env steps, over
    # which the learning rate is annealed; their runs anneal over 10M).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
