"""NGU end to end as subprocesses on tiny budgets: run_classic on a MiniGrid task and run_atari on Pong and on
Montezuma's Revenge (one actor process of two environments feeding the learner's replay; on Montezuma the rooms each
episode visits logged), their checkpoints, then eval_agent's score line and mp4 (the greedy evaluation is
eval_agent's here: the runs skip their own)."""

import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.helpers import TRACEBACK, run_module
from unit_tests.ppo_icm.run_test import read_csv, train
from unit_tests.ppo_rnd.run_test import video_frames

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

MINIGRID = 'MiniGrid-DoorKey-5x5-v0'
# 2 environments x 10-step rollouts; sequences of 2 + 4 steps, 2 apart; one gradient step per 8 env steps once 4
# sequences are stored.
TINY = (
    '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=10', '--unroll_length=4', '--burn_in=2', '--min_replay_size=4',
    '--batch_size=4', '--learn_interval=8', '--num_policies=2', '--num_iterations=1', '--num_train_steps=120', '--nouse_tensorboard',
)  # fmt: skip
AGENT = value_agents.Agent('NGU', 'deep_rl_zoo.ngu')
# 2 environments x 25-step rollouts; sequences of 5 + 10 steps; one gradient step per 50 env steps once 4 are stored.
ATARI_FLAGS = (
    '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=25', '--unroll_length=10', '--burn_in=5', '--replay_capacity=100',
    '--min_replay_size=4', '--batch_size=2', '--learn_interval=50', '--num_policies=2', '--num_iterations=1', '--num_train_steps=100',
    '--num_eval_steps=0', '--learner_threads=1', '--noprogress',
)  # fmt: skip

atari = value_agents.atari_fixture(AGENT, *ATARI_FLAGS)


def test_run_classic_on_minigrid_checkpoints_and_eval_agent_records_it(tmp_path):
    _, checkpoint_dir = train('deep_rl_zoo.ngu.run_classic', tmp_path, f'--environment_name={MINIGRID}', *TINY, '--num_eval_steps=0')
    (row,) = read_csv(os.path.join(checkpoint_dir, f'NGU_{MINIGRID}_results.csv'))
    assert row['env_steps'] == '120' and int(row['learner_steps']) > 0
    path = os.path.join(checkpoint_dir, f'NGU_{MINIGRID}_0.ckpt')
    loaded = checkpoint.load_checkpoint(path, agent_name='NGU', environment_name=MINIGRID)
    assert loaded['flags']['environment_kind'] == 'minigrid' and 'n_step' not in loaded['flags']
    state = loaded['state']
    assert set(state) == {'network', 'target_network', 'optimizer', 'intrinsic_optimizer', 'env_steps', 'learning_env_steps', 'learner_steps'}
    network = state['network']
    # LSTM input: 128 torso features, one-hot previous action (7), previous r^e and r^i, one-hot policy (2).
    assert network['q.lstm.weight_ih_l0'].shape == (4 * 128, 128 + 7 + 2 + 2)
    assert network['embedding.embed.weight'].shape == (32, 64)
    assert network['rnd.observation_normalizer.count'].item() == pytest.approx(120)  # every step the actor sent
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.ngu.eval_agent', f'--load_checkpoint_file={path}', f'--recording_video_dir={videos}', '--num_eval_steps=30', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    assert re.search(rf'^NGU on {MINIGRID}, checkpoint \S+: 1 episodes, return mean', proc.stdout, re.M), proc.stdout
    frames = video_frames(videos)
    assert 2 <= len(frames) <= 31 and frames[0].shape == (160, 160, 3)


def test_run_atari_checkpoints_and_counts_montezuma_rooms(atari):
    game, run = atari
    directory = value_agents.check_run_files(AGENT, run, game, 1)
    (row,) = value_agents.check_atari_results(AGENT, game, directory, [100])
    assert int(row['learner_steps']) > 0
    loaded = value_agents.atari_checkpoint(AGENT, game, directory)
    assert loaded['flags']['compress_replay'] is True and loaded['flags']['num_policies'] == 2
    network = loaded['state']['network']
    num_actions = value_agents.NUM_ACTIONS[game]
    assert network['q.head.advantage.2.weight'].shape == (num_actions, 512) and not any(name.startswith('q.intrinsic') for name in network)  # one network
    # LSTM input: the Nature CNN's 512 features, one-hot previous action, previous r^e and r^i, one-hot policy (2).
    assert network['q.lstm.weight_ih_l0'].shape == (4 * 512, 512 + num_actions + 2 + 2)
    assert network['rnd.target.0.0.weight'].shape == (32, 1, 8, 8)  # RND sees the newest frame
    assert network['embedding.inverse_model.2.weight'].shape[0] == num_actions


def test_eval_agent_plays_the_atari_checkpoint_and_records_it(atari, tmp_path):
    game, (proc, directory) = atari
    value_agents.assert_clean_exit(proc)
    value_agents.check_atari_eval(AGENT, game, directory, tmp_path)
