"""Every command of README.md, QUICK_START.md, the docs pages (docs/*.md) and the results notebook
(benchmarks/NOTEBOOK.md) works on a fresh clone, in the order a reader meets them (issue 10; the docs since issue 23).

The `python -m deep_rl_zoo...` and `python -m benchmarks...` commands of each file's fenced blocks are taken in
reading order, each file on its own (a reader may start with any of them). Each must name a module that exists,
only flags it defines and values its validators take: the absl run scripts' flags are parsed in this process, one
script after another (with the preset of the environment applied, as the script would), the learning benchmark's
too, with the flags it hands each agent's run script. A checkpoint an `eval_agent` loads must ship with the
repository (git) or be one that an earlier training command of the same file writes: that agent's experiment
directory, environment and an iteration below its `--num_iterations`. Every other command of a `bash` block must
name a program that exists (`./setup.sh`, `.venv/bin/tensorboard`, ...) and the requirement files it installs.
Training runs take minutes to days, so only their flags are checked; the cheap commands run for real in a fresh
copy, in order: QUICK_START's first session (the PPO command with a tiny budget, then its `eval_agent` on the
checkpoint it wrote), and the model card session of docs/training.md on the shipped PPO checkpoint
(`eval_agent --push_to_hub`, whose upload fails offline in one line, then `load_from_hub` of the model folder it
wrote and of a hub repository, which fails offline in one line)."""

import argparse
import contextlib
import dataclasses
import glob
import importlib
import importlib.util
import inspect
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from typing import Any, Optional
from unittest import mock

import pytest
from absl import flags as absl_flags

from benchmarks import learning
from deep_rl_zoo import experiment
from deep_rl_zoo import flags as flags_lib
from deep_rl_zoo import load_from_hub, model_card
from deep_rl_zoo.settings import Common
from unit_tests.helpers import REPO_ROOT, TRACEBACK, run_module


