"""A2C's settings: synchronous actors and learner (`settings.ActorsAndLearner`) with the policy-gradient loss weights,
RMSProp or Adam and rl-baselines3-zoo's observation and reward scaling; its run scripts' defaults (`CLASSIC`, its
CartPole-v1 settings; `ATARI`: the paper's, Mnih et al. 2016, with OpenAI Baselines' learning rate), those of the
gradient variant (`A2cGradientSettings`: `CLASSIC_GRAD`, `ATARI_GRAD`) and the tuned presets per task (`PRESETS`,
`GRAD_PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets" and "A2C on LunarLander-v3"; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import gradient_compression, settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class A2cSettings(
    settings.Common, settings.ActorsAndLearner, settings.LossWeights, settings.RmspropOrAdam, settings.ObservationAndRewardScaling, settings.Bf16Learning
):
    """Synchronous advantage actor-critic (A2C, the synchronous form of A3C: Mnih et al. 2016); the entropy weight
    beta is 0.01 in the paper."""

    agent_name = 'A2C'

    unroll_length: int = settings.setting(5, 't_max: steps each environment contributes to one update (5 in the paper).', lower=1)
    gae_lambda: float = settings.setting(1.0, 'GAE lambda; 1 is the paper: returns bootstrapped from the value after the unroll.', lower=0.0, upper=1.0)
    normalize_advantages: bool = settings.setting(
        False, "Standardise the advantages over each batch of rollouts in the policy term (the gradient variant: over each actor's rollout)."
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class A2cGradientSettings(A2cSettings):
    """A2C's gradient variant: its actors compute the gradients and send them to the learner (A3C's workers do)."""

    agent_name = 'A2C-grad'
    hidden_flags = frozenset({'bf16_learning'})  # its learner runs no forward pass: the actors compute the gradients, in float32

    gradient_compression: str = settings.setting(
        'bfloat16',
        'How actors send gradients: float32, bfloat16 (half the bytes) or int8 with a scale per block of 256 and '
        'stochastic rounding (a quarter of the bytes, unbiased).',
        choices=gradient_compression.METHODS,
    )


# 8 environments x 5 steps per update, RMSProp at 7e-4 decayed linearly to 0 over the run (10 x 50k = 500k steps),
# no entropy bonus (CartPole explores enough with a near-uniform first policy).
CLASSIC = A2cSettings(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=7e-4, discount=0.99, num_actors=2, num_envs_per_actor=4,
    unroll_length=5, entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5, learner_on_gpu=False,
)  # fmt: skip
# The paper's 16 environments x t_max 5 steps with RMSProp annealed to 0 (Mnih et al. 2016), OpenAI Baselines' learning
# rate, value weight and gradient clip: run_atari's docstring.
ATARI = A2cSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=10, num_train_steps=1_000_000, num_eval_steps=27_000, learning_rate=7e-4,
    discount=0.99, num_actors=2, num_envs_per_actor=8, unroll_length=5, entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5, learner_threads=2,
)  # fmt: skip

PRESETS = settings.presets({
    # 2 actors x 4 envs, 16-step unrolls with GAE 0.95, Adam 3e-4, entropy 0.01, for 2M env steps: 3 of 3 seeds reach
    # 150 (the paper's 5-step RMSProp setting and rl-baselines3-zoo's peaked near 100, then collapsed).
    'LunarLander-v3': CLASSIC.replace(
        num_iterations=20, num_train_steps=100_000, num_envs_per_actor=4, unroll_length=16, gae_lambda=0.95, discount=0.99,
        optimizer='adam', learning_rate=3e-4, entropy_coef=0.01,
    ),
    # rl-baselines3-zoo's MountainCar settings (16 envs as 2 actors x 8, its 5-step unrolls, RMSProp 7e-4 constant, no
    # entropy bonus, gamma 0.99) with its VecNormalize: running observation normalisation and reward scaling, for 1M
    # env steps. Without them seed 1 stayed at -200 for 1M steps.
    'MountainCar-v0': CLASSIC.replace(
        num_iterations=20, num_train_steps=50_000, num_actors=2, num_envs_per_actor=8, unroll_length=5, discount=0.99,
        learning_rate=7e-4, anneal_learning_rate=False, entropy_coef=0.0, normalize_observations=True, scale_rewards=True,
    ),
    # rl-baselines3-zoo's Atari settings (16 environments x 5 steps, RMSProp as TensorFlow computes it at a constant
    # 7e-4 with epsilon 1e-5, entropy 0.01, value weight 0.25, gradient clip 0.5) for the Pong budget (2M env steps).
    # Stable-Baselines3's authors found A2C less stable with PyTorch's RMSprop, which starts its mean square at 0 and so
    # moves every weight by about 10x the learning rate in its first steps (types.TensorflowRmsprop); with it (run_atari's
    # settings) seed 1 was still at a greedy -21.0 after 1M agent steps on 2026-12-03 (training episodes -20.2).
    'Pong': ATARI.replace(**settings.PONG_BUDGET, optimizer='rmsprop_tf', anneal_learning_rate=False, value_coef=0.25),
})  # fmt: skip


def _gradient_variant(a2c_settings: A2cSettings) -> A2cGradientSettings:
    """The gradient variant's settings with A2C's values (and its default --gradient_compression)."""
    return A2cGradientSettings(**dataclasses.asdict(a2c_settings))


# The gradient variant's run scripts take run_classic's and run_atari's defaults, and A2C's presets except MountainCar's,
# whose observation normalisation the gradient variant does not offer (its actors would each keep their own statistics).
CLASSIC_GRAD = _gradient_variant(CLASSIC)
ATARI_GRAD = _gradient_variant(ATARI)
GRAD_PRESETS = {name: _gradient_variant(preset) for name, preset in PRESETS.items() if not preset.normalize_observations}
