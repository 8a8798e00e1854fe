"""Every agent's Pong preset (`PRESETS['Pong']` of deep_rl_zoo/<agent>/settings.py): it exists for all 21 run_atari
scripts, is settings of their Atari kind with values in every flag's bounds (absl's validators and the settings' own
check), and trains for the Pong budget (2M agent steps, evaluated every 100k on up to 10 whole games). Each agent's Pong smoke run (its
run_test) applies it end to end."""

import importlib
from pathlib import Path

import pytest
from absl import flags as absl_flags

from deep_rl_zoo import flags
from unit_tests.helpers import REPO_ROOT

ATARI_AGENTS = sorted(path.parent.name for path in Path(REPO_ROOT, 'deep_rl_zoo').glob('*/run_atari.py'))


def test_all_21_agents_train_atari():
    assert len(ATARI_AGENTS) == 21


@pytest.mark.parametrize('package', ATARI_AGENTS)
def test_the_pong_preset_sets_only_flags_of_its_run_atari_with_accepted_values(package):
    preset = importlib.import_module(f'deep_rl_zoo.{package}.settings').PRESETS['Pong']
    assert preset.environment_kind == 'atari' and preset.environment_name == 'Pong'
    assert preset.num_iterations * preset.num_train_steps == 2_000_000 and preset.num_train_steps == 100_000
    # Evaluations of 10 whole games, fewer when they are long: within the longest a game may last (108,000 frames).
    assert (preset.max_eval_episodes, preset.num_eval_steps, preset.max_episode_frames) == (10, 27_000, 108_000)
    preset.validate()
    with flags.script_flags(f'deep_rl_zoo.{package}.run_atari'):
        for name, value in preset.flag_values().items():
            if name == 'environment_kind':
                continue
            assert name in absl_flags.FLAGS, f'{package}/settings.py: the Pong preset has --{name}, which its run_atari does not define'
            setattr(absl_flags.FLAGS, name, value)  # runs the flag's validators (bounds, enums)
            assert absl_flags.FLAGS[name].value == value


def test_a_value_out_of_bounds_would_be_refused():
    with flags.script_flags('deep_rl_zoo.dqn.run_atari'):
        with pytest.raises(absl_flags.IllegalFlagValueError):
            setattr(absl_flags.FLAGS, 'learn_interval', 0)
    preset = importlib.import_module('deep_rl_zoo.dqn.settings').PRESETS['Pong']
    with pytest.raises(ValueError, match=r'^--learn_interval=0: must be at least 1$'):
        preset.replace(learn_interval=0).validate()


@pytest.mark.parametrize('package', ['dqn', 'double_dqn', 'prioritized_dqn', 'c51_dqn', 'qr_dqn', 'iqn', 'rainbow'])
def test_the_dqn_family_pong_presets_keep_tianshous_adam_eps(package):
    # Tianshou's Atari examples use PyTorch's Adam eps; run_atari's 0.01/32 (the C51, QR-DQN and IQN papers') beside
    # Adam 1e-4 all but froze C51's 512-unit layer and head on Pong (benchmarks/NOTEBOOK.md, "C51 on Pong: Adam's eps").
    preset = importlib.import_module(f'deep_rl_zoo.{package}.settings').PRESETS['Pong']
    assert preset.adam_eps == 1e-8 and preset.learning_rate in (1e-4, 6.25e-5)
