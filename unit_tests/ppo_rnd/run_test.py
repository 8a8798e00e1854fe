"""End-to-end runs of the PPO-RND entry points as subprocesses, on tiny budgets, everything under tmp_path: a MiniGrid
task with run_classic, Montezuma's Revenge with run_atari (rooms counted in TensorBoard), then eval_agent's mp4s."""

import os
import re

import imageio.v2 as imageio
import pytest

from deep_rl_zoo import checkpoint
from unit_tests.helpers import run_module
from unit_tests.ppo_icm.run_test import read_csv, scalars, train

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")


def video_frames(directory):
    (video,) = os.listdir(directory)
    with imageio.get_reader(os.path.join(directory, video)) as reader:
        return [frame for frame in reader]


def evaluate(path, directory, *flags):
    videos = directory / 'videos'
    proc = run_module('deep_rl_zoo.ppo_rnd.eval_agent', f'--load_checkpoint_file={path}', f'--recording_video_dir={videos}', *flags, cwd=str(directory))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, video_frames(videos)


def test_run_classic_on_minigrid_then_eval_agent_records_the_grid(tmp_path):
    _, checkpoint_dir = train(
        'deep_rl_zoo.ppo_rnd.run_classic', tmp_path, '--environment_name=MiniGrid-DoorKey-5x5-v0', '--unroll_length=16',
        '--num_train_steps=64', '--num_eval_steps=250', '--rnd_init_steps=32', '--nouse_tensorboard',
    )
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_RND_MiniGrid-DoorKey-5x5-v0_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '64', '2')]
    path = os.path.join(checkpoint_dir, 'PPO_RND_MiniGrid-DoorKey-5x5-v0_0.ckpt')
    loaded = checkpoint.load_checkpoint(path, agent_name='PPO_RND')
    assert loaded['flags']['environment_kind'] == 'minigrid'
    state = loaded['state']
    assert state['network']['intrinsic_value_head.weight'].shape == (1, 128)
    assert state['rnd']['observation_normalizer.count'].item() == 32 + 64  # the random steps, then the batches
    proc, frames = evaluate(path, tmp_path, '--num_eval_episodes=1')
    match = re.search(r'^PPO_RND on MiniGrid-DoorKey-5x5-v0, checkpoint \S+: 1 episodes, return mean ([\d.]+)', proc.stdout, re.M)
    assert match, proc.stdout
    assert 1 <= len(frames) <= 250 and frames[0].shape == (160, 160, 3)  # at most max_steps = 10 * 5 * 5


@pytest.fixture(scope='module')
def montezuma_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp('montezuma')
    proc, checkpoint_dir = train(
        'deep_rl_zoo.ppo_rnd.run_atari', directory, '--unroll_length=32', '--num_train_steps=128', '--num_eval_steps=60',
        '--max_episode_frames=200', '--rnd_init_steps=64',
    )
    return directory, checkpoint_dir


def test_run_atari_plays_montezuma_and_logs_the_rooms_visited(montezuma_run):
    directory, checkpoint_dir = montezuma_run
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_RND_MontezumaRevenge_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '128', '2')]
    rooms = scalars(os.path.join(directory, 'runs'), 'agent_statistics(env_steps)/visited_rooms_mean')
    assert len(rooms) == 1 and rooms[0] >= 1.0
    loaded = checkpoint.load_checkpoint(os.path.join(checkpoint_dir, 'PPO_RND_MontezumaRevenge_0.ckpt'), agent_name='PPO_RND')
    assert loaded['state']['rnd']['target.0.0.weight'].shape == (32, 1, 8, 8)  # RND sees the newest frame only


def test_eval_agent_plays_the_montezuma_checkpoint_and_records_it(montezuma_run, tmp_path):
    _, checkpoint_dir = montezuma_run
    proc, frames = evaluate(os.path.join(checkpoint_dir, 'PPO_RND_MontezumaRevenge_0.ckpt'), tmp_path, '--num_eval_steps=60')
    assert re.search(r'^PPO_RND on MontezumaRevenge, checkpoint \S+: 1 episodes', proc.stdout, re.M), proc.stdout
    assert 40 <= len(frames) <= 60 and frames[0].shape == (210, 160, 3)
