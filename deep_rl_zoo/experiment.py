"""The bookkeeping of one training run, an *experiment*, with Sample Factory's semantics: its directory and saved
config, checkpoints (milestone, periodic, best), restarts, budgets, the results CSV, the loggers and a log of the
console. `main_loop` keeps the loops; every loop uses the `Experiment` below, so every agent gets all of this.

An experiment is named by `--experiment` (default `<AGENT>_<env>[_<tag>]`) and its files live together in
`<train_dir>/<experiment>/`:

    config.json                        every flag value, library versions, the git commit (rewritten each session)
    log.txt                            what the console showed, session after session
    <AGENT>_<env>_<i>.ckpt             milestone: the end of iteration i (kept unless --nokeep_milestones)
    <AGENT>_<env>_<i>_at<steps>.ckpt   periodic: every --save_every_sec during iteration i, and at a stop
    <AGENT>_<env>_best.ckpt            the best by --save_best_metric so far
    <AGENT>_<env>_results.csv          one row per iteration

(`--checkpoint_dir`, when given, takes the milestone and periodic checkpoints and the CSV instead.) TensorBoard writes
under `<runs_dir>/<experiment>/{train,eval}`, every session of the experiment into the same folders, so it draws one
continuing curve per experiment: a resumed session's step axes continue from its checkpoint, and the events an
earlier session wrote after that step (work since lost and trained again) are hidden (TensorBoard's purge).

Running the same command again (`--restart_behavior=resume`) continues from the newest checkpoint
(`--load_checkpoint_kind=best`: from the best one) with the saved config, where only flags given on the command
line override it. A resumed run keeps the results rows of the iterations its checkpoint finished, drops the later
ones (they are trained again), moves checkpoints newer than the one it resumed from into `superseded_<time>/`,
and its wall time continues. `restart` moves the old directory, and the experiment's TensorBoard folder, aside to
`<name>_old_<time>` (TensorBoard then shows the old run beside the new one); `overwrite` deletes both.

None of these files is created, changed, moved or deleted before the run has started (`Experiment.begin()`, which a
loop calls once its actor pool has started, Ray's actors placed and built, or before its first training step): a
session that fails to start (no Ray cluster at --ray_address, a Ray actor that cannot be placed or built, a
checkpoint whose state does not fit the agent) leaves the experiment as it was, and the same command without the
failing flag then runs it as before.

A run script's console goes into log.txt whole (`console_log`): the lines printed before the experiment directory
is known (the preset, resume overrides) and the final `error: ...` line or traceback of a run that fails.
"""

import contextlib
import csv
import dataclasses
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, Optional, TextIO

import numpy as np
import torch

from deep_rl_zoo import checkpoint, trackers
from deep_rl_zoo.episodes import play_episodes
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.settings import Common, CommonType

RESTART_BEHAVIORS = ('resume', 'restart', 'overwrite')
CHECKPOINT_KINDS = ('latest', 'best')
BEST_METRICS = ('eval_return', 'reward', 'none')  # 'reward' is Sample Factory's: the mean training episode return
# Agent statistics written as results CSV columns too: the rooms of Montezuma's Revenge the curiosity agents visit.
RESULT_STATISTICS = ('visited_rooms_mean', 'visited_rooms_max')
CONFIG_FILE = 'config.json'
LOG_FILE = 'log.txt'
# A checkpoint written at Ctrl-C / SIGTERM must finish within this many seconds, so the run ends within 5 s.
STOP_SAVE_SECONDS = 3.0
# --save_replay_at_stop then writes it again with the replay memory (DQN's Pong preset: 1.3 s, 58 MiB).
STOP_REPLAY_SAVE_SECONDS = 60.0
# An evaluation that has run this long shows a progress line of its own (Atari's can take minutes).
EVALUATION_PROGRESS_AFTER_SECONDS = 10.0
# Flags that say how to start this session; a resumed run never takes them from the saved config.
_SESSION_FLAGS = frozenset({'restart_behavior', 'load_checkpoint_kind', 'load_checkpoint_file'})


def _safe(name: str) -> str:
    return name.replace('/', '_')


def experiment_name(agent_name: str, settings: Common) -> str:
    """`--experiment`, or `<AGENT>_<env>[_<tag>]` (e.g. 'DQN_CartPole-v1', 'PPO_ALE-Pong-v5_lr3e-4')."""
    if settings.experiment:
        return settings.experiment
    parts = [agent_name, settings.environment_name] + ([settings.tag] if settings.tag else [])
    return '_'.join(part.replace('/', '-') for part in parts)


def experiment_dir(agent_name: str, settings: Common) -> str:
    return os.path.join(settings.train_dir, experiment_name(agent_name, settings))


def checkpoint_location(agent_name: str, settings: Common) -> str:
    """Where checkpoints and the results CSV go: `--checkpoint_dir` when given, else the experiment directory."""
    return settings.checkpoint_dir or experiment_dir(agent_name, settings)


