"""Sample Factory 2.x settings, as APPO here honours them.

A Sample Factory model card publishes the full configuration of a run (`configs/atari_amidar.json` is one).
APPO's flags take Sample Factory's names, so such a file can be applied flag for flag. Every key of the model
card is in exactly one of three tables:

* `SAMPLE_FACTORY_FLAGS` (APPLIED): the key is our flag of the same name, with Sample Factory's meaning. Where
  Sample Factory offers a fixed set of values (`choices`), we offer all of them.
* `UNSUPPORTED_VALUES`: we accept only some of Sample Factory's values (`choices`); any other is refused with
  one line. Those with `flag=True` are our flags too; the others only have to hold one of the accepted values.
* `NOT_APPLICABLE`: hardware and process tuning, logging and checkpoint cadence, or settings of action spaces APPO
  here does not have: nothing that is learned here depends on them. Loading notes them, one line each with its
  reason.

`load_config` reads such a file into flag values and `import_model_card` applies them to APPO's settings;
`core_names` gives those settings under the core's names (workers -> actors, rollout -> unroll length, budgets in
frames per policy -> agent steps), which `AppoSettings.core_settings` puts into the settings object the core runs
with; `atari_environment_name` turns Sample Factory's Atari names (`atari_amidar`) into ours (`Amidar`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import sys
from typing import TYPE_CHECKING, Any

import ale_py
from ale_py.registration import rom_id_to_name

from deep_rl_zoo import gym_env, settings

if TYPE_CHECKING:  # appo/settings.py imports this module
    from deep_rl_zoo.appo.settings import AppoCoreSettings, AppoSettings


@dataclasses.dataclass(frozen=True)
class Setting:
    """How one Sample Factory key is honoured.

    kind: the JSON type accepted: 'int', 'float' (an int is accepted and becomes a float), 'bool', 'str',
      'int list', or 'str list or null'.
    how: one line saying what the key does here.
    choices: APPLIED keys: Sample Factory's own set of values, if it has one (all supported); UNSUPPORTED_VALUES
      keys: the values accepted here.
    flag: whether the value is passed on as our flag of the same name.
    """

    kind: str
    how: str
    choices: tuple[Any, ...] = ()
    flag: bool = True


# APPLIED: our flag of the same name. Env steps below are counted as Sample Factory counts them: in frames
# (agent steps x env_frameskip) when summaries_use_frameskip is true.
SAMPLE_FACTORY_FLAGS: dict[str, Setting] = {
    # the run: processes, data flow, budget
    'seed': Setting('int', 'Seed of the environments, networks and samplers.'),
    'num_policies': Setting('int', 'Independent policies trained side by side; each environment plays a randomly drawn one, redrawn every 10 episodes.'),
    'async_rl': Setting('bool', 'True: actors keep collecting while the learner trains (policy lag); False: each update waits for rollouts of the current policy.'),
    'serial_mode': Setting('bool', 'Run actors and learner in one process (debugging); what is learned is the same.'),
    'batched_sampling': Setting('bool', "Actors step their environments as one vector with one batched forward pass."),
    'num_batches_to_accumulate': Setting('int', 'Training batches the learner may hold before the actors pause (bounds policy lag).'),
    'max_policy_lag': Setting('int', 'Samples made by a policy this many or more SGD steps older than the learner\'s are dropped.'),
    'num_workers': Setting('int', 'Actor processes.'),
    'num_envs_per_worker': Setting('int', 'Environments each actor steps.'),
    'rollout': Setting('int', 'Steps of one environment per trajectory sent to the learner; GAE bootstraps from the value after it.'),
    'batch_size': Setting('int', 'Samples (agent steps) per SGD minibatch.'),
    'num_batches_per_epoch': Setting('int', 'Minibatches per training batch: each update trains on batch_size x num_batches_per_epoch samples.'),
    'num_epochs': Setting('int', 'Passes over each training batch.'),
    'recurrence': Setting('int', 'Steps of backpropagation through time (1: feed-forward; -1: rollout with an RNN, else 1).'),
    'shuffle_minibatches': Setting('bool', 'Reshuffle samples into new minibatches every epoch (False: fixed contiguous slices).'),
    'train_for_env_steps': Setting('int', 'Stop after this many env steps (per policy).'),
    'train_for_seconds': Setting('int', 'Stop after this many seconds.'),
    'summaries_use_frameskip': Setting('bool', 'Count env steps (budget, logs, save_best_after) in frames: agent steps x env_frameskip.'),
    # rewards and returns
    'gamma': Setting('float', 'Discount factor.'),
    'reward_scale': Setting('float', 'Rewards are multiplied by this before learning.'),
    'reward_clip': Setting('float', 'Scaled rewards are clipped to [-reward_clip, reward_clip].'),
    'value_bootstrap': Setting('bool', 'At a time-limit truncation, add gamma x V(s_t) to the last reward.'),
    'normalize_returns': Setting('bool', 'Value head predicts returns normalised by their running mean and std (normalizer.ReturnNormalizer).'),
    'gae_lambda': Setting('float', 'GAE lambda (unused with V-trace).'),
    'with_vtrace': Setting('bool', 'V-trace targets and advantages instead of GAE.'),
    'vtrace_rho': Setting('float', 'V-trace rho-bar: truncation of the importance weights of the TD errors.'),
    'vtrace_c': Setting('float', 'V-trace c-bar: truncation of the trace coefficients.'),
    # the loss
    'ppo_clip_ratio': Setting('float', 'epsilon: the ratio pi/pi_old is clipped to [1/(1+epsilon), 1+epsilon].'),
    'ppo_clip_value': Setting('float', 'Value clipping: new values may move at most this far from the behaviour values (value head units).'),
    'exploration_loss_coeff': Setting('float', 'Weight of the entropy bonus: loss -= coeff x mean entropy.'),
    'value_loss_coeff': Setting('float', 'Weight of the value loss, mean of max(clipped, unclipped) squared errors (no extra 0.5).'),
    'kl_loss_coeff': Setting('float', 'Weight of a KL(pi || pi_behaviour) penalty (0 disables).'),
    # the optimiser
    'learning_rate': Setting('float', 'Adam learning rate (the start value of the schedule).'),
    'lr_schedule': Setting('str', 'Learning rate schedule; linear_decay plans train_for_env_steps // batch_size x num_epochs SGD steps per policy.', choices=('constant', 'kl_adaptive_minibatch', 'kl_adaptive_epoch', 'linear_decay')),
    'lr_schedule_kl_threshold': Setting('float', 'kl_adaptive_*: lr / 1.5 when mean KL > 2x this, lr x 1.5 when < 0.5x this.'),
    'lr_adaptive_min': Setting('float', 'kl_adaptive_*: lowest learning rate.'),
    'lr_adaptive_max': Setting('float', 'kl_adaptive_*: highest learning rate.'),
    'adam_eps': Setting('float', "Adam's epsilon."),
    'adam_beta1': Setting('float', "Adam's beta1."),
    'adam_beta2': Setting('float', "Adam's beta2."),
    'max_grad_norm': Setting('float', 'Clip the global gradient norm to this (0 disables).'),
    # observations and the network
    'obs_subtract_mean': Setting('float', 'Subtracted from observations before obs_scale.'),
    'obs_scale': Setting('float', 'Observations are divided by this (255 for Atari frames).'),
    'normalize_input': Setting('bool', 'Normalise observations by their running mean and std.'),
    'env_frameskip': Setting('int', 'Atari frames per agent step (action repeat, max over the last two frames).'),
    'env_framestack': Setting('int', 'Atari frames stacked into one observation.'),
    'encoder_mlp_layers': Setting('int list', 'Hidden layer sizes of the MLP encoder (vector observations).'),
    'encoder_conv_mlp_layers': Setting('int list', 'Fully connected layer sizes after the convolutional encoder.'),
    'use_rnn': Setting('bool', 'A recurrent core between encoder and heads.'),
    'rnn_size': Setting('int', 'Hidden size of the recurrent core.'),
    'rnn_type': Setting('str', 'Cell of the recurrent core.', choices=('gru', 'lstm')),
    'nonlinearity': Setting('str', 'Activation of the encoder.', choices=('elu', 'relu', 'tanh')),
    'policy_initialization': Setting('str', 'Weight initialisation.', choices=('orthogonal', 'xavier_uniform', 'torch_default')),
    'policy_init_gain': Setting('float', 'Gain of the weight initialisation.'),
    'actor_critic_share_weights': Setting('bool', 'Policy and value heads share one encoder (False: two separate networks).'),
    # checkpoints
    'save_every_sec': Setting('int', 'Seconds between checkpoints.'),
    'keep_checkpoints': Setting('int', 'Most recent checkpoints kept.'),
    'save_best_after': Setting('int', 'Env steps (per policy, like train_for_env_steps) before a best policy is saved (filters lucky early episodes).'),
}

# Sample Factory's defaults of the APPLIED keys whose flags are the core's (`settings.Common`), so their defaults
# are not Sample Factory's: a config that omits one of them runs with Sample Factory's value (`import_model_card`).
SAMPLE_FACTORY_DEFAULTS: dict[str, float] = {'learning_rate': 1e-4, 'max_grad_norm': 4.0}

UNSUPPORTED_VALUES: dict[str, Setting] = {
    'exploration_loss': Setting('str', 'Entropy bonus only (symmetric_kl is not offered).', choices=('entropy',)),
    'encoder_conv_architecture': Setting('str', "Nature DQN's conv encoder only (convnet_simple, convnet_impala, resnet_impala are not offered).", choices=('convnet_atari',)),
    'save_best_metric': Setting('str', 'The best policy is the one with the highest mean episode return.', choices=('reward',)),
    'optimizer': Setting('str', 'Adam only (lamb is not offered).', choices=('adam',), flag=False),
    'rnn_num_layers': Setting('int', 'A recurrent core of one layer only.', choices=(1,), flag=False),
    'decoder_mlp_layers': Setting('int list', 'No decoder layers between core and heads.', choices=([],), flag=False),
    'normalize_input_keys': Setting('str list or null', 'Observations are one array, normalised whole.', choices=(['obs'], None), flag=False),
    'load_checkpoint_kind': Setting('str', 'Resuming loads the latest checkpoint (--load_checkpoint_file names any other).', choices=('latest',), flag=False),
    'benchmark': Setting('bool', 'No throughput-only benchmark mode (see benchmarks/).', choices=(False,), flag=False),
}

# Reason each setting changes nothing that is learned here.
NOT_APPLICABLE: dict[str, str] = {
    'device': 'the learner device is --learner_on_gpu',
    'actor_worker_gpus': 'actors act on CPU or per --actors_on_gpu',
    'env_gpu_actions': 'environments are CPU emulators',
    'env_gpu_observations': 'environments are CPU emulators',
    'policy_workers_per_policy': 'each actor runs its own forward pass; there are no inference workers',
    'worker_num_splits': 'double-buffered sampling is a throughput device; each actor steps all its environments at once',
    'set_workers_cpu_affinity': 'CPU pinning of processes',
    'force_envs_single_thread': 'thread count inside environments',
    'default_niceness': 'process priority',
    'decorrelate_experience_max_seconds': 'start-up stagger of actors; environments here start from their own seeds and random no-ops',
    'decorrelate_envs_on_one_worker': 'environments here start from their own seeds and random no-ops',
    'use_env_info_cache': 'environment spaces are read from the environment at start',
    'log_to_file': 'logging goes to TensorBoard, CSV and the console',
    'experiment_summaries_interval': 'logging cadence',
    'flush_summaries_interval': 'logging cadence',
    'stats_avg': 'episodes averaged in reported returns; our trackers keep their own window',
    'heartbeat_interval': 'process health checks',
    'heartbeat_reporting_interval': 'process health checks',
    'adaptive_stddev': 'continuous actions only; APPO here has discrete actions',
    'continuous_tanh_scale': 'continuous actions only; APPO here has discrete actions',
    'initial_stddev': 'continuous actions only; APPO here has discrete actions',
    'save_milestones_sec': 'a milestone checkpoint here ends each iteration (--num_train_steps), kept unless --nokeep_milestones',
    'save_best_every_sec': 'the best checkpoint is checked at the end of each iteration (--save_best_metric, --save_best_after)',
}

# Sample Factory keys outside the model card's settings (command line, experiment bookkeeping, evaluation, PBT,
# W&B): ignored with the unknown keys, but never taken for a misspelling of a setting.
_OTHER_SAMPLE_FACTORY_KEYS = frozenset({
    'help', 'algo', 'env', 'experiment', 'train_dir', 'restart_behavior', 'pixel_format', 'use_record_episode_statistics',
    'command_line', 'cli_args', 'git_hash', 'git_repo_name', 'env_agents', 'train_script', 'enjoy_script', 'fps',
    'eval_env_frameskip', 'no_render', 'save_video', 'video_frames', 'video_name', 'max_num_frames', 'max_num_episodes',
    'push_to_hub', 'hf_repository', 'policy_index', 'eval_deterministic', 'with_wandb', 'with_pbt',
})
_OTHER_SAMPLE_FACTORY_PREFIXES = ('pbt_', 'wandb_')

KNOWN_KEYS = frozenset(SAMPLE_FACTORY_FLAGS) | frozenset(UNSUPPORTED_VALUES) | frozenset(NOT_APPLICABLE)

_KIND_NAMES = {
    'int': 'an integer',
    'float': 'a number',
    'bool': 'true or false',
    'str': 'a string',
    'int list': 'a list of integers',
    'str list or null': 'a list of strings or null',
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _converted(kind: str, value: Any) -> tuple[bool, Any]:
    """(whether `value` is of `kind`, the value as our flag takes it)."""
    if kind == 'int':
        return _is_int(value), value
    if kind == 'float':
        ok = (_is_int(value) or isinstance(value, float)) and math.isfinite(value)
        return ok, float(value) if ok else value
    if kind == 'bool':
        return isinstance(value, bool), value
    if kind == 'str':
        return isinstance(value, str), value
    if kind == 'int list':
        return isinstance(value, list) and all(_is_int(item) for item in value), value
    if kind == 'str list or null':
        return value is None or (isinstance(value, list) and all(isinstance(item, str) for item in value)), value
    raise AssertionError(f'unknown kind {kind!r}')


def _describe(values: tuple[Any, ...]) -> str:
    return ', '.join(json.dumps(value) for value in values)


def load_config(path: str) -> tuple[dict[str, Any], list[str]]:
    """Reads a Sample Factory configuration (a model card's JSON object of settings).

    Returns (flags, notes): `flags` maps our flag names (Sample Factory's names) to values for every
    `SAMPLE_FACTORY_FLAGS` key and every `UNSUPPORTED_VALUES` key with `flag=True` present in the file; lists
    stay lists and integers given for float settings become floats. Keys missing from the file are left to
    the flags' defaults. `notes` are the lines to print: the number of `NOT_APPLICABLE` keys found, then one line
    for each with its reason, and one warning listing every key that is not a setting we know (never dropped
    silently).

    Raises ValueError naming the file, in one line, when the file cannot be read, is not a JSON object, has an
    unknown key that looks like a misspelt setting (`did you mean ...?`), a value of the wrong type, or a
    value outside those accepted here.
    """
    try:
        with open(path, encoding='utf-8') as file:
            config = json.load(file)
    except OSError as error:
        raise ValueError(f'{path}: cannot read the Sample Factory config ({error.strerror or error})') from None
    except json.JSONDecodeError as error:
        raise ValueError(f'{path}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})') from None
    except UnicodeDecodeError:
        raise ValueError(f'{path}: not a UTF-8 text file, so not a Sample Factory config') from None
    if not isinstance(config, dict):
        raise ValueError(f'{path}: expected a JSON object of Sample Factory settings, got a JSON {type(config).__name__}')

    unknown = [key for key in config if key not in KNOWN_KEYS]
    for key in unknown:
        if key in _OTHER_SAMPLE_FACTORY_KEYS or key.startswith(_OTHER_SAMPLE_FACTORY_PREFIXES):
            continue
        close = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1, cutoff=0.8)
        if close:
            raise ValueError(f"{path}: unknown key '{key}'; did you mean '{close[0]}'?")

    flags: dict[str, Any] = {}
    not_applicable: list[str] = []
    for key, value in config.items():
        if key in NOT_APPLICABLE:
            not_applicable.append(key)
            continue
        if key not in KNOWN_KEYS:
            continue
        setting = SAMPLE_FACTORY_FLAGS.get(key) or UNSUPPORTED_VALUES[key]
        ok, value = _converted(setting.kind, value)
        if not ok:
            raise ValueError(f'{path}: {key} must be {_KIND_NAMES[setting.kind]}, got {json.dumps(value)}')
        if setting.choices and value not in setting.choices:
            if key in UNSUPPORTED_VALUES:
                raise ValueError(
                    f'{path}: {key}={json.dumps(value)} is not supported here; accepted: {_describe(setting.choices)} ({setting.how})'
                )
            raise ValueError(f'{path}: {key}={json.dumps(value)} is not a Sample Factory value; choose one of {_describe(setting.choices)}')
        if setting.flag:
            flags[key] = value

    notes: list[str] = []
    if not_applicable:
        notes.append(f'{path}: ignored {len(not_applicable)} settings that change nothing learned here:')
        notes += [f'  {key}: {NOT_APPLICABLE[key]}' for key in not_applicable]
    if unknown:
        notes.append(f'warning: {path}: ignored {len(unknown)} keys that are not Sample Factory settings known here:')
        notes += [f'  {key}' for key in unknown]
    return flags, notes


# Sample Factory's Atari names that are not the game's name without underscores (sf_examples/atari/atari_utils.py).
_SAMPLE_FACTORY_ATARI_ALIASES = {
    'montezuma': 'montezumarevenge',
    'asteroid': 'asteroids',
    'kongfumaster': 'kungfumaster',
}


def _sample_factory_atari_names() -> list[str]:
    """atari_<game> for every game our Atari environments accept."""
    names = []
    for rom_id in ale_py.roms.get_all_rom_ids():
        try:
            gym_env.atari_rom_id(rom_id)
        except ValueError:
            continue
        names.append('atari_' + rom_id.replace('_', ''))
    return sorted(names)


def atari_environment_name(name: str) -> str:
    """Our environment name for a Sample Factory one: `atari_amidar` -> `Amidar`, `atari_spaceinvaders` ->
    `SpaceInvaders`, `atari_montezuma` -> `MontezumaRevenge`; names not starting with `atari_` are returned
    unchanged. The game is looked up, ignoring case and underscores, among ale_py's games. Raises ValueError,
    naming close Sample Factory names, when no game matches."""
    prefix = 'atari_'
    if not name.startswith(prefix):
        return name
    game = name[len(prefix):].replace('_', '').lower()
    game = _SAMPLE_FACTORY_ATARI_ALIASES.get(game, game)
    try:
        rom_id = gym_env.atari_rom_id(game) if game else None
    except ValueError:
        rom_id = None
    if rom_id is None:
        close = difflib.get_close_matches(prefix + game, _sample_factory_atari_names(), n=3, cutoff=0.6)
        hint = f'closest: {", ".join(close)}' if close else 'e.g. atari_pong, atari_breakout, atari_amidar'
        raise ValueError(f'{name!r} names no Atari game; Sample Factory names are atari_<game> ({hint})')
    return rom_id_to_name(rom_id)


def import_model_card(path: str, run_settings: Any, out: Any = sys.stdout, err: Any = sys.stderr) -> Any:
    """APPO's settings (`appo.settings.AppoSettings`) with a Sample Factory config's (a model card's JSON), except those
    given explicitly on the command line (`run_settings.given_flags`: they win); `learning_rate` and `max_grad_norm`,
    where the card omits them, take Sample Factory's defaults (`SAMPLE_FACTORY_DEFAULTS`), not the run script's.
    Prints `load_config`'s notes (the warning about unknown keys on stderr); raises ValueError in one line, naming the
    file, for a value outside a setting's bounds or choices."""
    config, notes = load_config(path)
    given = run_settings.given_flags
    omitted = {name: value for name, value in SAMPLE_FACTORY_DEFAULTS.items() if name not in config and name not in given}
    if omitted:
        defaults = ', '.join(f'{name}={value:g}' for name, value in omitted.items())
        notes.append(f"{path} omits {', '.join(omitted)}: Sample Factory's defaults apply ({defaults})")
    config.update(omitted)
    fields = {field.name: field for field in type(run_settings).flag_fields(run_settings.environment_kind)}
    applied, elsewhere = {}, []
    for name, value in config.items():
        if name not in fields:
            elsewhere.append(name)  # env_frameskip / env_framestack in a classic-control run
            continue
        if name in given:
            continue
        problem = settings.field_problem(fields[name], value)
        if problem:
            raise ValueError(f'{path}: {problem}')
        applied[name] = value
    if elsewhere:
        notes.append(f'{path}: ignored {", ".join(elsewhere)} (Atari settings; this is not an Atari run)')
    for note in notes:
        print(note, file=err if note.startswith('warning:') else out, flush=True)
    return run_settings.with_values(applied)


def effective_recurrence(settings: AppoSettings) -> int:
    """Sample Factory's --recurrence: -1 means the whole rollout with a recurrent core, and 1 without one."""
    if settings.recurrence > 0:
        return settings.recurrence
    return settings.rollout if settings.use_rnn else 1


def layer_sizes(name: str, value: Any) -> list[int]:
    """The layer sizes of the list flag `name` (absl gives strings); raises ValueError in one line unless they are
    positive integers."""
    try:
        layers = [int(item) for item in value]
    except (TypeError, ValueError):
        raise ValueError(f'--{name} must be a list of positive integers, got {value!r}') from None
    if not layers or min(layers) < 1:
        raise ValueError(f'--{name} must be a list of positive integers, got {value!r}')
    return layers


def core_names(settings: AppoSettings) -> dict[str, Any]:
    """The values of the core's names (`main_loop.train_actors_and_learner`; `appo.settings.AppoCoreSettings`) for
    APPO's Sample Factory `settings`: workers -> actors, rollout -> unroll length, gamma -> discount, the Atari game
    and its frames, the rollouts of a batch and the buffers that hold them, max_policy_lag in updates, the budgets in
    agent steps (the flags given on the command line, `settings.given_flags`, keep --num_iterations). Raises
    ValueError naming the flags when they do not fit together."""
    names: dict[str, Any] = {}
    if settings.environment_kind == 'atari':
        names.update(
            environment_name=atari_environment_name(settings.environment_name),
            environment_frame_skip=settings.env_frameskip,
            environment_frame_stack=settings.env_framestack,
        )
    num_policies, rollout, envs, workers = settings.num_policies, settings.rollout, settings.num_envs_per_worker, settings.num_workers
    recurrence = effective_recurrence(settings)
    if rollout % recurrence:
        raise ValueError(f'--rollout={rollout} must be a multiple of --recurrence={recurrence}')
    if settings.use_rnn:
        if num_policies > 1:
            raise ValueError(f'--use_rnn=true takes one policy here (--num_policies={num_policies}): an environment may change policy mid-rollout, which would cut its chunks')
        if not settings.actor_critic_share_weights:
            raise ValueError('--use_rnn=true needs --actor_critic_share_weights=true (one recurrent core for both heads)')
        if settings.batch_size % recurrence:
            raise ValueError(f'--use_rnn=true: --batch_size={settings.batch_size} must be a multiple of --recurrence={recurrence} (minibatches of whole chunks)')
    batch_samples = settings.batch_size * settings.num_batches_per_epoch * num_policies
    rollout_samples = rollout * envs
    policies = f' x --num_policies={num_policies}' if num_policies > 1 else ''
    if batch_samples % rollout_samples:
        raise ValueError(
            f'--batch_size={settings.batch_size} x --num_batches_per_epoch={settings.num_batches_per_epoch}{policies} = {batch_samples} samples must be '
            f'a multiple of --rollout={rollout} x --num_envs_per_worker={envs} = {rollout_samples}: a training batch is made of whole rollouts'
        )
    batch_rollouts = batch_samples // rollout_samples
    if not settings.async_rl and batch_rollouts != workers:
        raise ValueError(
            f'--async_rl=false: every update takes one rollout of each worker, so --batch_size x --num_batches_per_epoch{policies} '
            f'(= {batch_samples}) must equal --num_workers x --num_envs_per_worker x --rollout (= {workers * rollout_samples})'
        )
    sgd_steps_per_update = settings.num_epochs * settings.num_batches_per_epoch
    budget = settings.train_for_env_steps  # Sample Factory's: frames per policy (0: --num_iterations x --num_train_steps)
    names.update(
        num_actors=workers,
        num_envs_per_actor=envs,
        unroll_length=rollout,
        discount=settings.gamma,
        batch_rollouts=batch_rollouts,
        # Enough buffers that the actors can collect num_batches_to_accumulate batches ahead of the learner.
        num_buffers_per_actor=max(2, math.ceil(settings.num_batches_to_accumulate * batch_rollouts / workers)),
        # Sample Factory drops samples lagging >= max_policy_lag SGD steps; the core drops rollouts lagging more than
        # its bound in updates, each num_epochs x num_batches_per_epoch SGD steps.
        sample_factory_max_policy_lag=settings.max_policy_lag,
        max_policy_lag=max(math.ceil(settings.max_policy_lag / sgd_steps_per_update) - 1, 0),
        # linear_decay's plan as Sample Factory makes it, in SGD steps per policy (0: the run's budget plans it)
        sample_factory_lr_decay_sgd_steps=max(budget // settings.batch_size * settings.num_epochs, 1) if budget > 0 else 0,
    )
    frames_per_step = settings.env_frameskip if settings.environment_kind == 'atari' and settings.summaries_use_frameskip else 1

    def agent_steps(frames_per_policy: int) -> int:
        """Sample Factory's env steps (frames per policy under summaries_use_frameskip) as the experiment counts env
        steps: agent steps of all policies (they share the environments, so the run takes about N times the budget)."""
        return math.ceil(frames_per_policy * num_policies / frames_per_step)

    if settings.save_best_after:
        names['save_best_after'] = agent_steps(settings.save_best_after)
    if budget > 0:
        names['train_for_env_steps'] = agent_steps(budget)
        if 'num_iterations' not in settings.given_flags:
            names['num_iterations'] = math.ceil(names['train_for_env_steps'] / settings.num_train_steps)
    return names


def linear_decay_sgd_steps(settings: AppoCoreSettings, total_updates: int) -> int:
    """The SGD steps per policy over which linear_decay takes the learning rate to 0. With --train_for_env_steps,
    Sample Factory's plan (`core_names` keeps it): train_for_env_steps // batch_size x num_epochs, with the budget
    in frames per policy under summaries_use_frameskip, so an Atari run ends near (1 - 1/env_frameskip) x
    learning_rate as Sample Factory's does. Without it the budget is --num_iterations x --num_train_steps (not a
    Sample Factory setting) of `total_updates` updates, and the plan is all their SGD steps: the rate reaches 0 at
    the end of the run."""
    if settings.sample_factory_lr_decay_sgd_steps > 0:
        return settings.sample_factory_lr_decay_sgd_steps
    return total_updates * settings.num_epochs * settings.num_batches_per_epoch
