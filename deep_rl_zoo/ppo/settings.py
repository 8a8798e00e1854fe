"""PPO's settings: the actors + learner loop's with PPO's own (`PpoSettings`, which the curiosity agents PPO-ICM and
PPO-RND extend), its run scripts' defaults (`CLASSIC`: CartPole-v1; `ATARI`: the PPO paper's; `CONTINUOUS`:
Pendulum-v1) and its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the command line win,
--preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/policy-based.md.
"""

import dataclasses
from typing import Any

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class PpoSettings(settings.Common, settings.ActorsAndLearner, settings.LossWeights, settings.ObservationAndRewardScaling, settings.Bf16Learning):
    """PPO (Schulman et al. 2017): clipped-surrogate updates over minibatch epochs of on-policy rollouts."""

    agent_name = 'PPO'

    unroll_length: int = settings.setting(128, 'Steps each environment contributes to one rollout.', lower=1)
    num_epochs: int = settings.setting(4, 'Passes over each batch of rollouts.', lower=1)
    num_minibatches: int = settings.setting(4, 'Minibatches each pass is split into.', lower=1)
    clip_epsilon: float = settings.setting(0.1, 'PPO ratio clip range epsilon.', lower=0.0)
    clip_value: bool = settings.setting(True, 'Clip the value update to the same range (PPO implementations detail).')
    gae_lambda: float = settings.setting(0.95, 'GAE lambda.', lower=0.0, upper=1.0)
    normalize_advantages: bool = settings.setting(True, 'Normalise advantages per minibatch.')
    anneal_learning_rate: bool = settings.setting(True, 'Decay the learning rate linearly to 0 over the run.')
    anneal_clip_epsilon: bool = settings.setting(False, 'Decay the clip range linearly to 0 over the run.')


# The rl-baselines3-zoo CartPole-v1 hyperparameters (8 envs x 32 steps, gamma 0.98, lambda 0.8), except 4 epochs at
# learning rate 5e-3 instead of 20 at 1e-3: more env steps to solve (median 34k vs 27k, seeds 1-20) but a quarter of
# the gradient steps (530 vs 2,100), so it solves in about 30% less wall-clock time (median 5.4 s vs 7.7 s, seeds 1-10).
# Seeds 1-20 all solve within 75k steps and seeds 1-10 end the run with a greedy return of 500; about 1 seed in 40
# needs more than 100k steps (--num_epochs=6 --learning_rate=3e-3 solved 40 of 40, about 15% slower).
CLASSIC = PpoSettings(
    num_actors=1, num_envs_per_actor=8, num_iterations=4, num_train_steps=25_000, num_eval_steps=2_500, learning_rate=5e-3, discount=0.98,
    unroll_length=32, num_epochs=4, num_minibatches=1, clip_epsilon=0.2, clip_value=False, entropy_coef=0.0, gae_lambda=0.8, max_grad_norm=0.5,
    learner_on_gpu=False,
)  # fmt: skip

# The PPO paper's Atari settings (Schulman et al. 2017, Table 5; PPO-ICM's run_atari starts from them too). Two actors
# of 4 environments rather than one of 8: on 2 cores one actor's forward pass overlaps the other's emulator steps
# (benchmarks/atari_throughput.py: 372 agent steps/s against SB3's 294 in the same run).
PPO_PAPER_ATARI: dict[str, Any] = dict(
    environment_kind='atari', environment_name='Pong', num_actors=2, num_envs_per_actor=4, num_iterations=10, num_train_steps=1_000_000,
    num_eval_steps=27_000, learning_rate=2.5e-4, discount=0.99, unroll_length=128, num_epochs=4, num_minibatches=4, clip_epsilon=0.1,
    entropy_coef=0.01, value_coef=0.5, gae_lambda=0.95, max_grad_norm=0.5, learner_threads=2,
)  # fmt: skip
ATARI = PpoSettings(**PPO_PAPER_ATARI)

CONTINUOUS = PpoSettings(
    environment_kind='continuous', environment_name='Pendulum-v1', num_actors=1, num_envs_per_actor=4, num_iterations=10, num_train_steps=50_000,
    num_eval_steps=2_000, learning_rate=1e-3, discount=0.9, unroll_length=256, num_epochs=10, num_minibatches=16, clip_epsilon=0.2,
    entropy_coef=0.0, gae_lambda=0.95, max_grad_norm=0.5, normalize_observations=True, scale_rewards=True, learner_on_gpu=False,
)  # fmt: skip

