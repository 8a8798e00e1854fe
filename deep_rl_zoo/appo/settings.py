"""APPO's settings: Sample Factory 2.x's, named and meaning as there (`sample_factory_config` lists how each is
honoured), its run scripts' defaults (`CLASSIC`, `ATARI`) and its tuned presets per task (`PRESETS`, applied to
--environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md; docs/appo.md.
"""

import dataclasses
import sys

from deep_rl_zoo import main_loop, settings
from deep_rl_zoo.appo import sample_factory_config


@dataclasses.dataclass(frozen=True, kw_only=True)
class AppoSettings(settings.Common, settings.ActorsAndLearner, settings.Bf16Learning):
    """APPO (Sample Factory's asynchronous PPO, Petrenko et al. 2020). Our names for the same settings (`discount`,
    `num_actors`, `num_envs_per_actor`, `environment_frame_skip`, `environment_frame_stack`) are hidden behind Sample
    Factory's (`gamma`, `num_workers`, `num_envs_per_worker`, `env_frameskip`, `env_framestack`) and translated back
    by `core_settings`. `max_policy_lag` counts SGD steps here (Sample Factory), not updates as in
    `settings.Asynchronous`. Defaults are Sample Factory's, except `train_for_env_steps` (0: the budget is
    --num_iterations x --num_train_steps) and `use_rnn` (false)."""

    agent_name = 'APPO'
    hidden_flags = frozenset({'discount', 'num_actors', 'num_envs_per_actor', 'environment_frame_skip', 'environment_frame_stack'})

    config_json: str = settings.setting('', "A Sample Factory config (a model card's config.json) applied before the command line: explicit flags win.")
    # the run: processes, data flow, budget
    num_policies: int = settings.setting(1, 'Independent policies trained side by side; each environment plays a randomly drawn one, redrawn every 10 episodes.', lower=1)
    async_rl: bool = settings.setting(True, 'Actors keep collecting while the learner trains (false: every update waits for one rollout per worker).')
    serial_mode: bool = settings.setting(False, 'Sample Factory runs everything in one process; here actors are always processes (nothing learned changes).')
    batched_sampling: bool = settings.setting(False, 'Actors here always step their environments as one vector with one batched forward pass.')
    num_batches_to_accumulate: int = settings.setting(2, "Training batches the rollout buffers hold, the one the learner trains on included (Sample Factory's meaning; at least 2 buffers per worker): 2 lets the actors fill the next batch during an update, 1 keeps the policy lag lowest as they wait for the learner to give buffers back.", lower=1)
    max_policy_lag: int = settings.setting(1000, "Drop rollouts made by parameters this many or more SGD steps older than the learner's.", lower=1)
    num_workers: int = settings.setting(2, 'Actor processes.', lower=1)
    num_envs_per_worker: int = settings.setting(2, 'Environments each actor steps with one batched forward pass.', lower=1, upper=settings.MAX_ENVS_PER_PROCESS)
    rollout: int = settings.setting(32, 'Steps of one environment per trajectory; GAE bootstraps from the value after it.', lower=1)
    batch_size: int = settings.setting(1024, 'Samples (agent steps) per SGD minibatch.', lower=1)
    num_batches_per_epoch: int = settings.setting(1, 'Minibatches per training batch: each update trains on batch_size x num_batches_per_epoch samples (per policy).', lower=1)
    num_epochs: int = settings.setting(1, 'Passes over each training batch.', lower=1)
    recurrence: int = settings.setting(-1, 'Length of the trajectory chunks minibatches are made of (-1: rollout with an RNN, else 1).', lower=-1)
    shuffle_minibatches: bool = settings.setting(False, 'Reshuffle samples (in chunks of --recurrence) into new minibatches every epoch (false: fixed contiguous slices).')
    summaries_use_frameskip: bool = settings.setting(True, 'Count --train_for_env_steps in emulator frames (agent steps x --env_frameskip) on Atari.')
    # rewards and returns
    gamma: float = settings.setting(0.99, 'Discount factor.', lower=0.0, upper=1.0)
    reward_scale: float = settings.setting(1.0, 'Rewards are multiplied by this before learning.')
    reward_clip: float = settings.setting(1000.0, 'Scaled rewards are clipped to [-reward_clip, reward_clip].', lower=0.0)
    value_bootstrap: bool = settings.setting(False, 'At a time-limit truncation add gamma x V(s_t) to the reward.')
    normalize_returns: bool = settings.setting(True, 'The value head predicts returns normalised by their running mean and std.')
    gae_lambda: float = settings.setting(0.95, 'GAE lambda (unused with V-trace).', lower=0.0, upper=1.0)
    with_vtrace: bool = settings.setting(False, 'V-trace targets and advantages (computed once per batch) instead of GAE.')
    vtrace_rho: float = settings.setting(1.0, 'V-trace rho-bar: truncation of the importance weights of TD errors and advantages.', lower=0.0)
    vtrace_c: float = settings.setting(1.0, 'V-trace c-bar: truncation of the trace coefficients.', lower=0.0)
    # the loss
    ppo_clip_ratio: float = settings.setting(0.1, 'epsilon: the ratio pi/pi_old is clipped to [1/(1+epsilon), 1+epsilon].', lower=0.0)
    ppo_clip_value: float = settings.setting(1.0, 'New values may move at most this far (an absolute bound, value head units) from the behaviour values.', lower=0.0)
    exploration_loss_coeff: float = settings.setting(0.003, 'Weight of the entropy bonus: loss -= coeff x mean entropy.', lower=0.0)
    exploration_loss: str = settings.setting('entropy', 'The exploration loss (entropy only).', choices=('entropy',))
    value_loss_coeff: float = settings.setting(0.5, 'Weight of the value loss, mean of max(clipped, unclipped) squared errors (no extra 0.5).', lower=0.0)
    kl_loss_coeff: float = settings.setting(0.0, 'Weight of a KL(pi || pi_behaviour) penalty (0 disables).', lower=0.0)
    # the optimiser (learning_rate and max_grad_norm are Common's)
    lr_schedule: str = settings.setting('constant', 'Learning rate schedule.', choices=('constant', 'kl_adaptive_minibatch', 'kl_adaptive_epoch', 'linear_decay'))
    lr_schedule_kl_threshold: float = settings.setting(0.008, 'kl_adaptive_*: lr / 1.5 when the KL > 2x this, lr x 1.5 when < 0.5x this.', lower=0.0)
    lr_adaptive_min: float = settings.setting(1e-06, 'kl_adaptive_*: lowest learning rate.', lower=0.0)
    lr_adaptive_max: float = settings.setting(0.01, 'kl_adaptive_*: highest learning rate.', lower=0.0)
    adam_eps: float = settings.setting(1e-06, "Adam's epsilon.", lower=0.0)
    adam_beta1: float = settings.setting(0.9, "Adam's beta1.", lower=0.0, upper=1.0)
    adam_beta2: float = settings.setting(0.999, "Adam's beta2.", lower=0.0, upper=1.0)
    adam_fused: bool = settings.setting(False, "Adam as one fused pass over all parameters (several times faster on CPU; not Sample Factory's: it rounds differently than Adam's loop over parameters).")
    # observations and the network
    obs_subtract_mean: float = settings.setting(0.0, 'Subtracted from observations before --obs_scale.')
    obs_scale: float = settings.setting(1.0, 'Observations are divided by this (255 for Atari frames).')
    normalize_input: bool = settings.setting(False, 'Normalise (scaled) observations by their running mean and std, per element.')
    env_frameskip: int = settings.setting(4, 'Atari frames per agent step (max-pooled over the last two).', lower=1, kinds=('atari',))
    env_framestack: int = settings.setting(4, 'Atari frames stacked into one observation.', lower=1, kinds=('atari',))
    encoder_mlp_layers: tuple[int | str, ...] = settings.setting(('512', '512'), 'Hidden layer sizes of the MLP encoder (vector observations).')
    encoder_conv_architecture: str = settings.setting('convnet_atari', "The conv encoder: Nature DQN's (32x8x8/4, 64x4x4/2, 64x3x3/1).", choices=('convnet_atari',))
    encoder_conv_mlp_layers: tuple[int | str, ...] = settings.setting(('512',), 'Fully connected layer sizes after the conv encoder.')
    use_rnn: bool = settings.setting(False, 'A recurrent core (--rnn_type, --rnn_size) between the shared encoder and the heads, trained on chunks of --recurrence steps.')
    rnn_size: int = settings.setting(512, 'Hidden size of the recurrent core.', lower=1)
    rnn_type: str = settings.setting('gru', 'Cell of the recurrent core.', choices=('gru', 'lstm'))
    nonlinearity: str = settings.setting('elu', 'Activation of the encoder.', choices=('elu', 'relu', 'tanh'))
    policy_initialization: str = settings.setting('orthogonal', 'Weight initialisation of every layer.', choices=('orthogonal', 'xavier_uniform', 'torch_default'))
    policy_init_gain: float = settings.setting(1.0, 'Gain of the weight initialisation.', lower=0.0)
    actor_critic_share_weights: bool = settings.setting(True, 'Policy and value heads share one encoder (false: each has its own).')
    # checkpoints: save_every_sec, keep_checkpoints, save_best_metric, save_best_after, train_for_seconds and
    # train_for_env_steps are Common's (the experiment's); a config's save_milestones_sec and save_best_every_sec
    # are noted at load as not applicable (appo/sample_factory_config.py)

    def with_config_file(self) -> 'AppoSettings':
        """The settings of --config_json (a Sample Factory model card) under the command line's
        (`sample_factory_config.import_model_card`)."""
        if not self.config_json:
            return self
        return sample_factory_config.import_model_card(self.config_json, self, sys.stdout, sys.stderr)

    def core_settings(self) -> 'AppoCoreSettings':
        """The settings the core runs with: these, and the same under the core's names (`sample_factory_config.core_names`),
        the Atari game under its canonical name."""
        own = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return main_loop.canonical_environment(AppoCoreSettings(**own | sample_factory_config.core_names(self)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class AppoCoreSettings(AppoSettings, settings.Asynchronous):
    """APPO's settings as the core runs them (`AppoSettings.core_settings`): Sample Factory's, and the same under the
    core's names (`num_actors`, `num_envs_per_actor`, `unroll_length`, `discount`, the Atari frame skip and stack, the
    Atari game under its canonical name), the asynchronous loop's `batch_rollouts` and `num_buffers_per_actor`,
    `max_policy_lag` in updates (`settings.Asynchronous`'s) and the budgets in agent steps. Its `flag_values()` (every
    field, no hidden flag) are what checkpoints keep as the run's flags."""

    hidden_flags = frozenset()

    unroll_length: int = settings.derived(0, '--rollout.')
    sample_factory_max_policy_lag: int = settings.derived(0, "--max_policy_lag as given: Sample Factory's, in SGD steps.")
    sample_factory_lr_decay_sgd_steps: int = settings.derived(
        0, "linear_decay's plan as Sample Factory makes it, in SGD steps per policy (0: the run's budget plans it)."
    )

    def core_settings(self) -> 'AppoCoreSettings':
        """These settings: the core's already."""
        return self


# Classic control: 2 workers x 4 environments x 32-step rollouts; batches of 2 rollouts (256 samples) in one minibatch,
# 4 epochs; Adam at 5e-3 decayed linearly to 0; small tanh MLP; GAE lambda 0.8 and gamma 0.98 as in PPO's classic
# settings (rl-baselines3-zoo); returns normalised (Sample Factory's default).
CLASSIC = AppoSettings(
    num_iterations=4, num_train_steps=25_000, num_eval_steps=2_500, learning_rate=5e-3, max_grad_norm=0.5, num_workers=2, num_envs_per_worker=4,
    rollout=32, batch_size=256, num_batches_per_epoch=1, num_epochs=4, max_policy_lag=100, gamma=0.98, gae_lambda=0.8, ppo_clip_ratio=0.2,
    ppo_clip_value=1.0, exploration_loss_coeff=0.0, lr_schedule='linear_decay', adam_eps=1e-5, encoder_mlp_layers=('64', '64'), nonlinearity='tanh',
    learner_on_gpu=False,
)  # fmt: skip
# Atari: the atari_amidar model card's learning settings (configs/atari_amidar.json) with one policy and a smaller batch
# for 2 cores: 2 workers x 4 environments x 128-step rollouts, batches of 1,024 samples (2 rollouts) in 4 minibatches of
# 256, 4 epochs; and Adam fused (--adam_fused, as PPO's learner: on CPU several times faster than Adam's loop over the
# parameters).
ATARI = AppoSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=10, num_train_steps=1_000_000, num_eval_steps=27_000, seed=1234,
    learning_rate=3.033891184e-4, max_grad_norm=0.0, num_workers=2, num_envs_per_worker=4, rollout=128, batch_size=256, num_batches_per_epoch=4,
    num_epochs=4, recurrence=1, gamma=0.99, normalize_returns=True, exploration_loss_coeff=4.677351413e-4, value_loss_coeff=0.5, gae_lambda=0.95,
    ppo_clip_ratio=0.1, ppo_clip_value=1.0, lr_schedule='linear_decay', adam_eps=1e-5, obs_scale=255.0, normalize_input=True, nonlinearity='relu',
    learner_threads=2, adam_fused=True,
)  # fmt: skip

PRESETS = settings.presets({
    # run_atari's settings (Sample Factory's Atari example on 2 workers x 4 environments; they took seed 1 to +20 on
    # Pong from 600k env steps) for the Pong budget (2M env steps).
    'Pong': ATARI.replace(**settings.PONG_BUDGET),
})  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class AppoEvaluation(settings.Evaluation):
    """eval_agent's settings for APPO checkpoints holding several policies (Sample Factory's enjoy)."""

    policy_index: int = settings.setting(0, 'Which policy of the checkpoint plays (0 .. num_policies - 1).', lower=0)


EVALUATION = AppoEvaluation()
