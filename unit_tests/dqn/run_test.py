"""DQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic, resume,
run_atari on Pong and Breakout, eval_agent videos, TensorBoard event files and the results CSV."""

import csv
import glob
import os
import re

import imageio.v2 as imageio
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from deep_rl_zoo import checkpoint
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module

CLASSIC_FLAGS = (
    '--environment_name=CartPole-v1',
    '--num_train_steps=300',
    '--num_eval_steps=100',
    '--min_replay_size=64',
    '--batch_size=32',
    '--noprogress',
)
ATARI_FLAGS = (
    '--replay_capacity=2000',
    '--min_replay_size=64',
    '--num_train_steps=200',
    '--num_eval_steps=100',
    '--num_iterations=1',
    '--noprogress',
)
PERFORMANCE_TAGS = {
    'performance(env_steps)/episode_return',
    'performance(env_steps)/episode_steps',
    'performance(env_steps)/num_episodes',
    'performance(env_steps)/step_rate',
}
RETURN_LINE = re.compile(r'^DQN on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)


def assert_clean_exit(proc):
    assert proc.returncode == 0, f'exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}'
    assert TRACEBACK not in proc.stderr


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def events(directory):
    accumulator = EventAccumulator(str(directory), size_guidance={'scalars': 0, 'images': 0})
    accumulator.Reload()
    return accumulator


def scalar_steps(accumulator, tag):
    return [event.step for event in accumulator.Scalars(tag)]


def only_run_dir(runs_dir):
    runs = sorted(os.listdir(runs_dir))
    assert len(runs) == 1, runs
    return os.path.join(runs_dir, runs[0])


def read_video(path):
    reader = imageio.get_reader(path)
    try:
        return [frame for frame in reader]
    finally:
        reader.close()


# ------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope='module')
def cartpole(tmp_path_factory):
    """Two iterations of 300 steps on CartPole-v1, with TensorBoard."""
    directory = tmp_path_factory.mktemp('dqn_cartpole')
    proc = run_module(
        'deep_rl_zoo.dqn.run_classic',
        *CLASSIC_FLAGS,
        '--num_iterations=2',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(directory),
    )
    return proc, directory


@pytest.fixture(scope='module')
def pong(tmp_path_factory):
    """One tiny iteration on Pong with TensorBoard and debug screenshots every 50 steps."""
    directory = tmp_path_factory.mktemp('dqn_pong')
    proc = run_module(
        'deep_rl_zoo.dqn.run_atari',
        '--environment_name=Pong',
        *ATARI_FLAGS,
        '--debug_screenshots_interval=50',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(directory),
    )
    return proc, directory


# ------------------------------------------------------------------------------------------ CartPole


def test_run_classic_writes_two_loadable_checkpoints(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == [
        'DQN_CartPole-v1_0.ckpt',
        'DQN_CartPole-v1_1.ckpt',
        'DQN_CartPole-v1_results.csv',
    ]
    assert re.search(r'^iteration 0: env steps 300, ', proc.stdout, re.MULTILINE)
    assert re.search(r'^iteration 1: env steps 600, ', proc.stdout, re.MULTILINE)
    loaded = [
        checkpoint.load_checkpoint(str(directory / 'ck' / f'DQN_CartPole-v1_{i}.ckpt'), agent_name='DQN', environment_name='CartPole-v1')
        for i in (0, 1)
    ]
    for iteration, (payload, env_steps) in enumerate(zip(loaded, (300, 600))):
        assert payload['iteration'] == iteration
        assert payload['counters']['env_steps'] == env_steps
        assert payload['counters']['iteration'] == iteration
        assert payload['state']['env_steps'] == env_steps  # the agent's own counter agrees
        assert payload['state']['learner_steps'] == payload['counters']['learner_steps']
        assert set(payload['state']) >= {'network', 'target_network', 'optimizer'}
        assert payload['flags']['environment_kind'] == 'classic'
        assert payload['flags']['num_train_steps'] == 300 and payload['flags']['min_replay_size'] == 64
    first, second = (payload['counters']['learner_steps'] for payload in loaded)
    # learn_interval 1: learning starts once replay holds 64 transitions (step 64 or 65), then every step.
    assert 300 - 65 <= first <= 300 - 64
    assert second - first == 300


def test_run_classic_results_csv(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    rows = read_csv(directory / 'ck' / 'DQN_CartPole-v1_results.csv')
    assert len(rows) == 2
    assert list(rows[0]) == RESULT_COLUMNS
    assert [row['iteration'] for row in rows] == ['0', '1']
    assert [row['env_steps'] for row in rows] == ['300', '600']
    assert [row['checkpoint'] for row in rows] == ['ck/DQN_CartPole-v1_0.ckpt', 'ck/DQN_CartPole-v1_1.ckpt']
    for row in rows:
        assert int(row['train_num_episodes']) >= 1 and float(row['train_episode_return']) >= 8  # CartPole lasts >= 8 steps
        assert int(row['eval_num_episodes']) >= 1 and float(row['eval_episode_return']) > 0
        assert float(row['train_step_rate']) > 0


def test_run_classic_tensorboard_events(cartpole):
    proc, directory = cartpole
    assert_clean_exit(proc)
    run_dir = only_run_dir(directory / 'runs')
    assert re.fullmatch(r'CartPole-v1-DQN-\d{8}-\d{6}', os.path.basename(run_dir))
    assert sorted(os.listdir(run_dir)) == ['eval', 'train']
    train, evaluation = events(os.path.join(run_dir, 'train')), events(os.path.join(run_dir, 'eval'))
    train_tags, eval_tags = set(train.Tags()['scalars']), set(evaluation.Tags()['scalars'])
    assert train_tags == PERFORMANCE_TAGS | {
        'agent_statistics(env_steps)/exploration_epsilon',
        'agent_statistics(env_steps)/replay_size',
        'learner_statistics(learner_steps)/loss',
    }
    assert eval_tags == PERFORMANCE_TAGS
    for accumulator in (train, evaluation):
        for tag in PERFORMANCE_TAGS:
            assert scalar_steps(accumulator, tag) == [300, 600], tag
    # Epsilon decays 1 -> 0.01 over 20,000 env steps (run_classic's defaults).
    epsilon = [event.value for event in train.Scalars('agent_statistics(env_steps)/exploration_epsilon')]
    assert epsilon == pytest.approx([1 - 0.99 * 300 / 20_000, 1 - 0.99 * 600 / 20_000], abs=1e-6)
    learner_steps = [
        checkpoint.load_checkpoint(str(directory / 'ck' / f'DQN_CartPole-v1_{i}.ckpt'))['counters']['learner_steps']
        for i in (0, 1)
    ]
    assert scalar_steps(train, 'learner_statistics(learner_steps)/loss') == learner_steps
    assert train.Tags()['images'] == []  # no screenshots unless asked


def test_resume_runs_only_the_remaining_iteration(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    resumed = run_module(
        'deep_rl_zoo.dqn.run_classic',
        *CLASSIC_FLAGS,
        '--num_iterations=2',
        f'--load_checkpoint_file={directory / "ck" / "DQN_CartPole-v1_0.ckpt"}',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(tmp_path),
    )
    assert_clean_exit(resumed)
    assert 'iteration 1, 300 env steps' in resumed.stdout
    assert not re.search(r'^iteration 0:', resumed.stdout, re.MULTILINE)
    assert re.search(r'^iteration 1: env steps 600, ', resumed.stdout, re.MULTILINE)
    assert sorted(os.listdir(tmp_path / 'ck')) == ['DQN_CartPole-v1_1.ckpt', 'DQN_CartPole-v1_results.csv']
    payload = checkpoint.load_checkpoint(str(tmp_path / 'ck' / 'DQN_CartPole-v1_1.ckpt'), agent_name='DQN')
    assert payload['iteration'] == 1
    assert payload['counters']['env_steps'] == 600 and payload['state']['env_steps'] == 600
    before = checkpoint.load_checkpoint(str(directory / 'ck' / 'DQN_CartPole-v1_0.ckpt'))['counters']['learner_steps']
    # Learner steps continue from the checkpoint (replay is not saved, so it warms up again for 64 steps).
    assert before < payload['counters']['learner_steps'] <= before + 300
    rows = read_csv(tmp_path / 'ck' / 'DQN_CartPole-v1_results.csv')
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('1', '600')]
    train = events(os.path.join(only_run_dir(tmp_path / 'runs'), 'train'))
    assert scalar_steps(train, 'performance(env_steps)/episode_return') == [600]
    epsilon = train.Scalars('agent_statistics(env_steps)/exploration_epsilon')[0].value
    assert epsilon == pytest.approx(1 - 0.99 * 600 / 20_000, abs=1e-6)  # the schedule continues from 300


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    proc, directory = cartpole
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'DQN_CartPole-v1_1.ckpt')
    result = run_module(
        'deep_rl_zoo.dqn.eval_agent',
        f'--load_checkpoint_file={ckpt}',
        '--num_eval_episodes=2',
        f'--recording_video_dir={tmp_path / "rec"}',
        cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match, result.stdout
    assert match.group(1) == 'CartPole-v1' and match.group(2) == ckpt and match.group(3) == '2'
    assert float(match.group(4)) >= 8
    videos = glob.glob(str(tmp_path / 'rec' / 'DQN_CartPole-v1_*.mp4'))
    assert len(videos) == 1
    assert f'video of the first episode: {videos[0]}' in result.stdout
    frames = read_video(videos[0])
    assert len(frames) > 1
    assert all(frame.shape == (400, 600, 3) for frame in frames)  # CartPole renders 600x400 RGB
    assert frames[0].std() > 0  # not a blank picture


# --------------------------------------------------------------------------------------------- Atari


def test_run_atari_pong_checkpoint_and_screenshots(pong):
    proc, directory = pong
    assert_clean_exit(proc)
    assert sorted(os.listdir(directory / 'ck')) == ['DQN_Pong_0.ckpt', 'DQN_Pong_results.csv']
    payload = checkpoint.load_checkpoint(str(directory / 'ck' / 'DQN_Pong_0.ckpt'), agent_name='DQN', environment_name='Pong')
    assert payload['counters']['env_steps'] == 200
    # learn_interval 4: updates at the multiples of 4 once replay holds 64 frame stacks.
    assert payload['counters']['learner_steps'] in (33, 34)
    assert payload['flags']['environment_kind'] == 'atari'
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['head.weight'].shape) == (6, 512)  # Pong's minimal action set
    rows = read_csv(directory / 'ck' / 'DQN_Pong_results.csv')
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '200')]

    train = events(os.path.join(only_run_dir(directory / 'runs'), 'train'))
    assert train.Tags()['images'] == ['screenshot']
    screenshots = train.Images('screenshot')
    assert [image.step for image in screenshots] == [50, 100, 150, 200]
    assert all((image.width, image.height) == (84, 84) for image in screenshots)
    # One Atari env step is 4 frames; the step rate stays in env steps.
    assert 'performance(env_steps)/step_rate' in train.Tags()['scalars']


