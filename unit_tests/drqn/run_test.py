"""DRQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with its
checkpoints, CSV and TensorBoard, run_atari on flickering Pong (single frames, obscured observations),
eval_agent videos of both, and a bad flag."""

import csv
import glob
import os
import re

import imageio.v2 as imageio
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from deep_rl_zoo import checkpoint
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module

import pytest

RETURN_LINE = re.compile(r'^DRQN on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


def assert_clean_exit(proc):
    assert proc.returncode == 0, f'exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}'
    assert TRACEBACK not in proc.stderr


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def read_video(path):
    reader = imageio.get_reader(path)
    try:
        return [frame for frame in reader]
    finally:
        reader.close()


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('drqn_cartpole')
    proc = run_module(
        'deep_rl_zoo.drqn.run_classic',
        '--num_iterations=2',
        '--num_train_steps=300',
        '--num_eval_steps=100',
        '--min_replay_size=64',
        '--batch_size=8',
        '--noprogress',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(directory),
    )
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on flickering Pong, without TensorBoard."""
    directory = tmp_path_factory.mktemp('drqn_pong')
    proc = run_module(
        'deep_rl_zoo.drqn.run_atari',
        '--environment_name=Pong',
        '--obscure_probability=0.5',
        '--replay_capacity=2000',
        '--min_replay_size=64',
        '--batch_size=2',
        '--num_train_steps=200',
        '--num_eval_steps=50',
        '--num_iterations=1',
        '--nouse_tensorboard',
        '--noprogress',
        '--checkpoint_dir=ck',
        cwd=str(directory),
    )
    return proc, directory


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['DRQN_CartPole-v1_0.ckpt', 'DRQN_CartPole-v1_1.ckpt', 'DRQN_CartPole-v1_results.csv']
    loaded = [checkpoint.load_checkpoint(str(directory / 'ck' / f'DRQN_CartPole-v1_{i}.ckpt'), agent_name='DRQN') for i in (0, 1)]
    for payload, env_steps in zip(loaded, (300, 600)):
        assert payload['counters']['env_steps'] == payload['state']['env_steps'] == env_steps
        assert payload['flags']['environment_kind'] == 'classic' and payload['flags']['unroll_length'] == 8
        assert tuple(payload['state']['network']['lstm.weight_hh_l0'].shape) == (4 * 128, 128)
    first, second = (payload['counters']['learner_steps'] for payload in loaded)
    # learn_interval 4: learning starts once replay holds 64 steps, then every 4 env steps.
    assert 0 < first < 300 // 4 and second - first == 300 // 4
    rows = read_csv(directory / 'ck' / 'DRQN_CartPole-v1_results.csv')
    assert list(rows[0]) == RESULT_COLUMNS and [row['env_steps'] for row in rows] == ['300', '600']
    assert all(int(row['eval_num_episodes']) >= 1 and float(row['eval_episode_return']) > 0 for row in rows)
    runs = os.listdir(directory / 'runs')
    assert len(runs) == 1 and re.fullmatch(r'CartPole-v1-DRQN-\d{8}-\d{6}', runs[0])
    train = EventAccumulator(str(directory / 'runs' / runs[0] / 'train'))
    train.Reload()
    assert {'learner_statistics(learner_steps)/loss', 'agent_statistics(env_steps)/replay_size'} <= set(train.Tags()['scalars'])


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'DRQN_CartPole-v1_1.ckpt')
    result = run_module(
        'deep_rl_zoo.drqn.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_episodes=2',
        f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'CartPole-v1' and match.group(3) == '2', result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'DRQN_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) > 1 and frames[0].shape == (400, 600, 3) and frames[0].std() > 0


def test_run_atari_flickering_pong_checkpoint(pong):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['DRQN_Pong_0.ckpt', 'DRQN_Pong_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'DRQN_Pong_0.ckpt'), agent_name='DRQN', environment_name='Pong')
    assert payload['counters']['env_steps'] == 200 and payload['counters']['learner_steps'] > 0
    flags = payload['flags']
    assert flags['environment_frame_stack'] == 1 and flags['obscure_probability'] == 0.5 and flags['unroll_length'] == 10
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 1, 8, 8)  # single frames
    assert tuple(network['lstm.weight_ih_l0'].shape) == (4 * 512, 3136)  # conv features into a 512-unit LSTM
    assert tuple(network['head.weight'].shape) == (6, 512)
    assert not (directory / 'runs').exists()


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    result = run_module(
        'deep_rl_zoo.drqn.eval_agent', f'--load_checkpoint_file={directory / "ck" / "DRQN_Pong_0.ckpt"}',
        '--environment_name=Pong', '--num_eval_steps=50', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'Pong' and match.group(3) == '1', result.stdout
    assert '(no episode finished: the unfinished one is reported)' in result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'DRQN_Pong_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) == 51 and all(frame.shape == (210, 160, 3) for frame in frames)
    assert all(frame.std() > 0 for frame in frames)  # the video shows the screen, never the obscured input


def test_bad_obscure_probability_is_one_error_line(tmp_path):
    proc = run_module('deep_rl_zoo.drqn.run_classic', '--obscure_probability=1.5', '--nouse_tensorboard', cwd=str(tmp_path))
    assert proc.returncode != 0 and TRACEBACK not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith('error: flag --obscure_probability=1.5')
