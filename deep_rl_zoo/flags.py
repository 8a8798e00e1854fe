"""The command line of the run scripts, and the one step that settles a run's settings: the only module that knows absl.

A run script calls `define_settings(defaults, presets)` with its agent's settings (`<agent>/settings.py`: a
dataclass whose fields become the flags, with their help, bounds and theme; `defaults` is the instance whose values
are the flags' defaults), then `run(main)`: `main` receives the run's settings, resolved by `resolve_settings` from the
command line, the preset of --environment_name and the saved config of a resumed experiment before anything is
built. Flag names follow the original Deep RL Zoo. Bounds are checked by absl at parse time, so a bad value ends the
run with one line naming the flag (e.g. `error: flag --num_actors=0: 0 is not a positive integer`).
"""

import atexit
import contextlib
import importlib
import os
import re
import sys
import threading
import typing
from typing import Any, Callable, Iterator, Mapping, Optional

from absl import app, flags

from deep_rl_zoo import experiment as experiment_lib
from deep_rl_zoo import gradient_compression, gym_env
from deep_rl_zoo.checkpoint import CheckpointError
from deep_rl_zoo.distributed import ActorCrashError
from deep_rl_zoo.experiment import console_log

FLAGS = flags.FLAGS
_OWN_FLAG_NAMES: set[str] = set()  # flags defined here (not absl's own), saved in checkpoints
_DEFINED_BY: dict[str, str] = {}  # flag name -> the define_* group that defined it (for --help)
_THEME_OF: dict[str, str] = {}  # flag name -> its --help theme, for flags made of settings fields
_SCRIPT: dict[str, Any] = {}  # the run script's 'defaults' (a settings instance) and 'presets' (define_settings)


def _record_new_flags(define_group: Callable[..., None]) -> Callable[..., None]:
    def wrapper(*args: Any, **kwargs: Any) -> None:
        before = set(FLAGS)
        define_group(*args, **kwargs)
        new = set(FLAGS) - before
        _OWN_FLAG_NAMES.update(new)
        for name in new:
            _DEFINED_BY.setdefault(name, define_group.__name__)

    wrapper.__doc__ = define_group.__doc__
    return wrapper


def define_settings(defaults: Any, presets: Optional[Mapping[str, Any]] = None) -> None:
    """Defines a run script's flags, one per field of its agent's settings (`settings.Settings.flag_fields` for the
    environment kind of `defaults`), with the values of `defaults` as the flags' defaults; `presets` maps an
    environment name to its tuned settings (instances of the same class), applied by `resolve_settings`."""
    kind = getattr(defaults, 'environment_kind', None)  # eval_agent's settings have none: the checkpoint decides
    for field in type(defaults).flag_fields(kind or 'classic'):
        _define_field_flag(field, getattr(defaults, field.name), kind)
        _OWN_FLAG_NAMES.add(field.name)
        _THEME_OF[field.name] = field.metadata['theme']
    _register_validators()
    _SCRIPT.update(defaults=defaults, presets=dict(presets or {}))


def _define_field_flag(field: Any, default: Any, kind: Optional[str]) -> None:
    """The absl flag of one settings field: its type decides the kind of flag; bounds and choices from its metadata;
    a training script's --environment_name lists the names its `kind` of environment takes."""
    name, help_text_, metadata = field.name, field.metadata['help'], field.metadata
    if name == 'environment_name' and kind is not None:
        help_text_ = _environment_help(default, kind)
    bounds = {key: value for key, value in (('lower_bound', metadata['lower']), ('upper_bound', metadata['upper'])) if value is not None}
    if field.type is bool:
        flags.DEFINE_bool(name, default, help_text_)
    elif field.type is int:
        flags.DEFINE_integer(name, default, help_text_, **bounds)
    elif field.type is float:
        flags.DEFINE_float(name, default, help_text_, **bounds)
    elif field.type is str and metadata['choices']:
        flags.DEFINE_enum(name, default, list(metadata['choices']), help_text_)
    elif field.type is str:
        flags.DEFINE_string(name, default, help_text_)
    elif typing.get_origin(field.type) is tuple:
        flags.DEFINE_list(name, list(default), help_text_)
    else:
        raise TypeError(f'settings field {name}: no flag for type {field.type}')


def _register_validators() -> None:
    """The checks absl makes at parse time across flags (and of values whose message is not a bound's)."""
    if 'backend' in FLAGS:
        flags.register_validator('backend', _ray_is_installed, message='Ray is not installed; install it with: pip install -r requirements-ray.txt')
        flags.register_validator('ray_address', lambda address: address in ('', 'auto') or ':' in address and address.rsplit(':', 1)[1].isdigit(), message='must be "" (start a Ray instance), "auto" or HOST:PORT')
        flags.register_multi_flags_validator(['backend', 'ray_address'], lambda values: values['backend'] == 'ray' or not values['ray_address'], message='--ray_address needs --backend=ray')
    if 'num_buffers_per_actor' in FLAGS:
        flags.register_validator('num_buffers_per_actor', lambda buffers: buffers != 1, message='must be 0 (buffers for two batches) or at least 2')


def resolve_settings() -> Any:
    """The run's settings, settled once before anything is built: the script's defaults, then the preset of
    --environment_name (`apply_preset`; flags on the command line win), then the command line, with an Atari game
    under its canonical name; then, when the run resumes its experiment, the experiment's saved config where the
    command line does not override it (`experiment.prepare`, which also checks the output directories)."""
    defaults = _SCRIPT['defaults']
    apply_preset()
    settings = defaults.with_values({name: FLAGS[name].value for name in _OWN_FLAG_NAMES})
    if getattr(settings, 'environment_kind', '') == 'atari':
        try:
            settings = settings.replace(environment_name=gym_env.canonical_atari_name(settings.environment_name))
        except ValueError:  # no Atari game: creating the environment says so, with the script that takes it
            pass
    if type(settings).agent_name:  # APPO resolves its saved config itself, in Sample Factory's names
        values = settings.flag_values()
        settings = settings.with_values(experiment_lib.prepare(settings.agent_name, values, explicit_flags(values)))
    return settings


def explicit_flags(values: Mapping[str, Any]) -> frozenset[str]:
    """The names in `values` given on the command line (absl marks them present)."""
    return frozenset(name for name in values if name in FLAGS and FLAGS[name].present)


def _environment_help(default: str, kind: str | bool) -> str:
    """--environment_name's help: the names this run script takes (its kind follows from its default)."""
    if kind in ('atari', True):
        return 'Atari game: a short name (Pong, Breakout, Amidar, MontezumaRevenge, ...), also written ALE/Pong-v5 or PongNoFrameskip-v4.'
    if default == 'Pendulum-v1':
        return 'Continuous-control task: Pendulum-v1 or a MuJoCo v5 id (HalfCheetah-v5, Hopper-v5, ...).'
    return 'Classic-control task: CartPole-v1, LunarLander-v3, MountainCar-v0 or Acrobot-v1 (the curiosity agents also take MiniGrid-... ids).'


