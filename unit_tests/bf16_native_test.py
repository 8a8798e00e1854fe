"""--bf16_learning where bfloat16 has hardware (`networks.common.bf16_is_native`, `flags.bf16_where_native`): a
preset's or a resumed config's bf16_learning is left off on a learner device without it, where bfloat16 autocast is
emulated and several times slower than float32; asked for on the command line, it stays on with a warning."""

import importlib
import os

import pytest
import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.networks import common

DQN_PONG = importlib.import_module('deep_rl_zoo.dqn.settings').PRESETS['Pong']
PPO_PONG = importlib.import_module('deep_rl_zoo.ppo.settings').PRESETS['Pong']


@pytest.mark.skipif(not os.path.exists('/proc/cpuinfo'), reason='reads the CPU flags Linux reports')
def test_the_cpu_is_native_exactly_when_linux_reports_avx512_bf16_or_amx_bf16():
    with open('/proc/cpuinfo', encoding='utf-8') as file:
        cpu_flags = set(next(line for line in file if line.startswith('flags')).split(':', 1)[1].split())
    assert common.bf16_is_native(torch.device('cpu')) == bool({'avx512_bf16', 'amx_bf16'} & cpu_flags)


def test_the_dqn_pong_preset_asks_for_bf16_learning():
    assert DQN_PONG.bf16_learning and not PPO_PONG.bf16_learning


@pytest.mark.parametrize('package', ['r2d2', 'ngu', 'agent57'])
def test_the_sequence_agents_pong_presets_learn_on_one_thread_in_bf16(package):
    # Their actors wait for the learner's gradient step: one bfloat16 thread beside the 2 actor processes ran R2D2's
    # preset at 258 agent steps/s against 201 with 2 float32 threads (benchmarks/results/pong_preset_speed_sequences_xeon*.md).
    preset = importlib.import_module(f'deep_rl_zoo.{package}.settings').PRESETS['Pong']
    assert preset.bf16_learning and preset.learner_threads == 1 and preset.num_actors == 2


def test_a_preset_bf16_learning_is_left_off_without_bf16_hardware(monkeypatch, capsys):
    monkeypatch.setattr(common, 'bf16_is_native', lambda device: False)
    settled = flags.bf16_where_native(DQN_PONG, explicit=frozenset({'environment_name'}))
    assert not settled.bf16_learning and settled == DQN_PONG.replace(bf16_learning=False)
    out = capsys.readouterr()
    assert out.out.startswith('--bf16_learning left off: the learner\'s ') and 'no bfloat16 hardware' in out.out and not out.err


def test_bf16_learning_on_the_command_line_stays_on_with_a_warning(monkeypatch, capsys):
    monkeypatch.setattr(common, 'bf16_is_native', lambda device: False)
    assert flags.bf16_where_native(DQN_PONG, explicit=frozenset({'bf16_learning'})) is DQN_PONG
    out = capsys.readouterr()
    assert out.err.startswith('warning: --bf16_learning: the learner\'s ') and not out.out


def test_bf16_learning_stays_where_the_hardware_has_it_and_off_stays_off(monkeypatch, capsys):
    monkeypatch.setattr(common, 'bf16_is_native', lambda device: True)
    assert flags.bf16_where_native(DQN_PONG, explicit=frozenset()) is DQN_PONG
    monkeypatch.setattr(common, 'bf16_is_native', lambda device: False)
    assert flags.bf16_where_native(PPO_PONG, explicit=frozenset()) is PPO_PONG
    assert capsys.readouterr().out == ''


def test_the_learner_device_of_a_run_follows_learner_on_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    assert main_loop.run_learner_device(DQN_PONG) == torch.device('cuda:0')  # the value agents' learner takes a GPU
    assert main_loop.run_learner_device(PPO_PONG.replace(learner_on_gpu=False)) == torch.device('cpu')
    assert main_loop.run_learner_device(PPO_PONG.replace(learner_on_gpu=True)) == torch.device('cuda:0')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert main_loop.run_learner_device(PPO_PONG.replace(learner_on_gpu=True)) == torch.device('cpu')  # no GPU