@dataclasses.dataclass
class RunSettings:
    """What every training run needs to know besides its agent; built from the run's settings (`from_settings`)."""

    agent_name: str
    environment_name: str
    num_iterations: int
    num_train_steps: int
    num_eval_steps: int
    checkpoint_dir: str
    results_csv_path: str
    episodes_csv_path: str
    load_checkpoint_file: str
    use_tensorboard: bool
    runs_dir: str
    tag: str
    debug_screenshots_interval: int
    progress: bool
    flags: dict[str, Any]  # the run's flags as checkpoints keep them
    train_for_seconds: float = 0.0  # > 0: training ends (cleanly) after this many seconds
    train_for_env_steps: int = 0  # > 0: training ends (cleanly) after this many env steps
    experiment_name: str = ''  # recorded in config.json
    experiment_dir: str = ''  # where config.json and log.txt go ('' : nowhere)
    restart_behavior: str = 'resume'
    load_checkpoint_kind: str = 'latest'
    save_every_sec: float = 0.0  # > 0: a periodic checkpoint this often during iterations
    keep_checkpoints: int = 2
    keep_milestones: bool = True
    save_best_metric: str = 'none'  # the flag's default is eval_return
    save_best_after: int = 0
    save_replay: bool = False
    save_replay_at_stop: bool = False
    max_eval_episodes: int = 0  # > 0: an evaluation ends once this many episodes have ended
    config_flags: Optional[dict[str, Any]] = None  # what config.json keeps as the flags, when not `flags` (see `prepare`)

    @classmethod
    def from_settings(cls, agent_name: str, settings: Common) -> 'RunSettings':
        """The run settings of a run of `settings`: it runs with `settings.core_settings()` (APPO's translated from
        Sample Factory's), whose `flag_values()` checkpoints keep; config.json keeps the settings' own `flag_values()`."""
        core = settings.core_settings()
        location = checkpoint_location(agent_name, core)
        return cls(
            agent_name=agent_name,
            environment_name=core.environment_name,
            num_iterations=core.num_iterations,
            num_train_steps=core.num_train_steps,
            num_eval_steps=core.num_eval_steps,
            checkpoint_dir=location,
            results_csv_path=core.results_csv_path or os.path.join(location, f'{agent_name}_{_safe(core.environment_name)}_results.csv'),
            episodes_csv_path=core.episodes_csv_path,
            load_checkpoint_file=core.load_checkpoint_file,
            use_tensorboard=core.use_tensorboard,
            runs_dir=core.runs_dir,
            tag=core.tag,
            debug_screenshots_interval=core.debug_screenshots_interval,
            progress=core.progress,
            flags=core.flag_values(),
            train_for_seconds=float(core.train_for_seconds),
            train_for_env_steps=int(core.train_for_env_steps),
            experiment_name=experiment_name(agent_name, core),
            experiment_dir=experiment_dir(agent_name, core),
            restart_behavior=core.restart_behavior,
            load_checkpoint_kind=core.load_checkpoint_kind,
            save_every_sec=float(core.save_every_sec),
            keep_checkpoints=int(core.keep_checkpoints),
            keep_milestones=bool(core.keep_milestones),
            save_best_metric=core.save_best_metric,
            save_best_after=int(core.save_best_after),
            save_replay=bool(core.save_replay),
            save_replay_at_stop=bool(core.save_replay_at_stop),
            max_eval_episodes=int(core.max_eval_episodes),
            config_flags=settings.flag_values(),
        )


# --- Before the agent is built: restart behaviour and the saved config --------------------------------------------


def prepare(settings: CommonType, explicit: frozenset[str]) -> CommonType:
    """Checks `--restart_behavior` and the output directories and returns the settings to run with: when resuming
    from the experiment's own checkpoint, those of its saved config with only the `explicit` flags overriding them (one
    printed line for each that differs). Call before building the agent, and build it from the returned settings. It
    changes no file: `restart` and `overwrite` are applied by `Experiment.begin()`, once the run has started.

    The experiment is named by the settings the core runs with (`core_settings()`: APPO's are translated from Sample
    Factory's); config.json keeps the settings' own flags (`flag_values()`, a dict as JSON has them, which the saved
    one is compared with), so a resumed run translates them again as a fresh one does."""
    behavior = settings.restart_behavior
    if behavior not in RESTART_BEHAVIORS:
        raise ValueError(f'--restart_behavior={behavior}: must be one of {", ".join(RESTART_BEHAVIORS)}')
    core = settings.core_settings()
    for flag, path in (('train_dir', core.train_dir), ('checkpoint_dir', core.checkpoint_dir), ('runs_dir', core.runs_dir)):
        check_output_directory(flag, path)
    if behavior != 'resume':
        return settings
    if settings.load_checkpoint_file:
        return settings  # a checkpoint named on the command line resumes with this command's flags (as before)
    agent_name = settings.agent_name
    directory = experiment_dir(agent_name, core)
    location = checkpoint_location(agent_name, core)
    resume_from = find_resume_checkpoint(location, agent_name, core.environment_name, settings.load_checkpoint_kind)
    config_path = os.path.join(directory, CONFIG_FILE)
    if resume_from is None or not os.path.exists(config_path):
        return settings
    try:
        with open(config_path, encoding='utf-8') as file:
            saved = json.load(file)['flags']
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise checkpoint.CheckpointError(
            f'{config_path} cannot be read ({type(error).__name__}): fix or delete it, or pass --restart_behavior=restart'
        ) from None
    values, restored = settings.flag_values(), {}
    for flag, saved_value in sorted(saved.items()):
        if flag not in values or flag in _SESSION_FLAGS:
            continue
        if flag not in explicit:
            restored[flag] = saved_value
        elif values[flag] != saved_value:
            given = (f'--{flag}' if values[flag] else f'--no{flag}') if isinstance(values[flag], bool) else f'--{flag}={values[flag]}'
            print(f'resume: {given} from the command line overrides {saved_value} of {config_path}', flush=True)
    return settings.with_values(restored)


def check_output_directory(flag: str, path: str) -> None:
    """Refuses at start, in one line, a `--flag=path` that cannot hold the run's files: a file, a path under a file, or
    a directory that cannot be written (it is created when missing)."""
    if not path:
        return
    given = existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = 'is a file' if existing == given else f'is under the file {existing}'
        raise ValueError(f'--{flag}={path} {where}, not a directory: pass a directory (it is created when missing)')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f'--{flag}={path}: {existing} is not writable: pass a directory you can write to')


def _run_paths(settings: RunSettings) -> list[str]:
    """The files and directories of an experiment: its directory (config, log, checkpoints), its TensorBoard folder
    and, when --checkpoint_dir is elsewhere, this agent's and environment's checkpoints (the best one too) and results
    CSV there."""
    directory, location = settings.experiment_dir, settings.checkpoint_dir
    paths = [directory]
    if settings.runs_dir:
        paths.append(os.path.join(settings.runs_dir, settings.experiment_name))
    if os.path.abspath(location) != os.path.abspath(directory):
        paths += [file.path for file in checkpoint.list_checkpoints(location, settings.agent_name, settings.environment_name)]
        paths += [os.path.join(location, checkpoint.best_file_name(settings.agent_name, settings.environment_name)), settings.results_csv_path]
    return [path for path in paths if os.path.exists(path)]