@_record_new_flags
def define_common(environment_name: str, *, atari: bool = False) -> None:
    """Flags of every run: environment, budget, seed, logging, checkpoints, optimiser basics."""
    flags.DEFINE_string('environment_name', environment_name, _environment_help(environment_name, atari))
    flags.DEFINE_enum('preset', 'auto', ['auto', 'none'], "Tuned settings for --environment_name from the agent's presets.py: auto applies them when there are some (flags given on the command line win), none turns them off.")
    flags.DEFINE_integer('seed', 1, 'Seed of every environment, network and sampler of the run.', lower_bound=0)
    flags.DEFINE_integer('num_iterations', 10, 'Training iterations; each trains, checkpoints, then evaluates.', lower_bound=0)
    flags.DEFINE_integer('num_train_steps', 50_000, 'Environment steps per training iteration (all environments together).', lower_bound=0)
    flags.DEFINE_integer('num_eval_steps', 5_000, 'Environment steps of greedy evaluation after each iteration (0 skips evaluation).', lower_bound=0)
    flags.DEFINE_float('discount', 0.99, 'Discount factor gamma.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('learning_rate', 3e-4, 'Adam learning rate.', lower_bound=0.0)
    flags.DEFINE_float('max_grad_norm', 0.5, 'Clip the global gradient norm to this (0 disables).', lower_bound=0.0)
    flags.DEFINE_bool('use_tensorboard', True, 'Write TensorBoard logs under --runs_dir (--nouse_tensorboard to disable).')
    flags.DEFINE_string('runs_dir', 'runs', 'Directory of TensorBoard runs.')
    flags.DEFINE_string('tag', '', 'Extra name added to the run directory.')
    flags.DEFINE_integer('debug_screenshots_interval', 0, 'Log an observation image every N environment steps (0 disables).', lower_bound=0)
    flags.DEFINE_string('results_csv_path', '', 'CSV file of per-iteration results (default: <checkpoint_dir>/<agent>_<env>_results.csv).')
    flags.DEFINE_string('episodes_csv_path', '', 'Also log every training episode (unix time, env steps, raw return, length) to this CSV.')
    # the experiment: its directory, restarts, checkpoints and budgets (experiment.py)
    flags.DEFINE_string('experiment', '', 'Name of the experiment (default <AGENT>_<env>[_<tag>]): its directory <train_dir>/<experiment> holds config.json, log.txt, checkpoints and the results CSV.')
    flags.DEFINE_string('train_dir', 'checkpoints', 'Directory of the experiments.')
    flags.DEFINE_string('checkpoint_dir', '', 'Write checkpoints and the results CSV here instead of the experiment directory.')
    flags.DEFINE_enum('restart_behavior', 'resume', ['resume', 'restart', 'overwrite'], 'When the experiment exists: resume from its latest checkpoint with its saved config (flags given on the command line override it), restart (move the old directory aside) or overwrite (delete it).')
    flags.DEFINE_enum('load_checkpoint_kind', 'latest', ['latest', 'best'], 'Which checkpoint of the experiment a resumed run starts from.')
    flags.DEFINE_string('load_checkpoint_file', '', 'Resume training from this checkpoint file (network, optimizer and counters) instead, with this command\'s flags.')
    flags.DEFINE_integer('save_every_sec', 120, 'Also write a checkpoint this often during an iteration (0: only at the end of iterations and at a stop).', lower_bound=0)
    flags.DEFINE_integer('keep_checkpoints', 2, 'Periodic checkpoints kept (the newest); iteration checkpoints are milestones, kept unless --nokeep_milestones.', lower_bound=1)
    flags.DEFINE_bool('keep_milestones', True, 'Keep every iteration\'s checkpoint (--nokeep_milestones: they count in --keep_checkpoints).')
    flags.DEFINE_enum('save_best_metric', 'eval_return', ['eval_return', 'reward', 'none'], 'Keep <AGENT>_<env>_best.ckpt, replaced only when this improves: the greedy evaluation\'s mean return, or (Sample Factory\'s reward) the training episodes\' mean return.')
    flags.DEFINE_integer('save_best_after', 0, 'Env steps before a best checkpoint is kept (lucky early episodes do not count).', lower_bound=0)
    flags.DEFINE_integer('train_for_seconds', 0, 'End training (with a checkpoint and a results row) after this many seconds of training (0: no limit).', lower_bound=0)
    flags.DEFINE_integer('train_for_env_steps', 0, 'End training (with a checkpoint and a results row) after this many env steps (0: no limit).', lower_bound=0)
    flags.DEFINE_bool('save_replay', False, 'Replay agents: checkpoints also hold the replay memory (snappy-compressed), so a resumed run learns at once.')
    flags.DEFINE_bool('progress', True, 'Print a live progress line (env steps, frames/s, recent return, time left).')
    flags.DEFINE_integer('learner_threads', 1, 'Torch threads of the learning process (actor processes always use 1).', lower_bound=1)
    if atari:
        flags.DEFINE_integer('environment_height', 84, 'Atari frame height after resizing.', lower_bound=8)
        flags.DEFINE_integer('environment_width', 84, 'Atari frame width after resizing.', lower_bound=8)
        flags.DEFINE_integer('environment_frame_skip', 4, 'Atari frames per agent step (max-pooled over the last two).', lower_bound=1)
        flags.DEFINE_integer('environment_frame_stack', 4, 'Atari frames stacked into one observation.', lower_bound=1)
        flags.DEFINE_integer('max_episode_frames', 108_000, 'Atari episode cap in emulator frames (30 minutes of play).', lower_bound=1)
        flags.DEFINE_integer('max_noop_actions', 30, 'At most this many no-op actions after each reset.', lower_bound=0)
        flags.DEFINE_bool('clip_reward', True, 'Learn from sign-clipped rewards (scores are still reported raw).')
        flags.DEFINE_bool('terminal_on_life_loss', True, 'Treat a lost life as terminal for learning (episodes still last whole games).')


@_record_new_flags
def define_distributed(num_actors: int, num_envs_per_actor: int) -> None:
    """Flags of the actors + learner loop."""
    flags.DEFINE_integer('num_actors', num_actors, 'Actor processes, each stepping a vector of environments.', lower_bound=1)
    flags.DEFINE_integer('num_envs_per_actor', num_envs_per_actor, 'Environments each actor steps with one batched forward pass.', lower_bound=1)
    flags.DEFINE_bool('actors_on_gpu', False, 'Run actors on local GPUs (spread round-robin) when there are any.')
    flags.DEFINE_bool('learner_on_gpu', True, 'Run the learner on the first GPU when there is one.')
    flags.DEFINE_bool('restart_actors', False, 'Restart an actor process that dies or raises (at most 10 times each) instead of stopping the run.')
    flags.DEFINE_enum('backend', 'local', ['local', 'ray'], 'Where actors run: local processes, or Ray actors on this machine or a Ray cluster (docs/ray.md).')
    flags.DEFINE_string('ray_address', '', '--backend=ray: the cluster to join, "auto" (the one this machine belongs to) or HOST:PORT of its head; "" starts a Ray instance for the run.')
    flags.DEFINE_float('ray_num_cpus_per_actor', 1.0, '--backend=ray: CPUs Ray reserves for each actor.', lower_bound=0.0)
    flags.DEFINE_float('ray_num_gpus_per_actor', 0.0, '--backend=ray: GPUs (a fraction shares one) Ray reserves for each actor, which then acts on its GPU.', lower_bound=0.0)
    flags.register_validator('backend', _ray_is_installed, message='Ray is not installed; install it with: pip install -r requirements-ray.txt')
    flags.register_validator('ray_address', lambda address: address in ('', 'auto') or ':' in address and address.rsplit(':', 1)[1].isdigit(), message='must be "" (start a Ray instance), "auto" or HOST:PORT')
    flags.register_multi_flags_validator(['backend', 'ray_address'], lambda values: values['backend'] == 'ray' or not values['ray_address'], message='--ray_address needs --backend=ray')


def _ray_is_installed(backend: str) -> bool:
    """--backend=ray needs Ray, an optional dependency (looked up, not imported: the core never imports it)."""
    import importlib.util

    return backend != 'ray' or importlib.util.find_spec('ray') is not None


@_record_new_flags
def define_asynchronous(batch_rollouts: int, max_policy_lag: int) -> None:
    """Flags of the asynchronous actors + learner loop (IMPALA, APPO): actors never wait for the learner."""
    flags.DEFINE_integer(
        'num_buffers_per_actor', 0,
        'Rollout buffers per actor (>= 2): it fills free ones while the learner trains on the others. 0: enough for two batches, '
        'max(2, ceil(2 x batch_rollouts / num_actors)), so the actors fill the next batch during each update.', lower_bound=0,
    )  # fmt: skip
    flags.register_validator('num_buffers_per_actor', lambda buffers: buffers != 1, message='must be 0 (buffers for two batches) or at least 2')
    flags.DEFINE_integer('batch_rollouts', batch_rollouts, 'Rollouts per learner update, taken in arrival order.', lower_bound=1)
    flags.DEFINE_integer('max_policy_lag', max_policy_lag, 'Drop rollouts made by parameters more than this many updates older than the learner\'s (0: only current ones).', lower_bound=0)


def _define_eval_exploration_epsilon() -> None:
    flags.DEFINE_float('eval_exploration_epsilon', 0.01, 'Epsilon of the evaluation actor of Q agents.', lower_bound=0.0, upper_bound=1.0)


@_record_new_flags
def define_eval(*, epsilon_greedy: bool = False) -> None:
    """Flags of eval_agent (environment settings such as frame stacking come from the checkpoint); `epsilon_greedy`
    adds --eval_exploration_epsilon."""
    if epsilon_greedy:
        _define_eval_exploration_epsilon()
    flags.DEFINE_string('environment_name', '', 'Environment to play; must match the checkpoint ("" takes it from the checkpoint).')
    flags.DEFINE_string('load_checkpoint_file', '', 'Checkpoint to evaluate (required).')
    flags.DEFINE_integer('num_eval_steps', 5_000, 'Environment steps to play (whole episodes are reported).', lower_bound=1)
    flags.DEFINE_integer('num_eval_episodes', 0, 'Stop after this many episodes instead (0: use --num_eval_steps).', lower_bound=0)
    flags.DEFINE_integer('seed', 1, 'Seed of the environment and of action sampling.', lower_bound=0)
    flags.DEFINE_string('recording_video_dir', 'recordings', 'Directory of the mp4 of the first episode ("" disables recording).')
    flags.DEFINE_integer('max_num_episodes', 0, 'Stop after at most this many episodes, whichever of this and the steps comes first (0: no bound).', lower_bound=0)
    flags.DEFINE_bool('push_to_hub', False, 'Then write a model folder (model card, checkpoint, config, video) and upload it to --hf_repository with huggingface_hub.')
    flags.DEFINE_string('hf_repository', '', 'With --push_to_hub: the Hugging Face Hub model repository, USER/NAME.')
    flags.DEFINE_string('hub_folder', '', 'With --push_to_hub: where the model folder is written (default hub/<NAME>); it stays after the upload.')
    flags.DEFINE_bool('hub_upload', True, 'With --push_to_hub: upload the folder; --nohub_upload only writes it and prints the command that uploads it later (offline machines).')


def set_defaults(**defaults: Any) -> None:
    """Give the flags of one run script its own defaults (e.g. learning_rate=2.5e-4)."""
    for name, value in defaults.items():
        if name not in FLAGS:
            raise KeyError(f'set_defaults: no flag named {name!r} is defined')
        FLAGS.set_default(name, value)


def flag_values() -> dict[str, Any]:
    """The run's flags as plain values, for checkpoints and the experiment's saved config."""
    return {name: FLAGS[name].value for name in sorted(_OWN_FLAG_NAMES)}


# --help: define_common's flags by theme; other groups by where they come from.
_COMMON_THEMES = {
    'environment': ('environment_name', 'preset', 'seed', 'environment_height', 'environment_width', 'environment_frame_skip', 'environment_frame_stack',
                    'max_episode_frames', 'max_noop_actions', 'clip_reward', 'terminal_on_life_loss'),
    'training': ('num_iterations', 'num_train_steps', 'num_eval_steps', 'train_for_seconds', 'train_for_env_steps', 'discount', 'learning_rate',
                 'max_grad_norm', 'learner_threads'),
    'logging': ('use_tensorboard', 'runs_dir', 'tag', 'progress', 'debug_screenshots_interval', 'results_csv_path', 'episodes_csv_path'),
    'checkpoints': ('experiment', 'train_dir', 'checkpoint_dir', 'restart_behavior', 'load_checkpoint_kind', 'load_checkpoint_file', 'save_every_sec',
                    'keep_checkpoints', 'keep_milestones', 'save_best_metric', 'save_best_after', 'save_replay'),
}  # fmt: skip
_GROUP_THEMES = {'define_distributed': 'actors and learner', 'define_asynchronous': 'actors and learner', 'define_eval': 'evaluation'}
HELP_THEMES = ('environment', 'training', 'agent', 'actors and learner', 'evaluation', 'logging', 'checkpoints')


def _theme(name: str) -> str:
    if name in _THEME_OF:
        return _THEME_OF[name]
    for theme, names in _COMMON_THEMES.items():
        if name in names:
            return theme
    return _GROUP_THEMES.get(_DEFINED_BY.get(name, ''), 'agent')


def _shown(value: Any) -> str:
    """A default as it is typed on the command line."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value)
    return "''" if value in ('', None) else str(value)


_SCRIPT_MODULE = re.compile(r'deep_rl_zoo\.(\w+)\.(run_\w+|eval_agent)')


@contextlib.contextmanager
def script_flags(module_name: str) -> Iterator[Any]:
    """Imports a run script (or eval_agent) afresh, which defines its flags in absl's FLAGS, and yields the module;
    afterwards its flags, this module's record of them and the imported scripts are removed again, so the next script
    imported defines its own (the docs' flag page and the README command checks read every script in one process)."""
    before, own, defined_by, themes, script = set(FLAGS), set(_OWN_FLAG_NAMES), dict(_DEFINED_BY), dict(_THEME_OF), dict(_SCRIPT)
    try:
        yield importlib.import_module(module_name)
    finally:
        FLAGS.unparse_flags()
        for name in set(FLAGS) - before:
            delattr(FLAGS, name)
        _OWN_FLAG_NAMES.clear()
        _OWN_FLAG_NAMES.update(own)
        _DEFINED_BY.clear()
        _DEFINED_BY.update(defined_by)
        _THEME_OF.clear()
        _THEME_OF.update(themes)
        _SCRIPT.clear()
        _SCRIPT.update(script)
        for name in [name for name in sys.modules if _SCRIPT_MODULE.fullmatch(name)]:
            del sys.modules[name]
            package, script = name.rsplit('.', 1)
            if hasattr(sys.modules.get(package), script):  # `from deep_rl_zoo.a2c import run_classic` would find it there
                delattr(sys.modules[package], script)


def help_text(script_doc: str) -> str:
    """--help: the run script's docstring, then its own flags by theme, each with its default and help."""
    lines = [script_doc.strip(), '', 'Flags (--name=value; booleans also --name / --noname):']
    by_theme: dict[str, list[str]] = {}
    for name in sorted(_OWN_FLAG_NAMES):
        by_theme.setdefault(_theme(name), []).append(name)
    for theme in HELP_THEMES:
        if theme not in by_theme:
            continue
        lines += ['', f'{theme}:']
        for name in by_theme[theme]:
            flag = FLAGS[name]
            lines.append(f'  --{name}={_shown(flag.default)}'.ljust(40) + f' {flag.help}')
    lines += ['', "absl's own flags (--flagfile, logging verbosity, ...): --helpfull"]
    return '\n'.join(lines)


def run(main: Callable[[Any], None]) -> None:
    """absl's app.run of `main(settings)` with the run's settings (`resolve_settings`), where a bad environment name,
    flag combination or checkpoint ends with one clear line; --help (-h) prints `help_text` and exits 0."""
    if any(argument in ('--help', '-h', '--helpshort', '-?') for argument in sys.argv[1:]):
        print(help_text(sys.modules['__main__'].__doc__ or ''))
        sys.exit(0)

    def guarded_main(argv: list[str]) -> None:
        if len(argv) > 1:
            sys.exit(f'error: unexpected arguments {argv[1:]}; every option is a --flag=value')
        with console_log():  # all the console shows, for the experiment's log.txt
            try:
                if _SCRIPT:
                    main(resolve_settings())
                else:  # TRANSITION
                    _apply_package_preset()
                    main()
            except (ValueError, CheckpointError, ActorCrashError) as error:
                sys.exit(f'error: {error}')

    def parse_flags(argv: list[str]) -> list[str]:
        try:
            return FLAGS(argv)
        except flags.Error as error:
            sys.exit(f'error: {error}')

    try:
        app.run(guarded_main, flags_parser=parse_flags)
    except SystemExit as exit_request:
        _exit_without_teardown(exit_request.code)


def _exit_without_teardown(code: Any) -> None:
    """Ends the process as the interpreter would at `sys.exit(code)` (its message, non-daemon threads, exit handlers,
    flushed streams), but without the teardown that follows: freeing every module and object of torch costs about
    1.5 s of CPU, more than 5 s on a busy machine, and a stop must end the run within 5 s of its signal (docs/training.md)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    try:
        threading._shutdown()  # pylint: disable=protected-access  (what the interpreter does first at exit)
        atexit._run_exitfuncs()  # pylint: disable=protected-access
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


# TRANSITION: the run scripts not yet on settings dataclasses (removed once every agent has its settings.py).
def _script_package() -> str:
    """The agent package of the running script (`deep_rl_zoo.ppo` for `python -m deep_rl_zoo.ppo.run_classic`), or ''."""
    spec = getattr(sys.modules.get('__main__'), '__spec__', None)
    parts = spec.name.split('.') if spec is not None else []
    return '.'.join(parts[:2]) if len(parts) == 3 and parts[0] == 'deep_rl_zoo' else ''


def _apply_package_preset() -> dict[str, Any]:
    """Applies the agent's tuned settings for --environment_name (`PRESETS` of the package's presets.py), except
    flags given on the command line, and prints which it set; returns them. --preset=none applies nothing."""
    if 'preset' not in FLAGS or FLAGS.preset == 'none':
        return {}
    package = _script_package()
    if not package:
        return {}
    try:
        module = importlib.import_module(f'{package}.presets')
    except ModuleNotFoundError:
        return {}
    environment = FLAGS.environment_name
    preset = module.PRESETS.get(environment)
    if preset is None:
        return {}
    applied, overridden = {}, []
    for name, value in preset.items():
        if name not in FLAGS:
            raise ValueError(f'{package.replace(".", "/")}/presets.py: the {environment} preset sets --{name}, which this script does not define')
        if FLAGS[name].present:
            overridden.append(name)
            continue
        setattr(FLAGS, name, value)
        applied[name] = value
    given = f'; from the command line instead: {", ".join("--" + name for name in overridden)}' if overridden else ''
    print(f'preset {environment} ({package.replace(".", "/")}/presets.py, --preset=none to turn it off): '
          + ' '.join(f'--{name}={_shown(value)}' for name, value in applied.items()) + given, flush=True)
    return applied


def apply_preset() -> dict[str, Any]:
    """Applies the tuned settings of --environment_name (the `presets` of `define_settings`: an instance of the
    agent's settings) where they differ from the script's defaults, except flags given on the command line, and prints
    which it set; returns them. --preset=none applies nothing."""
    preset = _SCRIPT['presets'].get(FLAGS.environment_name) if 'preset' in FLAGS and FLAGS.preset != 'none' else None
    defaults = _SCRIPT['defaults']
    if preset is None or preset.environment_kind != defaults.environment_kind:
        return {}
    applied, overridden = {}, []
    for name, value in preset.flag_values().items():
        if name == 'environment_name' or name not in _OWN_FLAG_NAMES or value == defaults.flag_values()[name]:
            continue
        if FLAGS[name].present:
            overridden.append(name)
            continue
        setattr(FLAGS, name, value)
        applied[name] = value
    source = f'{type(defaults).__module__.replace(".", "/")}.py'
    given = f'; from the command line instead: {", ".join("--" + name for name in overridden)}' if overridden else ''
    print(f'preset {FLAGS.environment_name} ({source}, --preset=none to turn it off): '
          + ' '.join(f'--{name}={_shown(value)}' for name, value in applied.items()) + given, flush=True)
    return applied


def _define_num_envs(default: int) -> None:
    """--num_envs, shared by the single-process agents (each family with its own default)."""
    flags.DEFINE_integer('num_envs', default, 'Environments stepped together by the acting loop.', lower_bound=1)


def _define_loss_weights(entropy_coef: float) -> None:
    """--entropy_coef and --value_coef, shared by the policy-gradient agents (each with its own entropy default)."""
    flags.DEFINE_float('entropy_coef', entropy_coef, 'Weight of the entropy bonus.', lower_bound=0.0)
    flags.DEFINE_float('value_coef', 0.5, 'Weight of the value (baseline) loss.', lower_bound=0.0)


def _define_replay() -> None:
    """Replay, minibatch and target-network flags, shared by the replay-based agents (DQN's family, SAC)."""
    flags.DEFINE_integer('replay_capacity', 100_000, 'Transitions kept in replay.', lower_bound=1)
    flags.DEFINE_integer('min_replay_size', 1_000, 'Transitions in replay before learning starts.', lower_bound=1)
    flags.DEFINE_bool('compress_replay', False, 'Store observations snappy-compressed in replay.')
    flags.DEFINE_integer('batch_size', 32, 'Minibatch size of each update.', lower_bound=1)
    flags.DEFINE_float('adam_eps', 1e-8, "Adam's epsilon (C51 and Rainbow use 0.01/batch_size on Atari).", lower_bound=0.0)
    flags.DEFINE_integer('n_step', 1, 'Steps of reward summed before bootstrapping (1 is the paper DQN).', lower_bound=1)
    flags.DEFINE_integer('learn_interval', 4, 'Environment steps between updates.', lower_bound=1)
    flags.DEFINE_integer('target_network_update_interval', 2_500, 'Updates between target network refreshes.', lower_bound=1)


@_record_new_flags
def define_value_learning() -> None:
    """Flags of the replay-based value agents (DQN and its family)."""
    _define_replay()
    flags.DEFINE_float('exploration_epsilon_begin_value', 1.0, 'Exploration epsilon at the start of training.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('exploration_epsilon_end_value', 0.01, 'Exploration epsilon after the decay.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_integer('exploration_epsilon_decay_step', 100_000, 'Environment steps of the linear epsilon decay.', lower_bound=0)
    _define_eval_exploration_epsilon()
    _define_num_envs(1)
    _define_bf16_learning()


def _define_bf16_learning() -> None:
    """--bf16_learning, shared by the replay-based value agents (DQN's family, R2D2's)."""
    flags.DEFINE_bool(
        'bf16_learning', False,
        "Run the Nature CNN torsos of the learner's forward passes under bfloat16 autocast: faster on CPUs with AVX-512 "
        "BF16 or AMX (on a 2-core Xeon with AMX: DQN's update 1.2x; R2D2's gradient step 1.7x and NGU's 1.5x with "
        '--learner_threads=1, erratic with 2 threads on a busy machine) and on recent GPUs, slower on older CPUs; heads, '
        'LSTMs, losses, gradients and Adam stay float32, the loss moves by about 1%.',
    )


# Defaults the replay-based Q agents start from; each run script then sets only what its algorithm changes.
# CartPole: DQN's tuned settings (it solves CartPole-v1 in 130-150k env steps with them).
VALUE_CLASSIC_DEFAULTS: dict[str, Any] = dict(
    num_iterations=4,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=5e-4,
    max_grad_norm=10.0,
    replay_capacity=50_000,
    min_replay_size=1_000,
    batch_size=64,
    n_step=1,
    learn_interval=1,
    target_network_update_interval=1_000,
    exploration_epsilon_decay_step=20_000,
)
# Atari: Nature DQN (Mnih et al. 2015, Extended Data Table 1; env steps = frames / 4), with Adam in place of RMSProp.
VALUE_ATARI_DEFAULTS: dict[str, Any] = dict(
    num_iterations=50,
    num_train_steps=250_000,
    num_eval_steps=125_000,
    learning_rate=1e-4,
    max_grad_norm=10.0,
    discount=0.99,
    replay_capacity=1_000_000,
    min_replay_size=50_000,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=2_500,
    exploration_epsilon_decay_step=1_000_000,
    exploration_epsilon_end_value=0.1,
)

# The budget of every agent's Pong preset (its presets.py): 2M agent steps (8M frames) as 20 iterations of 100k, each
# followed by a greedy evaluation of at most 20k agent steps (whole games only: 2 to 20 of them).
PONG_BUDGET: dict[str, Any] = dict(num_iterations=20, num_train_steps=100_000, num_eval_steps=20_000)


@_record_new_flags
def define_prioritized_replay() -> None:
    """Flags of proportional prioritized replay (Schaul et al. 2016): priorities |td| ** alpha, IS weights ** beta."""
    flags.DEFINE_float('priority_exponent', 0.6, 'alpha: sampling probability is proportional to priority ** alpha (0 is uniform).', lower_bound=0.0)
    flags.DEFINE_float('importance_sampling_exponent_begin_value', 0.4, 'beta of the importance-sampling weights at the start of training.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('importance_sampling_exponent_end_value', 1.0, 'beta after its linear annealing (1 fully corrects the sampling bias).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_integer('importance_sampling_exponent_decay_step', 100_000, 'Environment steps over which beta is annealed.', lower_bound=0)
    flags.DEFINE_float('priority_eps', 1e-6, 'Added to |td error| so that no transition has priority zero (must be > 0).', lower_bound=0.0)


@_record_new_flags
def define_categorical() -> None:
    """Flags of the categorical return distribution (C51, Bellemare et al. 2017; Rainbow)."""
    flags.DEFINE_integer('num_atoms', 51, 'Atoms of the fixed support of the return distribution.', lower_bound=2)
    flags.DEFINE_float('v_min', -10.0, 'Lowest atom of the support.')
    flags.DEFINE_float('v_max', 10.0, 'Highest atom of the support.')


@_record_new_flags
def define_quantile() -> None:
    """Flags of quantile regression agents (QR-DQN, Dabney et al. 2017; IQN, Dabney et al. 2018)."""
    flags.DEFINE_integer('num_quantiles', 200, 'QR-DQN: fixed quantile midpoints per action.', lower_bound=1)
    flags.DEFINE_float('huber_param', 1.0, 'kappa of the quantile Huber loss (0 gives the plain quantile loss).', lower_bound=0.0)
    flags.DEFINE_integer('tau_samples_s_tm1', 64, 'IQN: N, tau samples for the online quantiles at s_tm1.', lower_bound=1)
    flags.DEFINE_integer('tau_samples_s_t', 64, "IQN: N', tau samples for the target quantiles at s_t.", lower_bound=1)
    flags.DEFINE_integer('tau_samples_policy', 32, 'IQN: K, tau samples averaged to choose actions.', lower_bound=1)
    flags.DEFINE_integer('tau_embed_dim', 64, 'IQN: cosine basis functions of the tau embedding.', lower_bound=1)


@_record_new_flags
def define_noisy_dueling() -> None:
    """Flags of noisy linear layers (Fortunato et al. 2018) in a dueling head (Wang et al. 2016)."""
    flags.DEFINE_float('noisy_sigma', 0.5, 'sigma_0 of factorised Gaussian noisy layers (initial sigma = sigma_0 / sqrt(fan_in)).', lower_bound=0.0)


@_record_new_flags
def define_recurrent_replay() -> None:
    """Flags of recurrent Q agents learning from sequences (DRQN, Hausknecht & Stone 2015)."""
    flags.DEFINE_integer('unroll_length', 10, 'Steps per replayed sequence (the paper unrolls 10).', lower_bound=1)
    flags.DEFINE_integer('burn_in', 0, 'Leading steps of each sequence that only warm up the LSTM state (R2D2); 0 is the paper.', lower_bound=0)
    define_obscured_observations()


@_record_new_flags
def define_obscured_observations() -> None:
    """--obscure_probability (flickering observations, Hausknecht & Stone 2015): the recurrent agents', and DQN's for
    the side-by-side comparison with them."""
    flags.DEFINE_float('obscure_probability', 0.0, 'Flickering observations: chance each observation is replaced by a blank one (the DRQN paper uses 0.5 on Atari).', lower_bound=0.0, upper_bound=1.0)


@_record_new_flags
def define_r2d2() -> None:
    """Flags of R2D2 (Kapturowski et al. 2019): asynchronous epsilon-greedy actors feeding a prioritized replay of
    overlapping sequences (`define_recurrent_replay`'s unroll_length and burn_in, `define_prioritized_replay`'s
    alpha and beta), transformed n-step double-Q targets; sizes of replay and batches count sequences."""
    define_recurrent_replay()
    define_prioritized_replay()
    flags.DEFINE_integer('replay_capacity', 10_000, 'Sequences kept in replay (each burn_in + unroll_length steps; the memory per sequence is logged).', lower_bound=1)
    flags.DEFINE_integer('min_replay_size', 100, 'Sequences in replay before learning starts.', lower_bound=1)
    flags.DEFINE_bool('compress_replay', False, 'Store each sequence\'s observations snappy-compressed in replay.')
    flags.DEFINE_integer('batch_size', 32, 'Sequences per gradient step.', lower_bound=1)
    flags.DEFINE_float('adam_eps', 1e-3, "Adam's epsilon (1e-3 in the paper).", lower_bound=0.0)
    flags.DEFINE_integer('n_step', 5, 'Rewards summed before bootstrapping (5 in the paper).', lower_bound=1)
    flags.DEFINE_integer('learn_interval', 4, 'Environment steps (all actors together) added to replay per gradient step.', lower_bound=1)
    flags.DEFINE_integer('target_network_update_interval', 2_500, 'Gradient steps between target network copies (2,500 in the paper).', lower_bound=1)
    flags.DEFINE_integer('actor_update_interval', 400, 'Steps each actor environment takes between picks of the newest parameters: the rollout length (400 in the paper).', lower_bound=1)
    flags.DEFINE_float('priority_eta', 0.9, 'eta: sequence priority = eta max |td| + (1 - eta) mean |td| (0.9 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('value_rescaling_eps', 1e-3, 'eps of the value rescaling h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x (1e-3 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('exploration_epsilon_base', 0.4, 'Ape-X epsilon ladder: environment i of N acts with base^(1 + alpha i / (N - 1)); base alone when N = 1.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('exploration_epsilon_alpha', 7.0, 'alpha of the Ape-X epsilon ladder (7 in the paper).', lower_bound=0.0)
    _define_eval_exploration_epsilon()
    _define_bf16_learning()


@_record_new_flags
def define_ngu(*, agent57: bool = False) -> None:
    """Flags of NGU (Badia et al. 2020, "Never Give Up"; defaults are its appendix F values) on R2D2's
    (`define_r2d2`, without n_step and discount: NGU learns by Retrace with the discounts of its N policies), and with
    `agent57` the meta-controller's of Agent57 (Badia et al. 2020). Call after `define_common`."""
    define_r2d2()
    _hide_flags('n_step', 'discount')
    flags.DEFINE_integer('num_policies', 32, 'N: policies (beta_j, gamma_j) learned by one network; policy 0 exploits (32 in the paper).', lower_bound=2)
    flags.DEFINE_float('intrinsic_reward_beta', 0.3, 'beta of the most exploratory policy: policy j learns r^e + beta_j r^i (0.3 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('gamma_max', 0.997, 'Discount of policy 0 (0.997 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('gamma_min', 0.99, 'Discount of policy N - 1 (0.99 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('retrace_lambda', 0.95, 'lambda of the Retrace traces c = lambda min(1, pi / mu) (0.95 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('intrinsic_learning_rate', 5e-4, 'Adam learning rate of the embedding network and the RND predictor (5e-4 in the paper).', lower_bound=0.0)
    flags.DEFINE_integer('intrinsic_train_steps', 5, 'Last real steps of each replayed sequence that train the embedding and RND (5 in the paper).', lower_bound=1)
    flags.DEFINE_integer('episodic_memory_capacity', 30_000, 'Embeddings kept in each environment\'s episodic memory (30,000 in the paper).', lower_bound=1)
    flags.DEFINE_integer('num_neighbours', 10, 'k of the episodic k-nearest-neighbour bonus (10 in the paper).', lower_bound=1)
    flags.DEFINE_float('kernel_epsilon', 1e-4, 'epsilon of the kernel K = epsilon / (d^2 / d_m^2 + epsilon) (1e-4 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('pseudo_count_constant', 1e-3, 'c of the episodic reward 1 / (sqrt(sum K) + c) (1e-3 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('cluster_distance', 8e-3, 'xi: normalised squared distances below it count as 0 (0.008 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('max_similarity', 8.0, 's_max: no episodic reward where sqrt(sum K) + c exceeds it (8 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('max_lifelong_modulation', 5.0, 'L: the lifelong factor 1 + (err - mean) / std is clipped to [1, L] (5 in the paper).', lower_bound=1.0)
    if agent57:
        flags.DEFINE_integer('ucb_window_size', 160, 'Episodes of each environment the meta-controller\'s sliding-window UCB looks back on.', lower_bound=1)
        flags.DEFINE_float('ucb_beta', 1.0, 'beta of the UCB bonus beta sqrt(1 / N(j)).', lower_bound=0.0)
        flags.DEFINE_float('ucb_epsilon', 0.5, 'Chance the meta-controller picks a uniformly random policy for an episode.', lower_bound=0.0, upper_bound=1.0)


@_record_new_flags
def define_ppo() -> None:
    """Flags of PPO (Schulman et al. 2017) and its on-policy relatives."""
    flags.DEFINE_integer('unroll_length', 128, 'Steps each environment contributes to one rollout.', lower_bound=1)
    flags.DEFINE_integer('num_epochs', 4, 'Passes over each batch of rollouts.', lower_bound=1)
    flags.DEFINE_integer('num_minibatches', 4, 'Minibatches each pass is split into.', lower_bound=1)
    flags.DEFINE_float('clip_epsilon', 0.1, 'PPO ratio clip range epsilon.', lower_bound=0.0)
    flags.DEFINE_bool('clip_value', True, 'Clip the value update to the same range (PPO implementations detail).')
    _define_loss_weights(entropy_coef=0.01)
    flags.DEFINE_float('gae_lambda', 0.95, 'GAE lambda.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_bool('normalize_advantages', True, 'Normalise advantages per minibatch.')
    flags.DEFINE_bool('anneal_learning_rate', True, 'Decay the learning rate linearly to 0 over the run.')
    flags.DEFINE_bool('anneal_clip_epsilon', False, 'Decay the clip range linearly to 0 over the run.')
    _define_observation_and_reward_scaling()


def _define_observation_and_reward_scaling() -> None:
    """rl-baselines3-zoo's `normalize` (its VecNormalize) as two flags of the on-policy agents (PPO, A2C)."""
    flags.DEFINE_bool('normalize_observations', False, 'Normalise vector observations by their running mean and std (classic and continuous control).')
    flags.DEFINE_bool('scale_rewards', False, 'Divide rewards by the running std of the discounted return.')


@_record_new_flags
def define_ppo_icm() -> None:
    """Flags of PPO with the intrinsic curiosity module (Pathak et al. 2017): `define_ppo` and the module's own."""
    define_ppo()
    flags.DEFINE_float('icm_beta', 0.2, 'beta: the module minimises (1 - beta) L_inverse + beta L_forward (0.2 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('icm_eta', 0.01, 'eta: the curiosity reward is eta / 2 * ||forward model error||^2.', lower_bound=0.0)
    flags.DEFINE_float('icm_learning_rate', 1e-3, 'Adam learning rate of the curiosity module.', lower_bound=0.0)
    flags.DEFINE_float('extrinsic_reward_coef', 1.0, 'Weight of the game reward in the reward the policy maximises.', lower_bound=0.0)
    flags.DEFINE_float('intrinsic_reward_coef', 1.0, 'Weight of the curiosity reward (0: plain PPO, the module is not trained).', lower_bound=0.0)


@_record_new_flags
def define_ppo_rnd() -> None:
    """Flags of PPO with random network distillation (Burda et al. 2018): `define_ppo` and RND's own; --discount is
    the extrinsic (episodic) discount."""
    define_ppo()
    flags.DEFINE_float('intrinsic_discount', 0.99, 'Discount of the non-episodic intrinsic return (0.99 in the paper; the extrinsic one is --discount, 0.999).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('extrinsic_advantage_coef', 2.0, 'c_E: the policy follows c_E A_ext + c_I A_int (2 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('intrinsic_advantage_coef', 1.0, 'c_I: weight of the intrinsic advantage (1 in the paper).', lower_bound=0.0)
    flags.DEFINE_float('rnd_update_proportion', 0.25, 'Fraction of each minibatch that trains the predictor (0.25 in the paper with 128 environments).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_integer('rnd_init_steps', 10_000, 'Random-action env steps whose observations initialise the observation normaliser before training.', lower_bound=0)


@_record_new_flags
def define_actor_critic() -> None:
    """Flags of the single-process n-step actor-critic (Konda & Tsitsiklis 2000; Sutton & Barto 2018, section 13.5)."""
    _define_num_envs(8)
    flags.DEFINE_integer('unroll_length', 5, 'n: steps each environment takes between updates; returns look at most n steps ahead (1 is the one-step method).', lower_bound=1)
    _define_loss_weights(entropy_coef=0.0)


@_record_new_flags
def define_a2c() -> None:
    """Flags of synchronous advantage actor-critic (A2C, the synchronous form of A3C: Mnih et al. 2016)."""
    flags.DEFINE_integer('unroll_length', 5, 't_max: steps each environment contributes to one update (5 in the paper).', lower_bound=1)
    _define_loss_weights(entropy_coef=0.01)  # beta = 0.01 in the paper
    flags.DEFINE_float('gae_lambda', 1.0, 'GAE lambda; 1 is the paper: returns bootstrapped from the value after the unroll.', lower_bound=0.0, upper_bound=1.0)
    _define_rmsprop_or_adam()
    _define_observation_and_reward_scaling()


def _define_rmsprop_or_adam() -> None:
    """The optimiser flags of the A3C lineage (A2C, IMPALA): RMSProp as in their papers, or Adam; learning rate annealed."""
    flags.DEFINE_bool('anneal_learning_rate', True, 'Decay the learning rate linearly to 0 over the run (as in the paper).')
    flags.DEFINE_enum('optimizer', 'rmsprop', ['rmsprop', 'adam'], 'RMSProp as in the paper, or Adam.')
    flags.DEFINE_float('rmsprop_alpha', 0.99, 'RMSProp decay alpha of the squared-gradient average (0.99 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('optimizer_eps', 1e-5, 'Epsilon added to the denominator of RMSProp or Adam.', lower_bound=0.0)


@_record_new_flags
def define_impala(*, atari: bool = False) -> None:
    """Flags of IMPALA (Espeholt et al. 2018): actor-critic on V-trace targets, asynchronous actors."""
    flags.DEFINE_integer('unroll_length', 20, 'Steps each environment contributes to one rollout (20 in the paper).', lower_bound=1)
    _define_loss_weights(entropy_coef=0.01)
    _define_rmsprop_or_adam()
    flags.DEFINE_float('clip_rho_threshold', 1.0, 'rho-bar: clip of the importance weight of the V-trace TD errors (0 disables clipping).', lower_bound=0.0)
    flags.DEFINE_float('clip_pg_rho_threshold', 1.0, 'Clip of the importance weight of the policy-gradient advantage (0 disables clipping).', lower_bound=0.0)
    flags.DEFINE_float('clip_c_threshold', 1.0, 'c-bar: clip of the trace-cutting coefficients (0 disables clipping).', lower_bound=0.0)
    flags.DEFINE_float('vtrace_lambda', 1.0, 'lambda: extra discounting of the V-trace traces (1 is the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_bool(
        'use_lstm', False,
        "The paper's LSTM core (256 units) between the torso and the heads, fed the torso's output, the one-hot previous "
        'action and the clipped previous reward; its state is carried across rollouts and reset at episode starts.',
    )
    if atari:
        flags.DEFINE_enum('torso', 'nature', ['nature', 'impala_resnet'], "The paper's shallow Nature CNN or its deep 15-layer residual network.")


@_record_new_flags
def define_actor_gradients() -> None:
    """Flags of runs whose actors compute the gradients and send them to the learner (A2C's gradient variant)."""
    flags.DEFINE_enum(
        'gradient_compression', 'bfloat16', list(gradient_compression.METHODS),
        'How actors send gradients: float32, bfloat16 (half the bytes) or int8 with a scale per block of 256 and '
        'stochastic rounding (a quarter of the bytes, unbiased).',
    )


@_record_new_flags
def define_reinforce() -> None:
    """Flags of Monte-Carlo policy gradient, REINFORCE with or without a baseline (Williams 1992)."""
    _define_num_envs(1)
    flags.DEFINE_integer('num_episodes_per_update', 1, 'Complete episodes of each update (a multiple of --num_envs: each environment gives the same number).', lower_bound=1)
    _define_loss_weights(entropy_coef=0.0)  # value_coef is used by REINFORCE with baseline only
    flags.DEFINE_bool('normalize_advantages', False, 'Standardise the returns (REINFORCE) or advantages (with baseline) over each update.')


@_record_new_flags
def define_sac() -> None:
    """Flags of discrete soft actor-critic (Christodoulou 2019) with actor processes and a replay on the learner.

    The replay flags are the value agents' (`_define_replay`); `learn_interval` is env steps (all actors together)
    per gradient step, `target_network_update_interval` gradient steps between target critic updates."""
    _define_replay()
    flags.DEFINE_integer('unroll_length', 4, 'Steps each actor environment writes per rollout before the learner adds them to replay.', lower_bound=1)
    flags.DEFINE_float('target_entropy_ratio', 0.98, 'Target entropy as a fraction of the uniform policy\'s log|A| (0.98 in the paper).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('initial_temperature', 1.0, 'alpha at the start of training (then tuned automatically unless --nolearn_temperature).', lower_bound=0.0)
    flags.DEFINE_bool('learn_temperature', True, 'Tune alpha towards the target entropy (the paper); false keeps --initial_temperature fixed.')
    flags.DEFINE_float('target_smoothing_coef', 1.0, 'tau of each target critic update: target <- tau online + (1 - tau) target (1 is a hard copy).', lower_bound=0.0, upper_bound=1.0)


def _hide_flags(*names: str) -> None:
    """Removes flags defined by an earlier group that a later one names differently (APPO takes Sample Factory's
    names): the run script translates the new names back into these before running (`appo.sample_factory_config.run_values`)."""
    for name in names:
        if name in FLAGS:
            delattr(FLAGS, name)
        _OWN_FLAG_NAMES.discard(name)


@_record_new_flags
def define_appo(*, atari: bool = False) -> None:
    """Flags of APPO, named and meaning as in Sample Factory 2.x (`appo/sample_factory_config.py` lists how each is
    honoured). Call after `define_common`: our names for the same settings (`discount`, `num_actors`,
    `num_envs_per_actor`, `environment_frame_skip`, `environment_frame_stack`) are hidden behind Sample Factory's
    (`gamma`, `num_workers`, `num_envs_per_worker`, `env_frameskip`, `env_framestack`). `max_policy_lag` counts SGD
    steps here (Sample Factory), not updates as in `define_asynchronous`. Defaults are Sample Factory's, except
    `train_for_env_steps` (0: the budget is --num_iterations x --num_train_steps) and `use_rnn` (false)."""
    define_distributed(num_actors=1, num_envs_per_actor=1)  # actors_on_gpu, learner_on_gpu, restart_actors
    _hide_flags('discount', 'num_actors', 'num_envs_per_actor', 'environment_frame_skip', 'environment_frame_stack')
    flags.DEFINE_string('config_json', '', 'A Sample Factory config (a model card\'s config.json) applied before the command line: explicit flags win.')
    # the run: processes, data flow, budget
    flags.DEFINE_integer('num_policies', 1, 'Independent policies trained side by side; each environment plays a randomly drawn one, redrawn every 10 episodes.', lower_bound=1)
    flags.DEFINE_bool('async_rl', True, 'Actors keep collecting while the learner trains (false: every update waits for one rollout per worker).')
    flags.DEFINE_bool('serial_mode', False, 'Sample Factory runs everything in one process; here actors are always processes (nothing learned changes).')
    flags.DEFINE_bool('batched_sampling', False, 'Actors here always step their environments as one vector with one batched forward pass.')
    flags.DEFINE_integer('num_batches_to_accumulate', 2, 'Training batches the rollout buffers hold, the one the learner trains on included (Sample Factory\'s meaning; at least 2 buffers per worker): 2 lets the actors fill the next batch during an update, 1 keeps the policy lag lowest as they wait for the learner to give buffers back.', lower_bound=1)
    flags.DEFINE_integer('max_policy_lag', 1000, 'Drop rollouts made by parameters this many or more SGD steps older than the learner\'s.', lower_bound=1)
    flags.DEFINE_integer('num_workers', 2, 'Actor processes.', lower_bound=1)
    flags.DEFINE_integer('num_envs_per_worker', 2, 'Environments each actor steps with one batched forward pass.', lower_bound=1)
    flags.DEFINE_integer('rollout', 32, 'Steps of one environment per trajectory; GAE bootstraps from the value after it.', lower_bound=1)
    flags.DEFINE_integer('batch_size', 1024, 'Samples (agent steps) per SGD minibatch.', lower_bound=1)
    flags.DEFINE_integer('num_batches_per_epoch', 1, 'Minibatches per training batch: each update trains on batch_size x num_batches_per_epoch samples (per policy).', lower_bound=1)
    flags.DEFINE_integer('num_epochs', 1, 'Passes over each training batch.', lower_bound=1)
    flags.DEFINE_integer('recurrence', -1, 'Length of the trajectory chunks minibatches are made of (-1: rollout with an RNN, else 1).', lower_bound=-1)
    flags.DEFINE_bool('shuffle_minibatches', False, 'Reshuffle samples (in chunks of --recurrence) into new minibatches every epoch (false: fixed contiguous slices).')
    flags.DEFINE_bool('summaries_use_frameskip', True, 'Count --train_for_env_steps in emulator frames (agent steps x --env_frameskip) on Atari.')
    # rewards and returns
    flags.DEFINE_float('gamma', 0.99, 'Discount factor.', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('reward_scale', 1.0, 'Rewards are multiplied by this before learning.')
    flags.DEFINE_float('reward_clip', 1000.0, 'Scaled rewards are clipped to [-reward_clip, reward_clip].', lower_bound=0.0)
    flags.DEFINE_bool('value_bootstrap', False, 'At a time-limit truncation add gamma x V(s_t) to the reward.')
    flags.DEFINE_bool('normalize_returns', True, 'The value head predicts returns normalised by their running mean and std.')
    flags.DEFINE_float('gae_lambda', 0.95, 'GAE lambda (unused with V-trace).', lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_bool('with_vtrace', False, 'V-trace targets and advantages (computed once per batch) instead of GAE.')
    flags.DEFINE_float('vtrace_rho', 1.0, 'V-trace rho-bar: truncation of the importance weights of TD errors and advantages.', lower_bound=0.0)
    flags.DEFINE_float('vtrace_c', 1.0, 'V-trace c-bar: truncation of the trace coefficients.', lower_bound=0.0)
    # the loss
    flags.DEFINE_float('ppo_clip_ratio', 0.1, 'epsilon: the ratio pi/pi_old is clipped to [1/(1+epsilon), 1+epsilon].', lower_bound=0.0)
    flags.DEFINE_float('ppo_clip_value', 1.0, 'New values may move at most this far (an absolute bound, value head units) from the behaviour values.', lower_bound=0.0)
    flags.DEFINE_float('exploration_loss_coeff', 0.003, 'Weight of the entropy bonus: loss -= coeff x mean entropy.', lower_bound=0.0)
    flags.DEFINE_enum('exploration_loss', 'entropy', ['entropy'], 'The exploration loss (entropy only).')
    flags.DEFINE_float('value_loss_coeff', 0.5, 'Weight of the value loss, mean of max(clipped, unclipped) squared errors (no extra 0.5).', lower_bound=0.0)
    flags.DEFINE_float('kl_loss_coeff', 0.0, 'Weight of a KL(pi || pi_behaviour) penalty (0 disables).', lower_bound=0.0)
    # the optimiser (learning_rate and max_grad_norm come from define_common)
    flags.DEFINE_enum('lr_schedule', 'constant', ['constant', 'kl_adaptive_minibatch', 'kl_adaptive_epoch', 'linear_decay'], 'Learning rate schedule.')
    flags.DEFINE_float('lr_schedule_kl_threshold', 0.008, 'kl_adaptive_*: lr / 1.5 when the KL > 2x this, lr x 1.5 when < 0.5x this.', lower_bound=0.0)
    flags.DEFINE_float('lr_adaptive_min', 1e-6, 'kl_adaptive_*: lowest learning rate.', lower_bound=0.0)
    flags.DEFINE_float('lr_adaptive_max', 1e-2, 'kl_adaptive_*: highest learning rate.', lower_bound=0.0)
    flags.DEFINE_float('adam_eps', 1e-6, "Adam's epsilon.", lower_bound=0.0)
    flags.DEFINE_float('adam_beta1', 0.9, "Adam's beta1.", lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_float('adam_beta2', 0.999, "Adam's beta2.", lower_bound=0.0, upper_bound=1.0)
    flags.DEFINE_bool('adam_fused', False, "Adam as one fused pass over all parameters (several times faster on CPU; not Sample Factory's: it rounds differently than Adam's loop over parameters).")
    # observations and the network
    flags.DEFINE_float('obs_subtract_mean', 0.0, 'Subtracted from observations before --obs_scale.')
    flags.DEFINE_float('obs_scale', 1.0, 'Observations are divided by this (255 for Atari frames).')
    flags.DEFINE_bool('normalize_input', False, 'Normalise (scaled) observations by their running mean and std, per element.')
    if atari:
        flags.DEFINE_integer('env_frameskip', 4, 'Atari frames per agent step (max-pooled over the last two).', lower_bound=1)
        flags.DEFINE_integer('env_framestack', 4, 'Atari frames stacked into one observation.', lower_bound=1)
    flags.DEFINE_list('encoder_mlp_layers', ['512', '512'], 'Hidden layer sizes of the MLP encoder (vector observations).')
    flags.DEFINE_enum('encoder_conv_architecture', 'convnet_atari', ['convnet_atari'], "The conv encoder: Nature DQN's (32x8x8/4, 64x4x4/2, 64x3x3/1).")
    flags.DEFINE_list('encoder_conv_mlp_layers', ['512'], 'Fully connected layer sizes after the conv encoder.')
    flags.DEFINE_bool('use_rnn', False, 'A recurrent core (--rnn_type, --rnn_size) between the shared encoder and the heads, trained on chunks of --recurrence steps.')
    flags.DEFINE_integer('rnn_size', 512, 'Hidden size of the recurrent core.', lower_bound=1)
    flags.DEFINE_enum('rnn_type', 'gru', ['gru', 'lstm'], 'Cell of the recurrent core.')
    flags.DEFINE_enum('nonlinearity', 'elu', ['elu', 'relu', 'tanh'], 'Activation of the encoder.')
    flags.DEFINE_enum('policy_initialization', 'orthogonal', ['orthogonal', 'xavier_uniform', 'torch_default'], 'Weight initialisation of every layer.')
    flags.DEFINE_float('policy_init_gain', 1.0, 'Gain of the weight initialisation.', lower_bound=0.0)
    flags.DEFINE_bool('actor_critic_share_weights', True, 'Policy and value heads share one encoder (false: each has its own).')
    # checkpoints: save_every_sec, keep_checkpoints, save_best_metric, save_best_after, train_for_seconds and
    # train_for_env_steps are define_common's (the experiment's); a config's save_milestones_sec and save_best_every_sec
    # are noted at load as not applicable (appo/sample_factory_config.py)


@_record_new_flags
def define_appo_eval() -> None:
    """eval_agent's extra flag for APPO checkpoints holding several policies (Sample Factory's enjoy)."""
    flags.DEFINE_integer('policy_index', 0, 'Which policy of the checkpoint plays (0 .. num_policies - 1).', lower_bound=0)
