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
from deep_rl_zoo import gym_env, main_loop
from deep_rl_zoo.checkpoint import CheckpointError
from deep_rl_zoo.distributed import ActorCrashError
from deep_rl_zoo.experiment import console_log
from deep_rl_zoo.networks import common
from deep_rl_zoo.settings import THEMES, Common, Settings

FLAGS = flags.FLAGS
_OWN_FLAG_NAMES: set[str] = set()  # flags defined here (not absl's own), saved in checkpoints
_THEME_OF: dict[str, str] = {}  # flag name -> its --help theme (`settings.THEMES`)
_SCRIPT: dict[str, Any] = {}  # the run script's 'defaults' (a settings instance) and 'presets' (define_settings)


def define_settings(defaults: Settings, presets: Optional[Mapping[str, Settings]] = None) -> None:
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


def resolve_settings() -> Settings:
    """The run's settings from the command line, settled once before anything is built (`settled`), after the preset
    of --environment_name was applied to the flags not given (`apply_preset`)."""
    apply_preset()
    values = {name: FLAGS[name].value for name in _OWN_FLAG_NAMES}
    return settled(_SCRIPT['defaults'], values, explicit_flags(values))


def settled(defaults: Settings, values: dict[str, Any], explicit: frozenset[str]) -> Settings:
    """The run's settings: `defaults` (the run script's) with the flags' `values`; with a file the command line names
    (APPO's --config_json), under the flags `explicit` on the command line; a MiniGrid task's kind ('minigrid') for
    the agents that take one; an Atari game under its canonical name;
    when the run resumes its experiment, the experiment's saved config where the command line does not override it
    (`experiment.prepare`, which also checks the output directories); then every value's bounds and choices."""
    settings = defaults.with_values(values).replace(given_flags=explicit).with_config_file()
    if type(settings).takes_minigrid:
        settings = settings.replace(environment_kind=gym_env.environment_kind(settings.environment_kind, settings.environment_name))
    if isinstance(settings, Common):
        settings = main_loop.canonical_environment(settings)
    if type(settings).agent_name:  # training, not evaluation
        settings = experiment_lib.prepare(settings, explicit)
        settings = bf16_where_native(settings, explicit)
    settings.validate()
    return settings


def bf16_where_native(settings: Settings, explicit: frozenset[str]) -> Settings:
    """`settings` with --bf16_learning off where the learner's device has no bfloat16 hardware
    (`common.bf16_is_native`: there it runs several times slower than float32), unless the command line asks for it:
    a preset, or a resumed experiment's saved config, turns it on only where it is faster (one printed line says
    so); asked for on the command line, it stays on, with a warning."""
    if not getattr(settings, 'bf16_learning', False):
        return settings
    device = main_loop.run_learner_device(settings)
    if common.bf16_is_native(device):
        return settings
    reason = f'the learner\'s {device.type.upper()} has no bfloat16 hardware (AVX-512 BF16 or AMX on a CPU), where it runs several times slower than float32'
    if 'bf16_learning' in explicit:
        print(f'warning: --bf16_learning: {reason}', file=sys.stderr, flush=True)
        return settings
    print(f'--bf16_learning left off: {reason} (--bf16_learning on the command line turns it on anyway)', flush=True)
    return settings.replace(bf16_learning=False)


def explicit_flags(values: Mapping[str, Any]) -> frozenset[str]:
    """The names in `values` given on the command line (absl marks them present)."""
    return frozenset(name for name in values if name in FLAGS and FLAGS[name].present)


def _environment_help(default: str, kind: str) -> str:
    """--environment_name's help: the names a run script for environments of `kind` takes."""
    if kind == 'atari':
        return 'Atari game: a short name (Pong, Breakout, Amidar, MontezumaRevenge, ...), also written ALE/Pong-v5 or PongNoFrameskip-v4.'
    if default == 'Pendulum-v1':
        return 'Continuous-control task: Pendulum-v1 or a MuJoCo v5 id (HalfCheetah-v5, Hopper-v5, ...).'
    return 'Classic-control task: CartPole-v1, LunarLander-v3, MountainCar-v0 or Acrobot-v1 (the curiosity agents also take MiniGrid-... ids).'


def _ray_is_installed(backend: str) -> bool:
    """--backend=ray needs Ray, an optional dependency (looked up, not imported: the core never imports it)."""
    import importlib.util

    return backend != 'ray' or importlib.util.find_spec('ray') is not None


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
    before, own, themes, script = set(FLAGS), set(_OWN_FLAG_NAMES), dict(_THEME_OF), dict(_SCRIPT)
    try:
        yield importlib.import_module(module_name)
    finally:
        FLAGS.unparse_flags()
        for name in set(FLAGS) - before:
            delattr(FLAGS, name)
        _OWN_FLAG_NAMES.clear()
        _OWN_FLAG_NAMES.update(own)
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
        by_theme.setdefault(_THEME_OF[name], []).append(name)
    for theme in THEMES:
        if theme not in by_theme:
            continue
        lines += ['', f'{theme}:']
        for name in by_theme[theme]:
            flag = FLAGS[name]
            lines.append(f'  --{name}={_shown(flag.default)}'.ljust(40) + f' {flag.help}')
    lines += ['', "absl's own flags (--flagfile, logging verbosity, ...): --helpfull"]
    return '\n'.join(lines)


def run(main: Callable[[Settings], None]) -> None:
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
                main(resolve_settings())
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


def apply_preset() -> dict[str, Any]:
    """Applies the tuned settings of --environment_name (the `presets` of `define_settings`: an instance of the
    agent's settings) where they differ from the script's defaults, except flags given on the command line, and prints
    which it set; returns them. --preset=none applies nothing."""
    preset = _SCRIPT['presets'].get(FLAGS.environment_name) if 'preset' in FLAGS and FLAGS.preset != 'none' else None
    defaults = _SCRIPT['defaults']
    if preset is None or preset.environment_kind != defaults.environment_kind:
        return {}
    applied, overridden, default_values = {}, [], defaults.flag_values()
    for name, value in preset.flag_values().items():
        if name == 'environment_name' or name not in _OWN_FLAG_NAMES or value == default_values[name]:
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
