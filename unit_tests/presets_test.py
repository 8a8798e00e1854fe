"""Tuned presets per environment (`PRESETS` of deep_rl_zoo/<agent>/settings.py, flags.apply_preset): a run script applies
the preset of --environment_name where it differs from the script's defaults and prints what it set, flags given on
the command line win, --preset=none turns it off, and every preset runs on its script."""

import importlib
import json
import os
from pathlib import Path

import pytest

from unit_tests.helpers import REPO_ROOT, TRACEBACK, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

WITHOUT_UNROLL_LENGTH = ('dqn', 'double_dqn', 'prioritized_dqn', 'c51_dqn', 'qr_dqn', 'rainbow', 'iqn')  # the replay-based Q agents with presets
PRESET_PACKAGES = sorted(path.parent.name for path in Path(REPO_ROOT, 'deep_rl_zoo').glob('*/settings.py'))  # every agent's settings
VALUE_TINY = ('--num_iterations=1', '--num_train_steps=1', '--num_eval_steps=0', '--noprogress', '--nouse_tensorboard')
TINY = (*VALUE_TINY, '--unroll_length=4')


def config(directory, experiment):
    with open(os.path.join(directory, experiment, 'config.json'), encoding='utf-8') as file:
        return json.load(file)['flags']


def test_the_preset_of_the_environment_applies_and_command_line_flags_win(tmp_path):
    proc = run_module('deep_rl_zoo.ppo.run_classic', '--environment_name=LunarLander-v3', *TINY, '--learning_rate=1e-3', f'--train_dir={tmp_path}', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-2000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith('preset ')]
    assert line.startswith('preset LunarLander-v3 (deep_rl_zoo/ppo/settings.py, --preset=none to turn it off): ')
    assert '--num_envs_per_actor=16 ' in line and '--discount=0.999' in line and '--anneal_learning_rate=false' in line
    assert line.endswith('from the command line instead: --learning_rate, --num_iterations, --num_train_steps, --unroll_length')
    flags = config(tmp_path, 'PPO_LunarLander-v3')
    assert (flags['num_envs_per_actor'], flags['discount'], flags['gae_lambda'], flags['anneal_learning_rate']) == (16, 0.999, 0.98, False)
    assert (flags['learning_rate'], flags['unroll_length'], flags['preset']) == (1e-3, 4, 'auto')


def test_preset_none_keeps_the_scripts_defaults(tmp_path):
    proc = run_module('deep_rl_zoo.ppo.run_classic', '--environment_name=LunarLander-v3', '--preset=none', *TINY, f'--train_dir={tmp_path}', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'preset ' not in proc.stdout
    flags = config(tmp_path, 'PPO_LunarLander-v3')
    assert (flags['num_envs_per_actor'], flags['discount'], flags['preset']) == (8, 0.98, 'none')  # run_classic's CartPole defaults


def test_the_dqn_cartpole_preset_applies_and_command_line_flags_win(tmp_path):
    proc = run_module('deep_rl_zoo.dqn.run_classic', *VALUE_TINY, '--learning_rate=1e-3', f'--train_dir={tmp_path}', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-2000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith('preset ')]
    assert line.startswith('preset CartPole-v1 (deep_rl_zoo/dqn/settings.py, --preset=none to turn it off): ')  # the default task
    assert '--learn_interval=2 ' in line and '--exploration_epsilon_end_value=0.04' in line and '--learning_rate' not in line.split(';')[0]
    assert line.endswith('from the command line instead: --learning_rate, --num_iterations, --num_train_steps')
    preset = importlib.import_module('deep_rl_zoo.dqn.settings').PRESETS['CartPole-v1'].flag_values()
    flags = config(tmp_path, 'DQN_CartPole-v1')
    given = ('num_iterations', 'num_train_steps', 'num_eval_steps', 'progress', 'use_tensorboard', 'learning_rate', 'train_dir')
    assert {name: flags[name] for name in preset if name not in given} == {name: value for name, value in preset.items() if name not in given}
    assert (flags['learning_rate'], flags['num_train_steps'], flags['preset']) == (1e-3, 1, 'auto')


def preset_runs():
    """(run script, environment) for every preset of every agent; continuous tasks go to run_continuous. The Pong
    presets are checked in pong_presets_test (in-process) and applied by every agent's Pong smoke run."""
    for package in PRESET_PACKAGES:
        for environment, preset in getattr(importlib.import_module(f'deep_rl_zoo.{package}.settings'), 'PRESETS', {}).items():
            if preset.environment_kind == 'atari':
                continue
            yield f'deep_rl_zoo.{package}.run_{preset.environment_kind}', environment


TESTED_ABOVE = (('deep_rl_zoo.ppo.run_classic', 'LunarLander-v3'), ('deep_rl_zoo.dqn.run_classic', 'CartPole-v1'))


@pytest.mark.parametrize('module, environment', [run for run in preset_runs() if run not in TESTED_ABOVE])
def test_every_preset_applies_to_its_script(tmp_path, module, environment):
    """Every preset names only flags its script defines (a wrong name would stop the run with one line)."""
    tiny = VALUE_TINY if module.split('.')[1] in WITHOUT_UNROLL_LENGTH else TINY
    proc = run_module(module, f'--environment_name={environment}', *tiny, f'--train_dir={tmp_path}', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-2000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith('preset ')]
    assert line.startswith(f'preset {environment} ')
