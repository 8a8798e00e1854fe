"""End-to-end runs of the PPO-ICM entry points as subprocesses, on tiny budgets, everything under tmp_path: MountainCar
with run_classic, Montezuma's Revenge with run_atari (rooms counted in TensorBoard), then eval_agent's mp4."""

import csv
import os
import re

import imageio.v2 as imageio
import pytest
import torch
from tensorboard.backend.event_processing import event_accumulator

from deep_rl_zoo import checkpoint
from unit_tests.helpers import TRACEBACK, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

QUIET = ('--noprogress', '--learner_threads=1', '--num_actors=1', '--num_envs_per_actor=2', '--num_iterations=1')


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def train(module, directory, *flags):
    checkpoint_dir = os.path.join(directory, 'checkpoints')
    proc = run_module(module, *QUIET, f'--checkpoint_dir={checkpoint_dir}', f'--runs_dir={directory}/runs', *flags, cwd=str(directory))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TRACEBACK not in proc.stderr
    return proc, checkpoint_dir


def scalars(runs_dir, tag):
    """The values of `tag` in the train stream of the single run under `runs_dir`."""
    (run,) = os.listdir(runs_dir)
    accumulator = event_accumulator.EventAccumulator(os.path.join(runs_dir, run, 'train'), size_guidance={'scalars': 0})
    accumulator.Reload()
    return [event.value for event in accumulator.Scalars(tag)]


def test_run_classic_trains_policy_and_module_on_mountain_car(tmp_path):
    proc, checkpoint_dir = train(
        'deep_rl_zoo.ppo_icm.run_classic', tmp_path, '--environment_name=MountainCar-v0', '--unroll_length=16',
        '--num_train_steps=64', '--num_eval_steps=200', '--nouse_tensorboard', '--scale_rewards', '--icm_eta=100',
    )
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_ICM_MountainCar-v0_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '64', '2')]
    assert float(rows[0]['eval_episode_return']) == -200.0  # one whole unsolved episode
    loaded = checkpoint.load_checkpoint(os.path.join(checkpoint_dir, 'PPO_ICM_MountainCar-v0_0.ckpt'), agent_name='PPO_ICM')
    assert loaded['flags']['environment_kind'] == 'classic'
    assert not [line for line in proc.stdout.splitlines() if line.startswith('preset ')]  # none ships for MountainCar
    assert (loaded['flags']['scale_rewards'], loaded['flags']['icm_eta']) == (True, 100.0)
    # The policy sees the state scaled to [0, 1] by MountainCar's bounds.
    torch.testing.assert_close(loaded['state']['network']['torso.scaler.offset'], torch.tensor([-1.2, -0.07]))
    assert {'network', 'optimizer', 'icm', 'icm_optimizer'} <= set(loaded['state'])
    assert loaded['state']['icm']['inverse_model.2.weight'].shape == (3, 256)  # MountainCar: 3 actions


@pytest.fixture(scope='module')
def montezuma_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp('montezuma')
    # Episodes capped at 200 frames (about 50 agent steps), so 64 steps per environment finish some.
    proc, checkpoint_dir = train(
        'deep_rl_zoo.ppo_icm.run_atari', directory, '--unroll_length=32', '--num_train_steps=128', '--num_eval_steps=60',
        '--max_episode_frames=200',
    )
    return directory, checkpoint_dir


def test_run_atari_plays_montezuma_and_logs_the_rooms_visited(montezuma_run):
    directory, checkpoint_dir = montezuma_run
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_ICM_MontezumaRevenge_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '128', '2')]
    assert int(rows[0]['train_num_episodes']) >= 2
    rooms = scalars(os.path.join(directory, 'runs'), 'agent_statistics(env_steps)/visited_rooms_mean')
    assert len(rooms) == 1 and rooms[0] >= 1.0  # every game starts in room 1
    assert float(rows[0]['visited_rooms_mean']) == rooms[0] and float(rows[0]['visited_rooms_max']) >= 1.0  # also in the CSV


def test_eval_agent_plays_the_montezuma_checkpoint_and_records_it(montezuma_run, tmp_path):
    _, checkpoint_dir = montezuma_run
    path = os.path.join(checkpoint_dir, 'PPO_ICM_MontezumaRevenge_0.ckpt')
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.ppo_icm.eval_agent', f'--load_checkpoint_file={path}', '--num_eval_steps=60', f'--recording_video_dir={videos}', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r'^PPO_ICM on MontezumaRevenge, checkpoint \S+: 1 episodes, return mean 0\.00', proc.stdout, re.M), proc.stdout
    (video,) = os.listdir(videos)
    with imageio.get_reader(os.path.join(videos, video)) as reader:
        frames = [frame for frame in reader]
    assert 40 <= len(frames) <= 60 and frames[0].shape == (210, 160, 3)  # one 200-frame episode, full screens


def test_learning_benchmark_runs_plain_ppo_as_ppo_icm_without_curiosity_and_minigrid_with_run_classic(tmp_path):
    from benchmarks import learning

    assert learning.run_module('ppo_icm', 'MiniGrid-DoorKey-8x8-v0') == 'deep_rl_zoo.ppo_icm.run_classic'
    assert learning.run_module('ppo_plain', 'MountainCar-v0') == 'deep_rl_zoo.ppo_icm.run_classic'
    args = learning.parse_args(['--agents', 'ppo_plain', '--environments', 'MiniGrid-DoorKey-8x8-v0'])
    command = learning.command_line(learning.Run('ppo_plain', 'MiniGrid-DoorKey-8x8-v0', 1, tmp_path), args)
    assert '--intrinsic_reward_coef=0' in command and '--num_eval_steps=3200' in command
