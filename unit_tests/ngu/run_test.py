"""NGU end to end as subprocesses on a tiny budget: run_classic on a MiniGrid task (one actor process of two
environments feeding the learner's replay), its checkpoint, then eval_agent's score line and mp4 (the greedy
evaluation is eval_agent's here: the run skips its own)."""

import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.helpers import TRACEBACK, run_module
from unit_tests.ppo_icm.run_test import read_csv, train
from unit_tests.ppo_rnd.run_test import video_frames

MINIGRID = 'MiniGrid-DoorKey-5x5-v0'
# 2 environments x 10-step rollouts; sequences of 2 + 4 steps, 2 apart; one gradient step per 8 env steps once 4
# sequences are stored.
TINY = (
    '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=10', '--unroll_length=4', '--burn_in=2', '--min_replay_size=4',
    '--batch_size=4', '--learn_interval=8', '--num_policies=2', '--num_iterations=1', '--num_train_steps=120', '--nouse_tensorboard',
)  # fmt: skip


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