def _clear_experiment(behavior: str, name: str, paths: list[str]) -> None:
    """`restart`: moves each path aside to `<path>_old_<time>` (a file: into `old_<time>/` beside it); `overwrite`:
    deletes them."""
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    for path in paths:
        if behavior == 'overwrite':
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
            print(f'overwrite: deleted {path} of experiment {name}', flush=True)
            continue
        if os.path.isdir(path):
            target = f'{path.rstrip(os.sep)}_old_{stamp}'
        else:
            target = os.path.join(os.path.dirname(path), f'old_{stamp}', os.path.basename(path))
            os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(path, target)
        print(f'restart: moved {path} of experiment {name} to {target}', flush=True)


def find_resume_checkpoint(location: str, agent_name: str, environment_name: str, kind: str) -> Optional[str]:
    """The checkpoint a resumed run starts from: the newest milestone or periodic one in `location`, or the best one
    (`kind`: 'latest' or 'best')."""
    if kind not in CHECKPOINT_KINDS:
        raise ValueError(f'--load_checkpoint_kind={kind}: must be one of {", ".join(CHECKPOINT_KINDS)}')
    if kind == 'best':
        path = os.path.join(location, checkpoint.best_file_name(agent_name, environment_name))
        if os.path.exists(path):
            return path
        if checkpoint.list_checkpoints(location, agent_name, environment_name):
            raise checkpoint.CheckpointError(
                f'--load_checkpoint_kind=best: {location} holds no best checkpoint yet (one is written when an evaluation '
                'improves on --save_best_metric): resume with --load_checkpoint_kind=latest'
            )
        return None
    files = checkpoint.list_checkpoints(location, agent_name, environment_name)
    return files[-1].path if files else None


# --- The experiment ------------------------------------------------------------------------------------------------


