"""IQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong, and one-line errors."""

import glob
import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.dqn.run_test import ATARI_FLAGS, CLASSIC_FLAGS, assert_clean_exit, events, only_run_dir, read_csv, read_video
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module, stderr_lines

FEW_SAMPLES = ('--batch_size=8', '--tau_samples_s_tm1=8', '--tau_samples_s_t=8', '--tau_samples_policy=8')
RETURN_LINE = re.compile(r'^IQN on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('iqn_cartpole')
    proc = run_module(
        'deep_rl_zoo.iqn.run_classic', *CLASSIC_FLAGS, '--num_iterations=2', '--checkpoint_dir=ck', '--runs_dir=runs', cwd=str(directory)
    )
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on Pong; fewer tau samples and a smaller batch than the paper's keep it quick on a CPU."""
    directory = tmp_path_factory.mktemp('iqn_pong')
    proc = run_module(
        'deep_rl_zoo.iqn.run_atari',
        '--environment_name=Pong',
        *ATARI_FLAGS,
        *FEW_SAMPLES,
        '--nouse_tensorboard',
        '--checkpoint_dir=ck',
        cwd=str(directory),
    )
    return proc, directory


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == [
        'IQN_CartPole-v1_0.ckpt',
        'IQN_CartPole-v1_1.ckpt',
        'IQN_CartPole-v1_results.csv',
    ]
    ckpt = str(directory / 'ck' / 'IQN_CartPole-v1_1.ckpt')
    payload = checkpoint.load_checkpoint(ckpt, agent_name='IQN', environment_name='CartPole-v1')
    assert payload['counters']['env_steps'] == 600 and payload['state']['env_steps'] == 600
    assert 600 - 65 <= payload['counters']['learner_steps'] <= 600 - 64  # learn_interval 1 after 64 transitions
    flags = payload['flags']
    assert (flags['tau_samples_s_tm1'], flags['tau_samples_s_t'], flags['tau_samples_policy'], flags['tau_embed_dim']) == (8, 8, 8, 64)
    network = payload['state']['network']
    assert tuple(network['tau_embedding.linear.weight'].shape) == (64, 64)  # n = 64 cosines -> psi's 64 units
    assert tuple(network['head.2.weight'].shape) == (2, 64)
    assert set(payload['state']) >= {'network', 'target_network', 'optimizer'}
    rows = read_csv(directory / 'ck' / 'IQN_CartPole-v1_results.csv')
    assert list(rows[0]) == RESULT_COLUMNS
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '300'), ('1', '600')]
    train = events(os.path.join(only_run_dir(directory / 'runs'), 'train'))
    assert 'learner_statistics(learner_steps)/loss' in train.Tags()['scalars']
    assert re.fullmatch(r'CartPole-v1-IQN-\d{8}-\d{6}', os.path.basename(only_run_dir(directory / 'runs')))


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'IQN_CartPole-v1_1.ckpt')
    result = run_module(
        'deep_rl_zoo.iqn.eval_agent',
        f'--load_checkpoint_file={ckpt}',
        '--num_eval_episodes=2',
        f'--recording_video_dir={tmp_path / "rec"}',
        cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'CartPole-v1' and match.group(3) == '2', result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'IQN_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) > 1 and frames[0].shape == (400, 600, 3) and frames[0].std() > 0


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['IQN_Pong_0.ckpt', 'IQN_Pong_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'IQN_Pong_0.ckpt'), agent_name='IQN')
    assert payload['counters']['env_steps'] == 200 and payload['counters']['learner_steps'] in (33, 34)
    network = payload['state']['network']
    assert tuple(network['tau_embedding.linear.weight'].shape) == (3136, 64)  # psi: Nature DQN's conv features
    assert tuple(network['head.0.weight'].shape) == (512, 3136) and tuple(network['head.2.weight'].shape) == (6, 512)
    assert payload['flags']['tau_embed_dim'] == 64 and payload['flags']['huber_param'] == 1.0
    assert payload['flags']['learning_rate'] == 5e-5 and payload['flags']['adam_eps'] == pytest.approx(0.01 / 32)
    result = run_module(
        'deep_rl_zoo.iqn.eval_agent',
        f'--load_checkpoint_file={directory / "ck" / "IQN_Pong_0.ckpt"}',
        '--num_eval_steps=50',
        f'--recording_video_dir={tmp_path / "rec"}',
        cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    assert RETURN_LINE.search(result.stdout).group(1) == 'Pong'
    frames = read_video(glob.glob(str(tmp_path / 'rec' / 'IQN_Pong_*.mp4'))[0])
    assert len(frames) == 51 and frames[0].shape == (210, 160, 3)


def test_bad_flags_and_wrong_checkpoint_give_one_line(cartpole, tmp_path):
    proc = run_module('deep_rl_zoo.iqn.run_classic', '--tau_samples_policy=0', '--checkpoint_dir=ck', cwd=str(tmp_path))
    assert proc.returncode != 0 and TRACEBACK not in proc.stderr
    assert stderr_lines(proc)[0].startswith('error: flag --tau_samples_policy=0')
    assert not (tmp_path / 'ck').exists()
    _, directory = cartpole
    checkpoint_file = directory / 'ck' / 'IQN_CartPole-v1_0.ckpt'
    wrong = run_module('deep_rl_zoo.qr_dqn.eval_agent', f'--load_checkpoint_file={checkpoint_file}', cwd=str(tmp_path))
    assert wrong.returncode != 0 and TRACEBACK not in wrong.stderr
    assert 'IQN' in stderr_lines(wrong)[-1] and 'QRDQN' in stderr_lines(wrong)[-1], wrong.stderr
