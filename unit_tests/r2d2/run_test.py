"""End-to-end runs of the R2D2 entry points as subprocesses on tiny budgets (one run per module fixture serves several
tests): run_classic on CartPole-v1 with two asynchronous actor processes feeding the learner's prioritized sequence
replay (TensorBoard read back), eval_agent on its checkpoint (mp4 read back), run_classic on a MiniGrid task (the
exploration benchmark's baseline) with eval_agent on it, run_atari on Pong and on Montezuma's Revenge (rooms counted)
with the real ROMs and snappy-compressed replay and eval_agent on those checkpoints, a bad flag and another agent's
checkpoint refused.
"""

import pytest
import os
import re

import torch

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.helpers import TRACEBACK, run_module
from unit_tests.ppo_icm.run_test import read_csv, train
from unit_tests.ppo_rnd.run_test import video_frames
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('R2D2', 'deep_rl_zoo.r2d2')
DRQN = value_agents.Agent('DRQN', 'deep_rl_zoo.drqn')

# 2 actors x 2 environments x 5-step rollouts: 300 env steps per iteration are 30 rollouts; sequences of 4 + 4 steps
# start 2 apart; one gradient step of 8 sequences per 4 env steps once 8 sequences are stored.
CLASSIC_FLAGS = (
    f'--environment_name={CARTPOLE}',
    '--num_actors=2',
    '--num_envs_per_actor=2',
    '--actor_update_interval=5',
    '--unroll_length=4',
    '--burn_in=4',
    '--min_replay_size=8',
    '--batch_size=8',
    '--learn_interval=4',
    '--target_network_update_interval=20',
    '--num_train_steps=300',
    '--num_eval_steps=1000',
    '--noprogress',
    '--learner_threads=1',
)
ATARI_FLAGS = (
    '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=5', '--unroll_length=10', '--burn_in=5', '--replay_capacity=100',
    '--min_replay_size=4', '--batch_size=2', '--learn_interval=25', '--num_train_steps=100', '--num_eval_steps=100', '--num_iterations=1',
    '--noprogress',
)  # fmt: skip

cartpole = value_agents.cartpole_fixture(AGENT, flags=CLASSIC_FLAGS)
atari = value_agents.atari_fixture(AGENT, *ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='R2D2', environment_name=environment)