class _Tee:
    """A console stream that also writes to the experiment's log (a live progress line, drawn with '\\r', is not
    logged)."""

    def __init__(self, stream: TextIO, log: Any):
        self._stream = stream
        self._log = log
        self._after_redraw = False

    def write(self, text: str) -> int:
        self._stream.write(text)
        redraw = text.startswith('\r') or (text == '\n' and self._after_redraw)  # the live line and its end
        self._after_redraw = text.startswith('\r')
        if not redraw and not self._log.closed:
            self._log.write(text)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
        if not self._log.closed:
            self._log.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _ConsoleRecord:
    """The log a run script's console goes to: text is held until the experiment opens its log.txt (`attach`), then
    written there as it comes."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.file: Optional[TextIO] = None
        self.closed = False

    def write(self, text: str) -> None:
        if self.file is not None:
            self.file.write(text)
        else:
            self.held.append(text)

    def attach(self, path: str, header: str) -> None:
        self.file = open(path, 'a', encoding='utf-8', buffering=1)  # pylint: disable=consider-using-with
        self.file.write(header + ''.join(self.held))
        self.held = []

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()

    def close(self) -> None:
        self.closed = True
        if self.file is not None:
            self.file.close()


_console: Optional[_ConsoleRecord] = None  # the running script's console, while `console_log` records it


@contextlib.contextmanager
def console_log() -> Iterator[None]:
    """Records what a run script's console shows (stdout and stderr) for its experiment's log.txt, from before the
    experiment directory is known (the preset line, resume overrides) to the last line: the `error: ...` of a
    `SystemExit` (which the interpreter prints on the way out) or the traceback of a crash. Text of a run that ends
    before its experiment begins (a bad flag, an unreadable checkpoint, a failed start) is written nowhere."""
    global _console  # pylint: disable=global-statement
    record = _ConsoleRecord()
    streams = (sys.stdout, sys.stderr)
    sys.stdout, sys.stderr = _Tee(sys.stdout, record), _Tee(sys.stderr, record)
    _console = record
    try:
        yield
    except SystemExit as stop:
        if isinstance(stop.code, str):
            record.write(stop.code + '\n')
        raise
    except BaseException:
        record.write(traceback.format_exc())
        raise
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams
        _console = None
        record.close()


def _git_commit() -> dict[str, Any]:
    """The commit of the source tree this library runs from, and whether it has changes; None outside git."""
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        commit = subprocess.run(['git', '-C', source, 'rev-parse', 'HEAD'], capture_output=True, text=True, timeout=5, check=True).stdout.strip()
        status = subprocess.run(['git', '-C', source, 'status', '--porcelain', '--untracked-files=no'], capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return {'git_commit': None, 'git_dirty': None}
    return {'git_commit': commit, 'git_dirty': bool(status.stdout.strip())}


def _write_text_atomically(path: str, text: str) -> None:
    temporary = f'{path}.tmp{os.getpid()}'
    with open(temporary, 'w', encoding='utf-8') as file:
        file.write(text)
    os.replace(temporary, path)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread inside, the thread count as it was after. Greedy evaluation acts on one frame stack at a
    time, too little work to share: on 2 cores the IMPALA ResNet's forward pass takes 6.2 ms with one thread and 5.0
    with two alone, but 5.6 against 314 ms while another two-thread process runs (a learner's OpenMP threads wait for
    each other at every layer), and the Nature CNN's 0.7 against 1.1 ms even alone (benchmarks/NOTEBOOK.md)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Experiment:
    """Bookkeeping of one training run: counters, budgets, checkpoints, loggers, evaluation and the results CSV.

    Making one only reads: the checkpoint to resume from (a checkpoint that cannot be used is refused here) and the
    best one so far. Nothing of the experiment is created or changed until `begin()`, which a loop calls once the run
    has started (its actor pool started, or right before its first training step), so that a run that fails to start
    leaves the experiment as it was (see the module). `begin()` applies `--restart_behavior=restart/overwrite`, opens
    log.txt, moves aside the checkpoints newer than the one resumed from, drops their results rows, writes config.json
    and opens the TensorBoard streams and the results CSV.

    A loop then calls, in order: `iterations` (the iterations left), then within each `steps_left()` / `should_stop()`
    and `record_train_step(...)` per step, `save_periodic(...)` when `periodic_save_due()`, and `end_iteration(...)`;
    on a stop request `stop(...)`; and `close()` at the end, begun or not. `stop_request` is anything truthy once
    Ctrl-C or SIGTERM arrived (the loop's `distributed.StopRequest`)."""

    def __init__(self, settings: RunSettings, env: Any):
        frames_per_step = env.frames_per_step
        observation_space = env.single_observation_space
        if settings.debug_screenshots_interval and not (observation_space.dtype == np.uint8 and len(observation_space.shape) == 3):
            raise ValueError(
                f'--debug_screenshots_interval needs image observations (Atari); {settings.environment_name} observes vectors'
            )
        if settings.save_best_metric not in BEST_METRICS:
            raise ValueError(f'--save_best_metric={settings.save_best_metric}: must be one of {", ".join(BEST_METRICS)}')
        if settings.restart_behavior not in RESTART_BEHAVIORS:
            raise ValueError(f'--restart_behavior={settings.restart_behavior}: must be one of {", ".join(RESTART_BEHAVIORS)}')
        self.settings = settings
        self.stop_request: Any = None
        self.env_steps = 0
        self.longest_train_episode = 0  # env steps of the longest training episode seen (for the evaluation note)
        self.first_iteration = 0
        self.iteration = 0
        self.resumed_state: Optional[dict[str, Any]] = None
        self.resumed_replay: Optional[dict[str, Any]] = None
        self.last_checkpoint: Optional[str] = None
        self.progress: Optional[trackers.ConsoleProgress] = None
        self._frames_per_step = frames_per_step
        self._iteration_start_env_steps = 0
        self._iteration_ended = False  # its milestone is written and the next iteration has not begun
        self._resumed_mid_iteration = False
        self._wall_time_before = 0.0  # of the sessions before this one
        self._budget_announced = False
        self._begun = False
        self._original_streams: Optional[tuple[TextIO, TextIO]] = None
        self._record: Optional[_ConsoleRecord] = None  # this experiment's own console record (no `console_log` running)
        self._notes: list[str] = []  # said once the console is recorded
        # --restart_behavior=restart or overwrite: the experiment's files go aside (or away) at `begin()`.
        self._clears = bool(settings.experiment_dir) and settings.restart_behavior != 'resume'
        resume_from = settings.load_checkpoint_file
        if not resume_from and settings.restart_behavior == 'resume':
            resume_from = find_resume_checkpoint(
                settings.checkpoint_dir, settings.agent_name, settings.environment_name, settings.load_checkpoint_kind
            )
        if resume_from:
            self._load(resume_from)  # a checkpoint that cannot be used fails here, before any file is written
        self._resume_from = resume_from
        self._best = -math.inf if self._clears else self._saved_best()  # restart: read once the old files are aside
        self._record_console()
        for note in self._notes:
            print(note, flush=True)

    def begin(self) -> 'Experiment':
        """The run has started: from here on the experiment's files are written (see the class). Returns the
        experiment."""
        if self._begun:
            raise RuntimeError('Experiment.begin() was called twice')
        settings = self.settings
        if self._clears:
            _clear_experiment(settings.restart_behavior, settings.experiment_name, _run_paths(settings))
            self._best = self._saved_best()  # one in a --checkpoint_dir outside the experiment stays
        self._remove_temporary_files()
        self._start_log()
        resume_from = self._resume_from
        if resume_from:
            self._supersede_later_checkpoints(resume_from)
            self._drop_later_results()
        self._write_config()
        board = settings.experiment_name or experiment_name(settings.agent_name, Common(environment_name=settings.environment_name, tag=settings.tag))
        purge_step = self.env_steps + 1 if resume_from else None  # earlier sessions' events after the checkpoint: trained again
        frames_per_step = self._frames_per_step
        self.train_logger = trackers.RunLogger(
            board, 'train', settings.use_tensorboard, settings.runs_dir, frames_per_step, start_env_steps=self.env_steps, purge_step=purge_step
        )
        self.eval_logger = trackers.RunLogger(
            board, 'eval', settings.use_tensorboard, settings.runs_dir, frames_per_step, start_env_steps=self.env_steps, purge_step=purge_step
        )
        self.results = trackers.CsvResults(settings.results_csv_path)
        self.episodes = trackers.CsvResults(settings.episodes_csv_path) if settings.episodes_csv_path else None
        total_steps = self._steps_to_train()
        if total_steps == 0 and resume_from and self.first_iteration >= settings.num_iterations:
            print(
                f'Nothing to train: the experiment has finished its {settings.num_iterations} iterations; pass a larger '
                '--num_iterations to train on, or --restart_behavior=restart to start again'
            )
        elif total_steps == 0:
            print(f'Nothing to train: iterations {self.first_iteration}..{settings.num_iterations - 1} of {settings.num_train_steps} steps each')
        # The progress line counts the whole run (7,680/10,000,000 after a resume), its rate and ETA this session's steps.
        self.progress = trackers.ConsoleProgress(self.env_steps + total_steps, frames_per_step, stream=sys.stdout) if settings.progress and total_steps > 0 else None
        self._start_time = time.monotonic()
        self._last_save_time = self._start_time
        self._last_screenshot = self.env_steps
        self._begun = True
        return self

    def _require_begun(self) -> None:
        if not self._begun:
            raise RuntimeError('call Experiment.begin() once the run has started, before its iterations')

    # --- start-up

    def _record_console(self) -> None:
        """Records what the console shows from now on for log.txt, which `begin()` opens: a run script's console is
        recorded by `console_log` since it started; otherwise this experiment records it itself."""
        if not self.settings.experiment_dir or (_console is not None and _console.file is None):
            return
        self._record = _ConsoleRecord()
        self._original_streams = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = _Tee(sys.stdout, self._record), _Tee(sys.stderr, self._record)

    def _start_log(self) -> None:
        """Creates the experiment directory and writes what the console has shown into its log.txt, and from then on
        what it shows."""
        if not self.settings.experiment_dir:
            return
        os.makedirs(self.settings.experiment_dir, exist_ok=True)
        path = os.path.join(self.settings.experiment_dir, LOG_FILE)
        header = f'=== {datetime.datetime.now().isoformat(timespec="seconds")} {" ".join(sys.argv)}\n'
        record = self._record if self._record is not None else _console
        if record is not None and record.file is None:
            record.attach(path, header)

    def _write_config(self) -> None:
        """config.json: every flag value of this session, library versions and the git commit."""
        if not self.settings.experiment_dir:
            return
        config = {
            'experiment': self.settings.experiment_name,
            'agent_name': self.settings.agent_name,
            'environment_name': self.settings.environment_name,
            'command_line': sys.argv,
            'flags': self.settings.flags if self.settings.config_flags is None else self.settings.config_flags,
            'versions': checkpoint.library_versions(),
            **_git_commit(),
            'written_at': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        }
        _write_text_atomically(os.path.join(self.settings.experiment_dir, CONFIG_FILE), json.dumps(config, indent=2, sort_keys=False) + '\n')

    def _remove_temporary_files(self) -> None:
        """A run killed while writing a checkpoint leaves its temporary file; it is never a checkpoint."""
        directory = self.settings.checkpoint_dir
        if os.path.isdir(directory):
            for name in os.listdir(directory):
                if '.ckpt.tmp' in name:
                    os.remove(os.path.join(directory, name))

    def _load(self, path: str) -> None:
        """Reads the checkpoint to resume from: agent state, counters, the experiment's bookkeeping, replay."""
        settings = self.settings
        loaded = checkpoint.load_checkpoint(path, agent_name=settings.agent_name, environment_name=settings.environment_name)
        self.resumed_state = loaded['state']
        meta = loaded['extra'].get('experiment', {})
        self.resumed_replay = loaded['extra'].get('replay')
        self.env_steps = int(loaded['counters']['env_steps'])
        iteration = int(loaded['iteration'])
        self._wall_time_before = float(meta.get('wall_time', 0.0))
        self.last_checkpoint = path
        if meta.get('periodic'):
            self.first_iteration = iteration
            self._iteration_start_env_steps = int(meta['iteration_start_env_steps'])
            self._resumed_mid_iteration = True
            done = self.env_steps - self._iteration_start_env_steps
            self._notes.append(f'Resuming from {path}: iteration {iteration} ({done} of its env steps done), {self.env_steps} env steps')
        else:
            self.first_iteration = iteration + 1
            self._iteration_start_env_steps = self.env_steps
            self._notes.append(f'Resuming from {path}: iteration {self.first_iteration}, {self.env_steps} env steps')
        self.iteration = self.first_iteration
        self._resumed_order = checkpoint.CheckpointFile(path, bool(meta.get('periodic')), iteration, self.env_steps if meta.get('periodic') else -1).order

    def _supersede_later_checkpoints(self, path: str) -> None:
        """Checkpoints newer than the one resumed from would be overwritten by the retrained iterations: moved aside."""
        order = self._resumed_order
        later = [
            file for file in checkpoint.list_checkpoints(self.settings.checkpoint_dir, self.settings.agent_name, self.settings.environment_name)
            if file.order > order and os.path.abspath(file.path) != os.path.abspath(path)
        ]  # fmt: skip
        if not later:
            return
        target = os.path.join(self.settings.checkpoint_dir, f'superseded_{datetime.datetime.now().strftime("%Y%m%d-%H%M%S")}')
        os.makedirs(target, exist_ok=True)
        for file in later:
            os.replace(file.path, os.path.join(target, os.path.basename(file.path)))
        print(f'resume: moved {len(later)} newer checkpoints ({os.path.basename(later[0].path)} ...) to {target}', flush=True)

    def _drop_later_results(self) -> None:
        """Keeps the results rows of the iterations the resumed checkpoint finished; later ones are trained again."""
        path = self.settings.results_csv_path
        if not os.path.exists(path):
            return
        with open(path, newline='', encoding='utf-8') as file:
            reader = csv.DictReader(file)
            header, rows = reader.fieldnames, list(reader)
        kept = [row for row in rows if int(row['iteration']) < self.first_iteration]
        if len(kept) == len(rows) or header is None:
            return
        temporary = f'{path}.tmp{os.getpid()}'
        with open(temporary, 'w', newline='', encoding='utf-8') as file:
            writer = csv.DictWriter(file, fieldnames=header, lineterminator='\n')
            writer.writeheader()
            writer.writerows(kept)
        os.replace(temporary, path)
        print(f'resume: dropped {len(rows) - len(kept)} rows of iterations >= {self.first_iteration} from {path} (trained again)', flush=True)

    def _best_path(self) -> str:
        """The best checkpoint goes with the others, where --checkpoint_dir says (the experiment directory by default)."""
        return os.path.join(self.settings.checkpoint_dir, checkpoint.best_file_name(self.settings.agent_name, self.settings.environment_name))

    def _saved_best(self) -> float:
        """The metric of the best checkpoint already written (-inf when there is none)."""
        path = self._best_path()
        if self.settings.save_best_metric == 'none' or not os.path.exists(path):
            return -math.inf
        loaded = checkpoint.load_checkpoint(path, agent_name=self.settings.agent_name, environment_name=self.settings.environment_name)
        return float(loaded['extra'].get('experiment', {}).get('best_metric', -math.inf))

    def _steps_to_train(self) -> int:
        settings = self.settings
        iterations_left = max(settings.num_iterations - self.first_iteration, 0)
        total = settings.num_train_steps * iterations_left
        if self._resumed_mid_iteration and iterations_left:
            total -= self.env_steps - self._iteration_start_env_steps
        if settings.train_for_env_steps > 0:
            total = min(total, settings.train_for_env_steps - self.env_steps)
        return max(total, 0)

    # --- the loop's side

    @property
    def wall_time(self) -> float:
        """Seconds of training over every session of the experiment."""
        return self._wall_time_before + time.monotonic() - self._start_time

    def _budget_reached(self) -> Optional[str]:
        settings = self.settings
        if settings.train_for_env_steps > 0 and self.env_steps >= settings.train_for_env_steps:
            return f'{self.env_steps} env steps reached --train_for_env_steps={settings.train_for_env_steps}'
        if self._time_budget_spent():
            return f'{time.monotonic() - self._start_time:.0f} s of training reached the budget of {settings.train_for_seconds:.0f} s'
        return None

    def _time_budget_spent(self) -> bool:
        """--train_for_seconds has passed since this session started (it bounds evaluations too)."""
        return self.settings.train_for_seconds > 0 and time.monotonic() - self._start_time >= self.settings.train_for_seconds

    @property
    def iterations(self) -> Iterator[int]:
        """The iterations left to run; none starts once a budget (`train_for_seconds`, `train_for_env_steps`) is spent."""
        self._require_begun()
        for iteration in range(self.first_iteration, self.settings.num_iterations):
            reason = self._budget_reached()
            if reason:
                if not self._budget_announced:
                    self.say(f'Stopping after iteration {iteration - 1}: {reason}')
                return
            if not (self._resumed_mid_iteration and iteration == self.first_iteration):
                self._iteration_start_env_steps = self.env_steps
            self.iteration = iteration
            self._iteration_ended = False
            yield iteration

    def steps_left(self) -> int:
        """Env steps left in the current iteration."""
        return max(self.settings.num_train_steps - (self.env_steps - self._iteration_start_env_steps), 0)

    def should_stop(self) -> bool:
        """A stop was requested, or a budget is spent: the loop ends the iteration here."""
        if self.stop_request:
            return True
        reason = self._budget_reached()
        if reason and not self._budget_announced:
            self._budget_announced = True
            self.say(f'Stopping during iteration {self.iteration}: {reason}; it ends here with a checkpoint and a results row')
        return reason is not None

    def say(self, message: str, error: bool = False) -> None:
        """Prints a line on its own, never glued to the live progress line."""
        if self.progress is not None:
            self.progress.break_line()
        print(message, file=sys.stderr if error else sys.stdout, flush=True)

    def record_train_step(self, num_steps: int, finished: list[tuple[float, int]], observation: np.ndarray) -> None:
        """Counts `num_steps` env steps and the episodes they finished; screenshots and progress line."""
        self._require_begun()
        self.env_steps += num_steps
        if finished:
            self.longest_train_episode = max(self.longest_train_episode, max(steps for _, steps in finished))
            self.train_logger.log_episodes(self.env_steps, finished)
            if self.episodes is not None:
                for episode_return, episode_steps in finished:
                    self.episodes.append({'time': time.time(), 'env_steps': self.env_steps, 'return': episode_return, 'steps': episode_steps})
        interval = self.settings.debug_screenshots_interval
        if interval and self.env_steps - self._last_screenshot >= interval:
            self._last_screenshot = self.env_steps
            self.train_logger.write_screenshot(self.env_steps, observation[0])
        if self.progress is not None:
            self.progress.update(self.env_steps, self.train_logger.recent_returns())

    def periodic_save_due(self) -> bool:
        return self.settings.save_every_sec > 0 and time.monotonic() - self._last_save_time >= self.settings.save_every_sec

    def restore_replay(self, holder: Any) -> None:
        """Puts the resumed replay memory back into `holder.replay` (an agent or learner with one)."""
        replay = getattr(holder, 'replay', None)
        if self.resumed_replay is not None and replay is not None:
            replay_lib.load_replay_state(replay, self.resumed_replay)
            print(f'Replay memory restored: {replay.size} transitions', flush=True)
        elif self.resumed_state is not None and replay is not None:
            print('The checkpoint holds no replay memory (--save_replay): it refills before learning resumes', flush=True)
        self.resumed_replay = None

    def _write(
        self, path: str, state: dict[str, Any], learner_steps: int, *, periodic: bool, holder: Any = None, best_metric: Optional[float] = None,
        wall_time: Optional[float] = None, with_replay: bool = False,
    ) -> str:
        """Writes one checkpoint atomically; a failed write leaves the previous one intact and ends the run.
        `wall_time` (now by default) is where a run resumed from it counts its training time on from. The replay of
        `holder` goes in with --save_replay or `with_replay`, never into a best checkpoint."""
        self._require_begun()
        meta: dict[str, Any] = {
            'periodic': periodic,
            'iteration_start_env_steps': self._iteration_start_env_steps,
            'wall_time': self.wall_time if wall_time is None else wall_time,
        }
        if best_metric is not None:
            meta['best_metric'] = best_metric
        extra: dict[str, Any] = {'experiment': meta}
        replay = getattr(holder, 'replay', None)
        if (self.settings.save_replay or with_replay) and replay is not None and best_metric is None:
            extra['replay'] = replay_lib.replay_state(replay)
        try:
            checkpoint.save_checkpoint(
                path,
                agent_name=self.settings.agent_name,
                environment_name=self.settings.environment_name,
                iteration=self.iteration,
                state=state,
                counters={'env_steps': self.env_steps, 'learner_steps': learner_steps, 'iteration': self.iteration},
                flags=self.settings.flags,
                extra=extra,
            )
        except OSError as error:
            previous = f'the previous checkpoint {self.last_checkpoint} is intact' if self.last_checkpoint else 'no earlier checkpoint exists'
            raise checkpoint.CheckpointError(
                f'could not write checkpoint {path} ({error.strerror or error}); {previous}: '
                'free disk space or fix the directory, then run the same command to resume'
            ) from None
        self._last_save_time = time.monotonic()
        if best_metric is None:
            self.last_checkpoint = path
            self._prune()
        return path

    def _prune(self) -> None:
        """Keeps the newest `keep_checkpoints` periodic checkpoints (and milestones too with --nokeep_milestones)."""
        files = checkpoint.list_checkpoints(self.settings.checkpoint_dir, self.settings.agent_name, self.settings.environment_name)
        prunable = [file for file in files if file.periodic or not self.settings.keep_milestones]
        for file in prunable[: max(len(prunable) - self.settings.keep_checkpoints, 0)]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(file.path)

    def save_periodic(self, state: dict[str, Any], learner_steps: int, holder: Any = None, with_replay: bool = False) -> str:
        """A checkpoint of the state now, during iteration `self.iteration` (`holder`: the agent or learner, whose
        `replay` is saved too with --save_replay or `with_replay`)."""
        if self._iteration_ended:  # a stop after the milestone: this state is the next iteration's start, and resumes as such
            self.iteration, self._iteration_start_env_steps, self._iteration_ended = self.iteration + 1, self.env_steps, False
        name = checkpoint.periodic_file_name(self.settings.agent_name, self.settings.environment_name, self.iteration, self.env_steps)
        return self._write(os.path.join(self.settings.checkpoint_dir, name), state, learner_steps, periodic=True, holder=holder, with_replay=with_replay)

    def stop(self, state: dict[str, Any], learner_steps: int, holder: Any = None, stopping: str = '') -> None:
        """Ctrl-C or SIGTERM: writes a checkpoint of the state at the stop (given at most STOP_SAVE_SECONDS), says where
        the last checkpoint is and exits with status 130. `stopping` names what else stops (e.g. 'stopping 4 actors; ')."""
        outcome = self._save_within(STOP_SAVE_SECONDS, state, learner_steps, holder, with_replay=False)
        if outcome is None:
            last = f'the last whole one is {self.last_checkpoint}' if self.last_checkpoint else 'no earlier checkpoint exists'
            self.say(f'The checkpoint at the stop did not finish within {STOP_SAVE_SECONDS:g} s and was abandoned; {last}', error=True)
        elif 'error' in outcome:
            self.say(f'error: {outcome["error"]}', error=True)
        else:
            self.say(f'Checkpoint at the stop: {outcome["path"]}', error=True)
            self._add_replay_at_stop(state, learner_steps, holder)
        signal_name = getattr(self.stop_request, 'signal_name', None) or 'stop'
        self.say(f'Interrupted ({signal_name}): {stopping}the last checkpoint is in {self.settings.checkpoint_dir}', error=True)
        raise SystemExit(130)

    def _save_within(self, seconds: float, state: dict[str, Any], learner_steps: int, holder: Any, with_replay: bool) -> Optional[dict[str, Any]]:
        """`save_periodic` in a thread given at most `seconds`: {'path': ...} or {'error': CheckpointError}, or None when
        it did not finish (the run exits anyway; the unfinished write never replaces a checkpoint)."""
        outcome: dict[str, Any] = {}

        def save() -> None:
            try:
                outcome['path'] = self.save_periodic(state, learner_steps, holder, with_replay=with_replay)
            except checkpoint.CheckpointError as error:
                outcome['error'] = error

        writer = threading.Thread(target=save, daemon=True)
        writer.start()
        writer.join(seconds)
        return None if writer.is_alive() else outcome

    def _add_replay_at_stop(self, state: dict[str, Any], learner_steps: int, holder: Any) -> None:
        """--save_replay_at_stop: writes the checkpoint at the stop again, now with `holder`'s replay memory, given at
        most STOP_REPLAY_SAVE_SECONDS; until the new file replaces it, the one without the replay stands."""
        replay = getattr(holder, 'replay', None)
        if not self.settings.save_replay_at_stop or self.settings.save_replay or replay is None or replay.size == 0:
            return
        self.say(f'Adding the replay memory ({replay.size:,} samples) to it (--save_replay_at_stop, at most {STOP_REPLAY_SAVE_SECONDS:g} s)', error=True)
        started = time.monotonic()
        outcome = self._save_within(STOP_REPLAY_SAVE_SECONDS, state, learner_steps, holder, with_replay=True)
        if outcome is None:
            self.say(f'The replay memory did not fit in {STOP_REPLAY_SAVE_SECONDS:g} s: the checkpoint at the stop holds none', error=True)
        elif 'error' in outcome:
            self.say(f'error: {outcome["error"]}; the checkpoint at the stop holds no replay memory', error=True)
        else:
            size = os.path.getsize(outcome['path']) / 2**20
            self.say(f'Replay memory added in {time.monotonic() - started:.1f} s ({size:,.0f} MiB): a resumed run learns at once', error=True)

    def end_iteration(
        self,
        iteration: int,
        state: dict[str, Any],
        learner_steps: int,
        learner_statistics: dict[str, float],
        agent_statistics: dict[str, float],
        evaluate: Callable[[], dict[str, float]],
        holder: Any = None,
    ) -> dict[str, Any]:
        """Logs the iteration, evaluates, writes the iteration's milestone checkpoint, appends the CSV row and keeps
        the best checkpoint; returns the row. The milestone marks the iteration finished, so it follows the
        evaluation: a run killed during an evaluation resumes from an earlier checkpoint and evaluates that iteration
        again, rather than after it with its evaluation lost; and no row is written without its checkpoint."""
        self.iteration = iteration
        train = self.train_logger.write_performance(self.env_steps)
        self.train_logger.write_agent_statistics(self.env_steps, agent_statistics)
        self.train_logger.write_learner_statistics(learner_steps, learner_statistics)
        evaluation = evaluate() if self.settings.num_eval_steps > 0 else {}
        # One reading for the row and its checkpoints: a run resumed from them counts on from the row's wall time, so
        # its next row comes later even when training an iteration takes less time than writing a checkpoint.
        wall_time = round(self.wall_time, 3)
        name = checkpoint.checkpoint_file_name(self.settings.agent_name, self.settings.environment_name, iteration)
        path = self._write(os.path.join(self.settings.checkpoint_dir, name), state, learner_steps, periodic=False, holder=holder, wall_time=wall_time)
        self._iteration_ended = True
        row = {
            'iteration': iteration,
            'env_steps': self.env_steps,
            'learner_steps': learner_steps,
            'wall_time': wall_time,
            'train_episode_return': train.get('episode_return', math.nan),
            'train_num_episodes': train.get('num_episodes', 0),
            'train_step_rate': train.get('step_rate', math.nan),
            'eval_episode_return': evaluation.get('episode_return', math.nan),
            'eval_num_episodes': evaluation.get('num_episodes', 0),
            'checkpoint': path,
        }
        # Agent statistics that are also results columns (an agent reports them every iteration or never).
        row.update({name: agent_statistics[name] for name in RESULT_STATISTICS if name in agent_statistics})
        self.results.append(row)
        self._keep_if_best(row, state, learner_steps)
        if self.progress is not None:
            self.progress.update(self.env_steps, self.train_logger.recent_returns(), force=True)
        self.say(
            f'iteration {iteration}: env steps {self.env_steps}, train return {row["train_episode_return"]:.2f}, '
            f'eval return {row["eval_episode_return"]:.2f}, checkpoint {path}'
        )
        note = self.learning_not_started_note(learner_steps)
        if note:
            self.say(note)
        return row

    def _keep_if_best(self, row: dict[str, Any], state: dict[str, Any], learner_steps: int) -> None:
        metric_name = self.settings.save_best_metric
        if metric_name == 'none' or self.env_steps < self.settings.save_best_after:
            return
        metric = float(row['eval_episode_return' if metric_name == 'eval_return' else 'train_episode_return'])
        if math.isnan(metric) or metric <= self._best:
            return
        self._write(self._best_path(), state, learner_steps, periodic=False, best_metric=metric, wall_time=row['wall_time'])
        self._best = metric
        self.say(f'new best {metric_name} {metric:.2f} at iteration {row["iteration"]}: {self._best_path()}')

    def evaluate(self, actor: Any, env: Any) -> dict[str, float]:
        """Plays `num_eval_steps` with the greedy `actor` from a fresh reset, or fewer once `max_eval_episodes` episodes
        have ended; logs whole episodes under eval/. A stop request ends it early (the iteration then reports no
        evaluation)."""
        self._require_begun()
        start = time.monotonic()
        budget = self.settings.num_eval_steps
        progress = trackers.ConsoleProgress(budget, self._frames_per_step, stream=sys.stdout, label='evaluation steps') if self.settings.progress and budget > 0 else None

        def report(steps: int) -> None:  # a progress line once an evaluation has taken a while
            if progress is not None and time.monotonic() - start >= EVALUATION_PROGRESS_AFTER_SECONDS:
                if self.progress is not None:
                    self.progress.break_line()
                progress.update(steps, math.nan)

        with one_torch_thread():
            played = play_episodes(
                actor,
                env,
                budget,
                stop=lambda: bool(self.stop_request) or self._time_budget_spent(),
                max_episodes=self.settings.max_eval_episodes,
                report=report,
            )
        if progress is not None:
            progress.close()
        if self.stop_request:
            return {}
        cut_short = played['steps'] < budget and self._time_budget_spent()
        if cut_short:
            self.say(
                f'evaluation: cut at {played["steps"]} of --num_eval_steps={budget} by --train_for_seconds={self.settings.train_for_seconds:g} '
                f'(it bounds the whole run); {0 if played["partial"] else len(played["finished"])} whole episodes scored'
            )
        if not played['partial']:  # an unfinished game is no score: the iteration then reports nan
            self.eval_logger.log_episodes(self.env_steps, played['finished'])
        elif not cut_short:
            self.say(self.unfinished_evaluation_note(played['finished'][0][1]))
        return self.eval_logger.write_performance(self.env_steps, steps_taken=played['steps'], seconds_taken=time.monotonic() - start)

    def unfinished_evaluation_note(self, steps_played: int) -> str:
        """Why an evaluation reports nan: no episode ended within --num_eval_steps, and what budget would do."""
        budget = self.settings.num_eval_steps
        need = f'at least {max(self.longest_train_episode, steps_played) + 1}, the longest training episode so far' if self.longest_train_episode > budget else f'more than {budget}'
        return (
            f'evaluation: no episode ended within --num_eval_steps={budget} (the greedy episode under way had {steps_played} steps), '
            f'so its return is nan; an episode needs {need}: raise --num_eval_steps'
        )

    def learning_not_started_note(self, learner_steps: int) -> str:
        """Why a replay agent has 0 learner steps at the end of an iteration ('' when it has learned)."""
        flags = self.settings.flags
        min_replay_size = flags.get('min_replay_size')
        if learner_steps or not min_replay_size:
            return ''
        if 'priority_eta' in flags:  # R2D2's family: its replay holds sequences (`r2d2/settings.py`)
            return (
                f'no learning yet: learning starts once replay holds --min_replay_size={min_replay_size} sequences of '
                f'--unroll_length={flags.get("unroll_length")} steps; this run is at env step {self.env_steps}'
            )
        return (
            f'no learning yet: learning starts once replay holds --min_replay_size={min_replay_size} transitions '
            f'(about env step {min_replay_size}); this run is at env step {self.env_steps}'
        )

    def close(self) -> None:
        """Ends the session: closes its files (none when it never began) and gives the console back."""
        if self._begun:
            if self.progress is not None:
                self.progress.close()
            self.train_logger.close()
            self.eval_logger.close()
            self.results.close()
            if self.episodes is not None:
                self.episodes.close()
        self._stop_log()

    def _stop_log(self) -> None:
        if self._original_streams is not None:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            sys.stdout, sys.stderr = self._original_streams
            self._original_streams = None
        if self._record is not None:
            self._record.close()  # what a session that never began showed is written nowhere