DOCUMENTS = (
    'QUICK_START.md', 'README.md', 'benchmarks/NOTEBOOK.md',
    *sorted(os.path.relpath(path, REPO_ROOT) for path in glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md'))),
)  # fmt: skip
FENCE = re.compile(r'^[ \t]*```([^\n]*)\n(.*?)^[ \t]*```', re.S | re.M)  # QUICK_START indents its blocks in a list
ENVIRONMENT_VARIABLE = re.compile(r'^\w+=\S*$')  # OMP_NUM_THREADS=1 before a command
RUN_SCRIPT = re.compile(r'deep_rl_zoo\.(\w+)\.(run_\w+|eval_agent)')
# The budget a training command runs on here: one update of every CartPole script in each iteration, no evaluation.
TINY = ('--num_train_steps=256', '--num_eval_steps=0', '--noprogress', '--nouse_tensorboard', '--save_every_sec=0')
FLAGS = absl_flags.FLAGS


@dataclasses.dataclass
class Command:
    document: str
    module: str
    arguments: list[str]

    def __str__(self) -> str:
        return f'{self.document}: python -m {self.module} {" ".join(self.arguments)}'

    def flag(self, name: str) -> Optional[str]:
        """The value of --name (the last one given), or None."""
        values = [argument.split('=', 1)[1] for argument in self.arguments if argument.startswith(f'--{name}=')]
        return values[-1] if values else None


def commands(document: str) -> list[Command]:
    """The `python -m deep_rl_zoo...` / `python -m benchmarks...` commands of the fenced blocks, in reading order."""
    with open(os.path.join(REPO_ROOT, document), encoding='utf-8') as file:
        text = file.read()
    found = []
    for _, block in FENCE.findall(text):
        for line in block.replace('\\\n', ' ').splitlines():
            for part in line.split('&&'):
                if not re.search(r'python\S* -m (deep_rl_zoo|benchmarks)\.', part):
                    continue  # another command, or no command (a directory listing, a table)
                words = shlex.split(part, comments=True)
                while words and ENVIRONMENT_VARIABLE.match(words[0]):
                    words = words[1:]
                if len(words) >= 3 and os.path.basename(words[0]).startswith('python') and words[1] == '-m' and words[2].startswith(('deep_rl_zoo.', 'benchmarks.')):
                    found.append(Command(document, words[2], words[3:]))
                else:
                    raise AssertionError(f'{document}: a python -m command this test cannot read: {part.strip()}')
    return found


def other_commands(document: str) -> list[list[str]]:
    """The words of every command of the `bash` blocks that is not a `python -m` command (`./setup.sh`, tensorboard,
    ray, pip, ...), each part of `a && b` on its own, with leading variable assignments and `cd DIR` dropped."""
    with open(os.path.join(REPO_ROOT, document), encoding='utf-8') as file:
        text = file.read()
    found = []
    for language, block in FENCE.findall(text):
        if language.strip() != 'bash':
            continue
        for line in block.replace('\\\n', ' ').splitlines():
            for part in line.split('&&'):
                words = shlex.split(part, comments=True)
                while words and ENVIRONMENT_VARIABLE.match(words[0]):
                    words = words[1:]
                if not words or words[0] == 'cd' or (len(words) > 2 and words[1] == '-m'):
                    continue
                found.append(words)
    return found


def shipped_files() -> set[str]:
    """The files a fresh clone holds: git's index, or in a copy of the tree without git, the files present (but the
    virtual environment and caches)."""
    try:
        listed = subprocess.run(['git', '-C', REPO_ROOT, 'ls-files', '-z'], capture_output=True, text=True, check=True).stdout
        return set(listed.split('\0')) - {''}
    except (OSError, subprocess.CalledProcessError):
        pass
    present = set()
    for directory, subdirectories, files in os.walk(REPO_ROOT):
        subdirectories[:] = [name for name in subdirectories if name not in ('.venv', '.git', '__pycache__', '.pytest_cache')]
        present.update(os.path.relpath(os.path.join(directory, name), REPO_ROOT) for name in files)
    return present


# --------------------------------------------------------------------------------------- flags of a run script


def _no_experiment(settings, explicit):
    """`experiment.prepare` for commands that are only parsed: no experiment directory is looked at."""
    return settings


def parse(command: Command, module_name: str, arguments: list[str]) -> Any:
    """Parses `arguments` as the run script `module_name` would (absl's validators, then `flags.resolve_settings`: the
    environment's preset, APPO's --config_json, the bounds; no experiment directory is read); call inside
    `flags_lib.script_flags`. Returns the run's settings."""
    try:
        left = FLAGS([module_name, *arguments])
        assert len(left) == 1, f'{command}: unexpected arguments {left[1:]}'
        if 'config_json' in FLAGS and FLAGS.config_json:
            FLAGS.config_json = os.path.join(REPO_ROOT, FLAGS.config_json)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), mock.patch.object(experiment, 'prepare', _no_experiment):
            return flags_lib.resolve_settings()
    except (absl_flags.Error, ValueError) as error:
        pytest.fail(f'{command}: {error}')


def agent_names(package: str) -> set[str]:
    """The agent names of an agent package (its checkpoints start with one)."""
    module = importlib.import_module(f'deep_rl_zoo.{package}.agent')
    return {
        value.agent_name for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and getattr(value, 'agent_name', '')
    }  # fmt: skip


@dataclasses.dataclass
class Trained:
    """What an earlier training command of the document writes."""

    package: str
    settings: Common  # the run's settings under the core's names (translated for APPO), as the experiment sees them


def written_by(path: str, trained: list[Trained], package: str) -> bool:
    """Whether an earlier training command of `package` writes the checkpoint `path`."""
    for run in reversed(trained):
        if run.package != package:
            continue
        for agent in agent_names(package):
            environment = run.settings.environment_name.replace('/', '_')
            directory = experiment.checkpoint_location(agent, run.settings)
            names = {os.path.normpath(os.path.join(directory, f'{agent}_{environment}_{i}.ckpt')) for i in range(run.settings.num_iterations)}
            if os.path.normpath(path) in names:
                return True
    return False


