"""Agent57 end to end as subprocesses on a tiny budget: run_atari on Montezuma's Revenge (one actor process of two
environments, snappy-compressed replay, the rooms each episode visits logged to TensorBoard), its checkpoint, then
eval_agent's score line and mp4 (the greedy evaluation is eval_agent's here: the run skips its own)."""

import os
import re

from deep_rl_zoo import checkpoint
from unit_tests.helpers import TRACEBACK, run_module
from unit_tests.ppo_icm.run_test import read_csv, scalars, train
from unit_tests.ppo_rnd.run_test import video_frames

TINY = (
    '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=25', '--unroll_length=10', '--burn_in=5', '--replay_capacity=100',
    '--min_replay_size=4', '--batch_size=2', '--learn_interval=50', '--num_policies=2', '--num_iterations=1', '--num_train_steps=100',
    '--num_eval_steps=0', '--max_episode_frames=200', '--learner_threads=1',
)  # fmt: skip


def test_run_atari_on_montezuma_logs_rooms_and_eval_agent_records_it(tmp_path):
    _, checkpoint_dir = train('deep_rl_zoo.agent57.run_atari', tmp_path, *TINY)
    (row,) = read_csv(os.path.join(checkpoint_dir, 'Agent57_MontezumaRevenge_results.csv'))
    assert row['env_steps'] == '100' and int(row['learner_steps']) > 0
    rooms = scalars(os.path.join(tmp_path, 'runs'), 'agent_statistics(env_steps)/visited_rooms_mean')
    assert len(rooms) == 1 and rooms[0] >= 1.0  # 200-frame episodes end within the 100 steps
    path = os.path.join(checkpoint_dir, 'Agent57_MontezumaRevenge_0.ckpt')
    loaded = checkpoint.load_checkpoint(path, agent_name='Agent57', environment_name='MontezumaRevenge')
    assert loaded['flags']['compress_replay'] is True and loaded['flags']['ucb_window_size'] == 160
    network = loaded['state']['network']
    assert network['q.heads.0.advantage.2.weight'].shape == network['q.heads.1.advantage.2.weight'].shape == (18, 512)  # two heads
    assert network['rnd.target.0.0.weight'].shape == (32, 1, 8, 8)  # RND sees the newest frame
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.agent57.eval_agent', f'--load_checkpoint_file={path}', f'--recording_video_dir={videos}', '--num_eval_steps=20', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    assert re.search(r'^Agent57 on MontezumaRevenge, checkpoint \S+: 1 episodes', proc.stdout, re.M), proc.stdout
    frames = video_frames(videos)
    assert len(frames) == 21 and frames[0].shape == (210, 160, 3)
