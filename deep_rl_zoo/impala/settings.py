"""IMPALA's settings: asynchronous actors and learner (`settings.Asynchronous`) with the policy-gradient loss weights,
RMSProp or Adam and V-trace's clips; its run scripts' defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`: the
paper's, Espeholt et al. 2018) and its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the
command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImpalaSettings(settings.Common, settings.Asynchronous, settings.LossWeights, settings.RmspropOrAdam, settings.Bf16Learning):
    """IMPALA (Espeholt et al. 2018): actor-critic on V-trace targets, asynchronous actors."""

    agent_name = 'IMPALA'

    unroll_length: int = settings.setting(20, 'Steps each environment contributes to one rollout (20 in the paper).', lower=1)
    clip_rho_threshold: float = settings.setting(1.0, 'rho-bar: clip of the importance weight of the V-trace TD errors (0 disables clipping).', lower=0.0)
    clip_pg_rho_threshold: float = settings.setting(1.0, 'Clip of the importance weight of the policy-gradient advantage (0 disables clipping).', lower=0.0)
    clip_c_threshold: float = settings.setting(1.0, 'c-bar: clip of the trace-cutting coefficients (0 disables clipping).', lower=0.0)
    vtrace_lambda: float = settings.setting(1.0, 'lambda: extra discounting of the V-trace traces (1 is the paper).', lower=0.0, upper=1.0)
    use_lstm: bool = settings.setting(
        False,
        "The paper's LSTM core (256 units) between the torso and the heads, fed the torso's output, the one-hot previous "
        'action and the clipped previous reward; its state is carried across rollouts and reset at episode starts.',
    )
    torso: str = settings.setting(
        'nature', "The paper's shallow Nature CNN or its deep 15-layer residual network.", choices=('nature', 'impala_resnet'), kinds=('atari',)
    )
    replay_proportion: float = settings.setting(
        0.0,
        'Rollouts replayed per new rollout in each batch, drawn uniformly from the newest --replay_rollouts (as in the '
        "paper's V-trace analysis with replay; V-trace corrects for their older behaviour policy). 0: each rollout is learned from once.",
        lower=0.0,
    )
    replay_rollouts: int = settings.setting(100, 'Rollouts kept for --replay_proportion, the newest (not saved in checkpoints).', lower=1)


# 2 actors x 4 environments x 20-step unrolls, 2 rollouts (160 samples) per update, Adam at 1e-3 decayed to 0 over
# the run, no entropy bonus (CartPole explores enough with a near-uniform first policy; 0.01 stalled near 200).
# The loss is summed over the 160 samples (the paper's reduction); these settings were tuned on their mean, so Adam's
# epsilon and the clip are the tuned 1e-5 and 40 times 160, which gives the tuned update (scale them with the batch).
CLASSIC = ImpalaSettings(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=1e-3, discount=0.99, num_actors=2, num_envs_per_actor=4,
    batch_rollouts=2, max_policy_lag=20, unroll_length=20, entropy_coef=0.0, value_coef=0.5, max_grad_norm=6400.0, optimizer='adam',
    optimizer_eps=1.6e-3, learner_on_gpu=False,
)  # fmt: skip
# The paper's settings (Espeholt et al. 2018, Table D.2), with its batch of 32 unrolls as 4 rollouts of 2 actors x 8
# environments on 2 cores: run_atari's docstring.
ATARI = ImpalaSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=50, num_train_steps=1_000_000, num_eval_steps=27_000, learning_rate=6e-4,
    discount=0.99, num_actors=2, num_envs_per_actor=8, batch_rollouts=4, max_policy_lag=100, unroll_length=20, entropy_coef=0.01, value_coef=0.5,
    max_grad_norm=40.0, optimizer='rmsprop', rmsprop_alpha=0.99, optimizer_eps=0.01, terminal_on_life_loss=False, learner_threads=2,
)  # fmt: skip

PRESETS = settings.presets({
    # run_atari's paper settings (RMSProp 6e-4, eps 0.01, 20-step unrolls, entropy 0.01, gradient clip 40 on the loss
    # summed over the batch) for the Pong budget (2M env steps, over which the learning rate is annealed to 0), with
    # replay: each batch is one new rollout of 2 x 8 x 20 and three replayed ones (the paper's batch of 640 samples),
    # so each sample is learned from 4 times, as PPO's 4 epochs do. Without it IMPALA stayed at -21 for 2M steps; with
    # it, +1.9 at 500k (benchmarks/results/pong_notes.md).
    'Pong': ATARI.replace(**settings.PONG_BUDGET, replay_proportion=3.0, batch_rollouts=1),
})  # fmt: skip