def check_document(document: str, shipped: set[str]) -> list[Command]:
    """Checks every command of `document` in reading order without running it; returns them."""
    found = commands(document)
    trained: list[Trained] = []
    for command in found:
        try:
            spec = importlib.util.find_spec(command.module)
        except ModuleNotFoundError:
            spec = None
        assert spec is not None, f'{command}: no module {command.module}'
        script = RUN_SCRIPT.fullmatch(command.module)
        if script:
            package = script.group(1)
            with flags_lib.script_flags(command.module):
                settings = parse(command, command.module, command.arguments)
                if script.group(2) != 'eval_agent':
                    try:
                        trained.append(Trained(package, settings.core_settings()))
                    except ValueError as error:  # APPO's flags that do not fit together
                        pytest.fail(f'{command}: {error}')
                    continue
            path = settings.load_checkpoint_file
            assert path, f'{command}: no --load_checkpoint_file'
            assert os.path.normpath(path) in shipped or written_by(path, trained, package), (
                f'{command}: {path} does not ship with the repository and no training command before it writes it'
            )
        elif command.module == 'benchmarks.learning':
            check_benchmark(command)
        else:  # load_from_hub and the other benchmarks: argparse scripts with a main(argv)
            argparse_arguments(command)
    return found


def argparse_arguments(command: Command) -> argparse.Namespace:
    """The arguments of an argparse script's `main` as its parser reads them, stopping there (a bad one fails the
    test; arguments a script hands on with parse_known_args are not checked here)."""
    captured: dict[str, argparse.Namespace] = {}
    original = {name: getattr(argparse.ArgumentParser, name) for name in ('parse_args', 'parse_known_args')}

    def stopping(name):
        def parse(self, args=None, namespace=None):
            if 'arguments' in captured:  # parse_args calls parse_known_args: let the inner call parse
                return original[name](self, args, namespace)
            captured['arguments'] = None
            captured['arguments'] = parse(self, args, namespace)
            raise SystemExit(0)

        return parse

    main = importlib.import_module(command.module).main
    with contextlib.ExitStack() as patches:
        for name in original:
            patches.enter_context(mock.patch.object(argparse.ArgumentParser, name, stopping(name)))
        patches.enter_context(mock.patch.object(sys, 'argv', [command.module, *command.arguments]))
        with contextlib.redirect_stderr(io.StringIO()) as errors, pytest.raises(SystemExit) as exit_:
            main(command.arguments) if inspect.signature(main).parameters else main()
    assert exit_.value.code == 0, f'{command}: {errors.getvalue()}'
    return captured['arguments']


def check_benchmark(command: Command) -> None:
    """The learning benchmark's own flags, its agents and environments, and the flags it hands their run scripts."""
    with contextlib.redirect_stderr(io.StringIO()) as errors:
        try:
            arguments = learning.parse_args(command.arguments)
        except SystemExit:
            pytest.fail(f'{command}: {errors.getvalue().strip()}')
    for agent in learning._list(arguments.agents):
        for environment in learning._list(arguments.environments):
            try:
                learning.threshold_of(environment, arguments.threshold)
                run = learning.Run(agent, environment, 1, learning.Path('run'))
                _, _, module_name, *script_arguments = learning.command_line(run, arguments)  # as the benchmark starts it
            except SystemExit as error:
                pytest.fail(f'{command}: {error}')
            with flags_lib.script_flags(module_name):
                parse(command, module_name, script_arguments)


@pytest.mark.slow
def test_every_command_names_a_module_its_flags_and_a_checkpoint_that_exists():
    shipped = {os.path.normpath(path) for path in shipped_files()}
    found = [command for document in DOCUMENTS for command in check_document(document, shipped)]
    documents = {command.document for command in found}
    assert {'QUICK_START.md', 'README.md', 'docs/training.md', 'docs/appo.md', 'benchmarks/NOTEBOOK.md'} <= documents, documents