def test_run_atari_breakout_without_tensorboard(tmp_path):
    proc = run_module(
        'deep_rl_zoo.dqn.run_atari',
        '--environment_name=Breakout',
        *ATARI_FLAGS,
        '--nouse_tensorboard',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(tmp_path),
    )
    assert_clean_exit(proc)
    assert sorted(os.listdir(tmp_path / 'ck')) == ['DQN_Breakout_0.ckpt', 'DQN_Breakout_results.csv']
    payload = checkpoint.load_checkpoint(str(tmp_path / 'ck' / 'DQN_Breakout_0.ckpt'), agent_name='DQN', environment_name='Breakout')
    assert payload['counters']['env_steps'] == 200
    assert tuple(payload['state']['network']['head.weight'].shape) == (4, 512)  # NOOP, FIRE, RIGHT, LEFT
    assert payload['flags']['terminal_on_life_loss'] is True
    assert not (tmp_path / 'runs').exists()  # --nouse_tensorboard writes no event files
    assert re.search(r'^iteration 0: env steps 200, ', proc.stdout, re.MULTILINE)


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    proc, directory = pong
    assert_clean_exit(proc)
    ckpt = str(directory / 'ck' / 'DQN_Pong_0.ckpt')
    result = run_module(
        'deep_rl_zoo.dqn.eval_agent',
        f'--load_checkpoint_file={ckpt}',
        '--environment_name=Pong',
        '--num_eval_steps=50',
        f'--recording_video_dir={tmp_path / "rec"}',
        cwd=str(tmp_path),
    )
    assert_clean_exit(result)
    match = RETURN_LINE.search(result.stdout)
    assert match, result.stdout
    assert match.group(1) == 'Pong' and match.group(3) == '1'
    # A Pong game lasts far longer than 50 steps: the unfinished one is reported, and says so.
    assert '(no episode finished: the unfinished one is reported)' in result.stdout
    videos = glob.glob(str(tmp_path / 'rec' / 'DQN_Pong_*.mp4'))
    assert len(videos) == 1
    frames = read_video(videos[0])
    assert len(frames) == 51  # the reset frame and one per step
    assert all(frame.shape == (210, 160, 3) for frame in frames)  # the full-size RGB screen, not the 84x84 input
