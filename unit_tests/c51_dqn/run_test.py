"""C51 end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong, and one-line errors."""

import glob
import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.dqn.run_test import ATARI_FLAGS, CLASSIC_FLAGS, assert_clean_exit, events, only_run_dir, read_csv, read_video
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module, stderr_lines

RETURN_LINE = re.compile(r'^C51 on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('c51_cartpole')
    proc = run_module('deep_rl_zoo.c51_dqn.run_classic', *CLASSIC_FLAGS, '--num_iterations=2', '--checkpoint_dir=ck', '--runs_dir=runs', cwd=str(directory))
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on Pong with the paper's 51 atoms on [-10, 10]."""
    directory = tmp_path_factory.mktemp('c51_pong')
    proc = run_module('deep_rl_zoo.c51_dqn.run_atari', '--environment_name=Pong', *ATARI_FLAGS, '--nouse_tensorboard', '--checkpoint_dir=ck', cwd=str(directory))
    return proc, directory


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['C51_CartPole-v1_0.ckpt', 'C51_CartPole-v1_1.ckpt', 'C51_CartPole-v1_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'C51_CartPole-v1_1.ckpt'), agent_name='C51', environment_name='CartPole-v1')
    assert payload['counters']['env_steps'] == 600 and payload['state']['env_steps'] == 600
    assert 600 - 65 <= payload['counters']['learner_steps'] <= 600 - 64  # learn_interval 1 after 64 transitions
    assert (payload['flags']['num_atoms'], payload['flags']['v_min'], payload['flags']['v_max']) == (51, 0.0, 100.0)
    network = payload['state']['network']
    assert tuple(network['head.weight'].shape) == (2 * 51, 128)
    assert network['support'][0] == 0.0 and network['support'][-1] == 100.0 and len(network['support']) == 51
    assert set(payload['state']) >= {'network', 'target_network', 'optimizer'}
    rows = read_csv(directory / 'ck' / 'C51_CartPole-v1_results.csv')
    assert list(rows[0]) == RESULT_COLUMNS
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '300'), ('1', '600')]
    run_dir = only_run_dir(directory / 'runs')
    assert re.fullmatch(r'CartPole-v1-C51-\d{8}-\d{6}', os.path.basename(run_dir))
    train = events(os.path.join(run_dir, 'train'))
    assert {
        'learner_statistics(learner_steps)/loss',
        'agent_statistics(env_steps)/exploration_epsilon',
        'performance(env_steps)/episode_return',
    } <= set(train.Tags()['scalars'])


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'C51_CartPole-v1_1.ckpt')
    result = run_module('deep_rl_zoo.c51_dqn.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_episodes=2', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path))
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'CartPole-v1' and match.group(3) == '2', result.stdout
    assert float(match.group(4)) >= 8  # CartPole lasts at least 8 steps
    videos = glob.glob(str(tmp_path / 'rec' / 'C51_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) > 1 and frames[0].shape == (400, 600, 3)


def test_run_atari_pong_checkpoint(pong):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['C51_Pong_0.ckpt', 'C51_Pong_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'C51_Pong_0.ckpt'), agent_name='C51', environment_name='Pong')
    assert payload['counters']['env_steps'] == 200
    assert payload['counters']['learner_steps'] in (33, 34)  # learn_interval 4 once replay holds 64 stacks
    assert payload['flags']['learning_rate'] == 0.00025 and payload['flags']['adam_eps'] == 0.01 / 32
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['head.weight'].shape) == (6 * 51, 512)  # Pong's 6 actions x 51 atoms
    assert network['support'][0] == -10.0 and network['support'][-1] == 10.0


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'C51_Pong_0.ckpt')
    result = run_module('deep_rl_zoo.c51_dqn.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_steps=50', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path))
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'Pong', result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'C51_Pong_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) == 51 and frames[0].shape == (210, 160, 3)


def test_v_min_not_below_v_max_ends_with_one_line(tmp_path):
    proc = run_module('deep_rl_zoo.c51_dqn.run_classic', '--v_min=5', '--v_max=5', '--nouse_tensorboard', '--checkpoint_dir=ck', cwd=str(tmp_path))
    assert proc.returncode != 0 and TRACEBACK not in proc.stderr
    assert stderr_lines(proc)[-1] == 'error: --v_min (5.0) must be below --v_max (5.0)', proc.stderr
    assert not glob.glob(str(tmp_path / 'ck' / '*.ckpt'))
