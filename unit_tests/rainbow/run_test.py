"""Rainbow end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong."""

import glob
import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.dqn.run_test import ATARI_FLAGS, CLASSIC_FLAGS, assert_clean_exit, events, only_run_dir, read_csv, read_video
from unit_tests.helpers import RESULT_COLUMNS, run_module

RETURN_LINE = re.compile(r'^Rainbow on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('rainbow_cartpole')
    proc = run_module('deep_rl_zoo.rainbow.run_classic', *CLASSIC_FLAGS, '--num_iterations=2', '--checkpoint_dir=ck', '--runs_dir=runs', cwd=str(directory))
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on Pong with the paper's network and hyperparameters."""
    directory = tmp_path_factory.mktemp('rainbow_pong')
    proc = run_module('deep_rl_zoo.rainbow.run_atari', '--environment_name=Pong', *ATARI_FLAGS, '--nouse_tensorboard', '--checkpoint_dir=ck', cwd=str(directory))
    return proc, directory


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['Rainbow_CartPole-v1_0.ckpt', 'Rainbow_CartPole-v1_1.ckpt', 'Rainbow_CartPole-v1_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'Rainbow_CartPole-v1_1.ckpt'), agent_name='Rainbow', environment_name='CartPole-v1')
    assert payload['counters']['env_steps'] == 600 and payload['state']['env_steps'] == 600
    # learn_interval 1 once 64 3-step transitions are sampleable (after 66 or 67 steps).
    assert 600 - 67 <= payload['counters']['learner_steps'] <= 600 - 66
    flags = payload['flags']
    assert flags['n_step'] == 3 and flags['priority_exponent'] == 0.5 and flags['noisy_sigma'] == 0.5
    assert flags['exploration_epsilon_begin_value'] == flags['exploration_epsilon_end_value'] == flags['eval_exploration_epsilon'] == 0.0
    network = payload['state']['network']
    assert tuple(network['value_stream.2.weight_mu'].shape) == (51, 128)
    assert tuple(network['advantage_stream.2.weight_sigma'].shape) == (2 * 51, 128)
    rows = read_csv(directory / 'ck' / 'Rainbow_CartPole-v1_results.csv')
    assert list(rows[0]) == RESULT_COLUMNS
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '300'), ('1', '600')]
    run_dir = only_run_dir(directory / 'runs')
    assert re.fullmatch(r'CartPole-v1-Rainbow-\d{8}-\d{6}', os.path.basename(run_dir))
    train = events(os.path.join(run_dir, 'train'))
    assert {
        'learner_statistics(learner_steps)/loss',
        'agent_statistics(env_steps)/importance_sampling_exponent',
        'agent_statistics(env_steps)/noisy_weight_sigma',
        'agent_statistics(env_steps)/exploration_epsilon',
    } <= set(train.Tags()['scalars'])
    epsilon = [event.value for event in train.Scalars('agent_statistics(env_steps)/exploration_epsilon')]
    assert epsilon == [0.0, 0.0]  # exploration comes from the noisy layers only


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'Rainbow_CartPole-v1_1.ckpt')
    result = run_module('deep_rl_zoo.rainbow.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_episodes=2', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path))
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'CartPole-v1' and match.group(3) == '2', result.stdout
    assert float(match.group(4)) >= 8
    videos = glob.glob(str(tmp_path / 'rec' / 'Rainbow_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) > 1 and frames[0].shape == (400, 600, 3)


def test_run_atari_pong_checkpoint(pong):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['Rainbow_Pong_0.ckpt', 'Rainbow_Pong_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'Rainbow_Pong_0.ckpt'), agent_name='Rainbow', environment_name='Pong')
    assert payload['counters']['env_steps'] == 200
    # learn_interval 4 once 64 3-step transitions are sampleable (67 steps in).
    assert payload['counters']['learner_steps'] in (33, 34)
    flags = payload['flags']
    assert (flags['learning_rate'], flags['adam_eps'], flags['n_step'], flags['target_network_update_interval']) == (6.25e-5, 1.5e-4, 3, 2_000)
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['value_stream.0.weight_mu'].shape) == (512, 3136)  # noisy 512-unit layer on the convolutions
    assert tuple(network['advantage_stream.2.weight_mu'].shape) == (6 * 51, 512)


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'Rainbow_Pong_0.ckpt')
    result = run_module('deep_rl_zoo.rainbow.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_steps=50', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path))
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'Pong', result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'Rainbow_Pong_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) == 51 and frames[0].shape == (210, 160, 3)