# The run_classic defaults of the curiosity agents (PPO-ICM's and PPO-RND's). One set of PPO settings for MountainCar
# and MiniGrid (those of the curiosity table in docs/exploration.md): 8 environments x 128 steps, 4 epochs of 4
# minibatches, gamma 0.99, lambda 0.95, a small entropy bonus.
CURIOSITY_CLASSIC: dict[str, Any] = dict(
    environment_name='MountainCar-v0', num_actors=1, num_envs_per_actor=8, num_iterations=10, num_train_steps=20_000, num_eval_steps=1_000,
    learning_rate=5e-4, discount=0.99, unroll_length=128, num_epochs=4, num_minibatches=4, clip_epsilon=0.2, entropy_coef=0.01,
    gae_lambda=0.95, max_grad_norm=0.5, learner_on_gpu=False,
)  # fmt: skip

# The MuJoCo settings of the PPO paper (Schulman et al. 2017, table 3: one env x 2048 steps, 10 epochs of 64-sample
# minibatches, gamma 0.99, lambda 0.95, Adam 3e-4; the epochs, lambda and clip 0.2 are run_continuous's defaults) for
# 12 x 40,960 = 492k env steps.
PPO_PAPER_MUJOCO: dict[str, Any] = dict(
    num_iterations=12, num_train_steps=40_960, discount=0.99, num_envs_per_actor=1, unroll_length=2048, num_minibatches=32, learning_rate=3e-4,
)

PRESETS = settings.presets({
    # rl-baselines3-zoo's LunarLander settings (16 envs x 1024 steps, 4 epochs of 64-sample minibatches, gamma 0.999,
    # lambda 0.98, entropy 0.01) at a constant Adam 3e-4, for 983k env steps.
    'LunarLander-v3': CLASSIC.replace(
        num_iterations=20, num_train_steps=49_152, num_envs_per_actor=16, unroll_length=1024, num_minibatches=256, num_epochs=4,
        discount=0.999, gae_lambda=0.98, entropy_coef=0.01, learning_rate=3e-4, anneal_learning_rate=False,
    ),
    # rl-baselines3-zoo's MountainCar settings (16 envs x 16 steps, 4 epochs of 64-sample minibatches, gamma 0.99,
    # lambda 0.98, no entropy bonus, clip 0.2, Adam 3e-4 constant) with its VecNormalize: running observation
    # normalisation and reward scaling, for 1M env steps. Without the observation normalisation (and at clip 0.1) seed 1
    # stayed at -200 for 502k steps: the velocity (+-0.07) is invisible next to the position (1.8 wide).
    'MountainCar-v0': CLASSIC.replace(
        num_iterations=20, num_train_steps=50_000, num_envs_per_actor=16, unroll_length=16, num_minibatches=4, num_epochs=4,
        discount=0.99, gae_lambda=0.98, entropy_coef=0.0, clip_epsilon=0.2, learning_rate=3e-4, anneal_learning_rate=False,
        normalize_observations=True, scale_rewards=True,
    ),
    # 492k env steps of the PPO paper's MuJoCo settings (above), with run_continuous's observation normalisation and
    # reward scaling. HalfCheetah: seeds 1-3 reached 1,500 (a progress threshold) at 205k, 287k and 328k env steps and
    # ended at 2,537, 1,764 and 845. Hopper: seeds 1-3 reached 2,000 at 205k, 164k and 246k and ended
    # at 3,382, 1,627 and 1,204 (best 3,382, 3,236 and 3,256).
    'HalfCheetah-v5': CONTINUOUS.replace(**PPO_PAPER_MUJOCO),
    'Hopper-v5': CONTINUOUS.replace(**PPO_PAPER_MUJOCO),
    # run_atari's settings (CleanRL's and rl-baselines3-zoo's Atari PPO: 8 environments x 128 steps, 4 epochs of 4
    # minibatches, Adam 2.5e-4 annealed to 0, clip 0.1, entropy 0.01, GAE 0.95) for the Pong budget (2M env steps, over
    # which the learning rate is annealed; their runs anneal over 10M).
    'Pong': ATARI.replace(**settings.PONG_BUDGET),
})  # fmt: skip
