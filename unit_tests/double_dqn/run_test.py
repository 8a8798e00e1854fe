"""Double DQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent's video, run_atari on Pong and eval_agent on its checkpoint. Resume,
Breakout and the flag plumbing shared by every replay agent are tested with DQN (unit_tests/dqn/run_test.py)."""

import glob
import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.dqn.run_test import (
    ATARI_FLAGS,
    CLASSIC_FLAGS,
    PERFORMANCE_TAGS,
    assert_clean_exit,
    events,
    only_run_dir,
    read_csv,
    read_video,
    scalar_steps,
)
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module, stderr_lines

AGENT = 'DoubleDQN'
PACKAGE = 'deep_rl_zoo.double_dqn'
RETURN_LINE = re.compile(rf'^{AGENT} on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('double_dqn_cartpole')
    proc = run_module(
        f'{PACKAGE}.run_classic', *CLASSIC_FLAGS, '--num_iterations=2', '--checkpoint_dir=ck', '--runs_dir=runs', cwd=str(directory)
    )
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on Pong, without TensorBoard."""
    directory = tmp_path_factory.mktemp('double_dqn_pong')
    proc = run_module(f'{PACKAGE}.run_atari', '--environment_name=Pong', *ATARI_FLAGS, '--nouse_tensorboard', '--checkpoint_dir=ck', cwd=str(directory))
    return proc, directory


def test_run_classic_checkpoints_and_results_csv(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == [
        f'{AGENT}_CartPole-v1_0.ckpt',
        f'{AGENT}_CartPole-v1_1.ckpt',
        f'{AGENT}_CartPole-v1_results.csv',
    ]
    payload = checkpoint.load_checkpoint(
        str(directory / 'ck' / f'{AGENT}_CartPole-v1_1.ckpt'), agent_name=AGENT, environment_name='CartPole-v1'
    )
    assert payload['counters']['env_steps'] == payload['state']['env_steps'] == 600
    assert 600 - 65 <= payload['state']['learner_steps'] <= 600 - 64  # Every step once replay holds 64.
    assert set(payload['state']) >= {'network', 'target_network', 'optimizer'}
    assert 'priority_exponent' not in payload['flags']  # Uniform replay: no prioritized replay flags.
    rows = read_csv(directory / 'ck' / f'{AGENT}_CartPole-v1_results.csv')
    assert list(rows[0]) == RESULT_COLUMNS
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '300'), ('1', '600')]
    assert all(int(row['eval_num_episodes']) >= 1 for row in rows)


def test_run_classic_tensorboard_events(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    run_dir = only_run_dir(directory / 'runs')
    assert re.fullmatch(rf'CartPole-v1-{AGENT}-\d{{8}}-\d{{6}}', os.path.basename(run_dir))
    train = events(os.path.join(run_dir, 'train'))
    assert set(train.Tags()['scalars']) == PERFORMANCE_TAGS | {
        'agent_statistics(env_steps)/exploration_epsilon',
        'agent_statistics(env_steps)/replay_size',
        'learner_statistics(learner_steps)/loss',
    }
    assert scalar_steps(train, 'performance(env_steps)/episode_return') == [300, 600]

def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / f'{AGENT}_CartPole-v1_1.ckpt')
    result = run_module(
        f'{PACKAGE}.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_episodes=2', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path)
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match, result.stdout
    assert match.group(1) == 'CartPole-v1' and match.group(2) == ckpt and match.group(3) == '2'
    videos = glob.glob(str(tmp_path / 'rec' / f'{AGENT}_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) > 1 and frames[0].shape == (400, 600, 3) and frames[0].std() > 0


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == [f'{AGENT}_Pong_0.ckpt', f'{AGENT}_Pong_results.csv']
    ckpt = str(directory / 'ck' / f'{AGENT}_Pong_0.ckpt')
    payload = checkpoint.load_checkpoint(ckpt, agent_name=AGENT, environment_name='Pong')
    assert payload['counters']['env_steps'] == 200
    assert payload['counters']['learner_steps'] in (33, 34)  # Every 4 steps once replay holds 64 frame stacks.
    assert tuple(payload['state']['network']['head.weight'].shape) == (6, 512)
    # The tuned settings of van Hasselt et al. 2016: targets refreshed 3x less often than DQN's, epsilon 0.01 / 0.001.
    assert payload['flags']['target_network_update_interval'] == 7_500
    assert payload['flags']['exploration_epsilon_end_value'] == 0.01 and payload['flags']['eval_exploration_epsilon'] == 0.001
    result = run_module(
        f'{PACKAGE}.eval_agent', f'--load_checkpoint_file={ckpt}', '--num_eval_steps=50', f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path)
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match and match.group(1) == 'Pong', result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / f'{AGENT}_Pong_*.mp4'))
    assert len(videos) == 1 and len(read_video(videos[0])) == 51  # The reset frame and one per step.


def test_eval_agent_refuses_another_agents_checkpoint(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    result = run_module(
        'deep_rl_zoo.prioritized_dqn.eval_agent', f'--load_checkpoint_file={directory / "ck" / f"{AGENT}_Pong_0.ckpt"}', '--num_eval_steps=10', cwd=str(tmp_path)
    )
    assert result.returncode != 0 and TRACEBACK not in result.stderr
    lines = stderr_lines(result)
    assert len(lines) == 1 and lines[0].startswith('error: ') and AGENT in lines[0], result.stderr