def test_every_other_command_names_a_program_and_files_that_exist():
    """`./setup.sh`, `.venv/bin/<program>` (installed by setup.sh) and the files given to `-r`."""
    seen = 0
    for document in DOCUMENTS:
        for words in other_commands(document):
            program = words[0]
            where = f'{document}: {shlex.join(words)}'
            assert program.startswith(('./', '.venv/bin/')), f'{where}: run the project\'s programs as ./setup.sh or .venv/bin/...'
            assert os.path.isfile(os.path.join(REPO_ROOT, program)), f'{where}: no {program}'
            for flag, value in zip(words, words[1:]):
                if flag == '-r':
                    assert os.path.isfile(os.path.join(REPO_ROOT, value)), f'{where}: no {value}'
            seen += 1
    assert seen >= 5


# ------------------------------------------------------------------------------------------- the cheap ones, run


def evaluate(command: Command, *extra: str) -> str:
    """Runs an eval_agent command in this process (as its script's main would run); returns what it printed."""
    with flags_lib.script_flags(command.module) as module:
        settings = parse(command, command.module, [*command.arguments, *extra])
        with contextlib.redirect_stdout(io.StringIO()) as out:
            module.main(settings)
    return out.getvalue()


@pytest.mark.slow  # starts a training process (deselect with -m "not slow"); the checks above only parse flags
def test_the_first_session_and_the_model_card_session_run_on_a_fresh_copy(tmp_path, monkeypatch):
    clone = tmp_path / 'clone'
    for path in shipped_files():
        if path.startswith('checkpoints/'):
            os.makedirs(clone / os.path.dirname(path), exist_ok=True)
            shutil.copyfile(os.path.join(REPO_ROOT, path), clone / path)
    monkeypatch.chdir(clone)
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')  # the hub is never reached from tests: huggingface_hub fails at once
    if 'huggingface_hub' in sys.modules:  # imported already: its offline switch was read then
        monkeypatch.setattr(sys.modules['huggingface_hub'].constants, 'HF_HUB_OFFLINE', True)

    # QUICK_START: train PPO (a tiny budget), then watch its last checkpoint play.
    train, watch = [command for command in commands('QUICK_START.md') if command.module.startswith('deep_rl_zoo.ppo.')][:2]
    assert train.module == 'deep_rl_zoo.ppo.run_classic' and watch.module == 'deep_rl_zoo.ppo.eval_agent'
    proc = run_module(train.module, *train.arguments, *TINY, cwd=str(clone))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    out = evaluate(watch, '--num_eval_steps=600')
    assert re.search(rf'^PPO on CartPole-v1, checkpoint {re.escape(watch.flag("load_checkpoint_file"))}: \d+ episodes', out, re.M), out

    # docs/training.md: a model card of the shipped PPO checkpoint (the upload fails offline in one line), then
    # load_from_hub.
    training = commands('docs/training.md')
    (push,) = [command for command in training if '--push_to_hub' in command.arguments]
    hub = [command for command in training if command.module == 'deep_rl_zoo.load_from_hub']
    assert len(hub) == 2
    with pytest.raises(model_card.HubError, match='offline|Hub'):
        evaluate(push, '--num_eval_steps=1000')
    assert sorted(os.listdir(clone / 'hub' / 'ppo-CartPole-v1'))[:2] == ['PPO_CartPole-v1.ckpt', 'README.md']
    for command in hub:
        with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
            status = load_from_hub.main(command.arguments)
        if os.path.isdir(command.arguments[-1]):
            assert status == 0 and 'PPO on CartPole-v1' in out.getvalue(), err.getvalue()
        else:
            assert status == 1 and err.getvalue().startswith(f'error: could not download {command.arguments[-1]}'), err.getvalue()