def test_run_classic_trains_asynchronously_from_prioritized_sequences_and_checkpoints(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    learner_steps = [int(row['learner_steps']) for row in rows]
    # One gradient step per 4 env steps added once 8 sequences are stored: 600 steps give at most 150.
    assert 30 < learner_steps[0] < learner_steps[1] <= 150
    assert all(8 <= float(row['eval_episode_return']) <= 500 for row in rows)
    first, last = load(directory, CARTPOLE, 0), load(directory, CARTPOLE, 1)
    assert last['counters'] == {'env_steps': 600, 'learner_steps': learner_steps[1], 'iteration': 1}
    assert last['state']['learner_steps'] == learner_steps[1] and last['state']['env_steps'] == 600
    assert last['flags']['environment_kind'] == 'classic' and last['flags']['n_step'] == 3
    network = last['state']['network']
    assert network['lstm.weight_hh_l0'].shape == (4 * 128, 128)
    assert network['head.advantage.2.weight'].shape == (2, 128) and network['head.value.2.weight'].shape == (1, 128)
    assert not torch.equal(network['head.advantage.2.weight'], first['state']['network']['head.advantage.2.weight'])
    assert set(last['state']) == {'network', 'target_network', 'optimizer', 'env_steps', 'learning_env_steps', 'learner_steps'}


def test_run_classic_logs_replay_memory_and_learner_statistics_to_tensorboard(cartpole):
    value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    _, directory = cartpole
    train = value_agents.events(os.path.join(value_agents.only_run_dir(directory / 'runs'), 'train'))
    assert value_agents.scalar_steps(train, 'performance(env_steps)/episode_return') == [300, 600]
    tags = set(train.Tags()['scalars'])
    for name in ('loss', 'mean_q', 'priority_mean', 'importance_weight_min', 'grad_norm', 'version_diff_max', 'dropped_rollouts'):
        assert f'learner_statistics(learner_steps)/{name}' in tags, sorted(tags)
    for name in ('replay_sequences', 'replay_bytes_per_sequence', 'replay_full_mib'):
        assert f'agent_statistics(env_steps)/{name}' in tags, sorted(tags)
    # A CartPole sequence of 8 steps: 9 observations of 4 float32, 8 actions (int64), rewards (float32), 3 flags, the
    # stored (h, c) of 2 x 128 float32 with the previous action and reward (2 float32) and a step count:
    # 144 + 64 + 32 + 24 + 1032 + 8 bytes.
    assert train.Scalars('agent_statistics(env_steps)/replay_bytes_per_sequence')[-1].value == 1304
    assert [event.value for event in train.Scalars('learner_statistics(learner_steps)/dropped_rollouts')] == [0, 0]


def test_eval_agent_plays_the_cartpole_checkpoint_and_records_an_mp4(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_trains_from_compressed_sequences_and_counts_montezuma_rooms(atari):
    game, run = atari
    directory = value_agents.check_run_files(AGENT, run, game, 1)
    value_agents.check_atari_results(AGENT, game, directory, [100])
    payload = value_agents.atari_checkpoint(AGENT, game, directory)
    assert payload['counters']['env_steps'] == 100 and payload['counters']['learner_steps'] >= 1
    assert payload['flags']['compress_replay'] is True and payload['flags']['clip_reward'] is False
    network = payload['state']['network']
    assert network['torso.fc.0.weight'].shape == (512, 3136)  # the Nature CNN on 4 stacked frames
    assert network['lstm.weight_hh_l0'].shape == (4 * 512, 512)
    assert network['head.advantage.2.weight'].shape == (value_agents.NUM_ACTIONS[game], 512)


def test_eval_agent_plays_the_atari_checkpoint_and_records_it(atari, tmp_path):
    game, (proc, directory) = atari
    value_agents.assert_clean_exit(proc)
    value_agents.check_atari_eval(AGENT, game, directory, tmp_path)


def test_a_bad_flag_fails_with_one_error_line_and_drqn_refuses_an_r2d2_checkpoint(cartpole, tmp_path):
    value_agents.check_bad_flag_and_wrong_checkpoint(AGENT, '--n_step=0', DRQN, cartpole, tmp_path)


def test_run_classic_on_minigrid_takes_the_minigrid_cnn_and_eval_agent_records_it(tmp_path):
    minigrid = 'MiniGrid-MultiRoom-N4-S5-v0'
    tiny = (
        '--num_actors=1', '--num_envs_per_actor=2', '--actor_update_interval=10', '--unroll_length=4', '--burn_in=2', '--min_replay_size=4',
        '--batch_size=4', '--learn_interval=8', '--num_iterations=1', '--num_train_steps=120', '--num_eval_steps=0', '--nouse_tensorboard',
    )  # fmt: skip
    _, checkpoint_dir = train('deep_rl_zoo.r2d2.run_classic', tmp_path, f'--environment_name={minigrid}', *tiny)
    (row,) = read_csv(os.path.join(checkpoint_dir, f'R2D2_{minigrid}_results.csv'))
    assert row['env_steps'] == '120' and int(row['learner_steps']) > 0
    path = os.path.join(checkpoint_dir, f'R2D2_{minigrid}_0.ckpt')
    loaded = checkpoint.load_checkpoint(path, agent_name='R2D2', environment_name=minigrid)
    assert loaded['flags']['environment_kind'] == 'minigrid'
    network = loaded['state']['network']
    assert network['torso.convs.0.weight'].shape == (16, 3, 2, 2)  # the MiniGrid CNN, not Nature DQN's 8x8 filters
    assert network['lstm.weight_ih_l0'].shape == (4 * 128, 128 + 7 + 1)  # a 128-unit LSTM on its 128 features, a_t-1 (7 actions), r_t-1
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.r2d2.eval_agent', f'--load_checkpoint_file={path}', f'--recording_video_dir={videos}', '--num_eval_steps=30', cwd=str(tmp_path))
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr[-3000:]
    assert re.search(rf'^R2D2 on {minigrid}, checkpoint \S+: 1 episodes, return mean', proc.stdout, re.M), proc.stdout
    assert 2 <= len(video_frames(videos)) <= 31
