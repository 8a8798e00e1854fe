"""End-to-end runs of the PPO entry points as subprocesses, on tiny budgets, everything written under tmp_path.

Each training run is made once per module (fixtures) and checked by several tests: exit code, results CSV,
exact env-step and learner-step counters, loadable checkpoints, then eval_agent on the checkpoints (return line
and a readable mp4). The learning test trains CartPole-v1 with run_classic's own hyperparameters.
"""

import csv
import math
import os
import re

import imageio.v2 as imageio
import pytest
import torch

from deep_rl_zoo import checkpoint
from unit_tests.helpers import TRACEBACK, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

QUIET = ('--nouse_tensorboard', '--noprogress', '--learner_threads=1')


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def train(module, directory, *flags):
    """Runs a training module with outputs in `directory`; returns (process, checkpoint dir)."""
    checkpoint_dir = os.path.join(directory, 'checkpoints')
    proc = run_module(module, *QUIET, f'--checkpoint_dir={checkpoint_dir}', *flags, cwd=str(directory))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TRACEBACK not in proc.stderr
    return proc, checkpoint_dir


def load(path, environment_name):
    return checkpoint.load_checkpoint(path, agent_name='PPO', environment_name=environment_name)


# --- CartPole, 2 actors -------------------------------------------------------------------------------------------

# 2 actors x 2 envs x 16 steps = 64 env steps per update, so 256 steps per iteration are 4 updates.
CLASSIC_FLAGS = (
    '--environment_name=CartPole-v1',
    '--num_iterations=2',
    '--num_actors=2',
    '--num_envs_per_actor=2',
    '--unroll_length=16',
    '--num_train_steps=256',
    '--num_eval_steps=600',  # CartPole episodes end by 500 steps: at least one whole evaluation episode
    '--seed=3',
)


@pytest.fixture(scope='module')
def classic_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp('classic')
    episodes_csv = os.path.join(directory, 'episodes.csv')
    proc, checkpoint_dir = train('deep_rl_zoo.ppo.run_classic', directory, *CLASSIC_FLAGS, f'--episodes_csv_path={episodes_csv}')
    return proc, checkpoint_dir, episodes_csv


def test_run_classic_writes_results_with_exact_counters(classic_run):
    proc, checkpoint_dir, episodes_csv = classic_run
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_CartPole-v1_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '256', '4'), ('1', '512', '8')]
    for iteration, row in enumerate(rows):
        assert row['checkpoint'] == os.path.join(checkpoint_dir, f'PPO_CartPole-v1_{iteration}.ckpt')
        assert int(row['eval_num_episodes']) >= 1
        assert 8 <= float(row['eval_episode_return']) <= 500  # whole CartPole episodes
        assert f'iteration {iteration}: env steps {row["env_steps"]}' in proc.stdout

    episodes = read_csv(episodes_csv)
    assert len(episodes) == sum(int(row['train_num_episodes']) for row in rows) > 0
    for episode in episodes:
        assert float(episode['return']) == int(episode['steps'])  # +1 per CartPole step, raw
        assert int(episode['env_steps']) <= 512
    assert sum(int(episode['steps']) for episode in episodes) <= 512
    assert [int(episode['env_steps']) for episode in episodes] == sorted(int(episode['env_steps']) for episode in episodes)


def test_run_classic_checkpoints_load_with_counters_flags_and_state(classic_run):
    _, checkpoint_dir, _ = classic_run
    assert sorted(name for name in os.listdir(checkpoint_dir) if name.endswith('.ckpt')) == [
        'PPO_CartPole-v1_0.ckpt',
        'PPO_CartPole-v1_1.ckpt',
        'PPO_CartPole-v1_best.ckpt',  # evaluations scored: the best goes where --checkpoint_dir says
    ]
    first, last = (load(os.path.join(checkpoint_dir, f'PPO_CartPole-v1_{i}.ckpt'), 'CartPole-v1') for i in (0, 1))
    assert first['counters'] == {'env_steps': 256, 'learner_steps': 4, 'iteration': 0}
    assert last['counters'] == {'env_steps': 512, 'learner_steps': 8, 'iteration': 1}
    assert last['iteration'] == 1 and last['state']['learner_steps'] == 8
    assert last['flags']['num_actors'] == 2 and last['flags']['environment_kind'] == 'classic'
    assert set(last['state']) >= {'network', 'optimizer', 'learner_steps'}
    assert last['state']['network']['policy_head.weight'].shape == (2, 64)  # CartPole: 2 actions
    changed = [name for name, tensor in last['state']['network'].items() if not torch.equal(tensor, first['state']['network'][name])]
    assert 'policy_head.weight' in changed and 'value_head.weight' in changed  # iteration 1 trained further
    assert latest_is(checkpoint_dir, 'CartPole-v1', 'PPO_CartPole-v1_1.ckpt')


def latest_is(checkpoint_dir, environment_name, name):
    return checkpoint.latest_checkpoint(checkpoint_dir, 'PPO', environment_name) == os.path.join(checkpoint_dir, name)


def video_frames(directory):
    """The frames of the single mp4 in `directory`."""
    videos = [name for name in os.listdir(directory) if name.endswith('.mp4')]
    assert len(videos) == 1, videos
    with imageio.get_reader(os.path.join(directory, videos[0])) as reader:
        return [frame for frame in reader]


RETURN_LINE = re.compile(
    r'^PPO on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?[\d.]+) std ([\d.]+) min (-?[\d.]+) max (-?[\d.]+)(.*)$', re.M
)


@pytest.fixture(scope='module')
def cartpole_eval(classic_run, tmp_path_factory):
    _, checkpoint_dir, _ = classic_run
    directory = tmp_path_factory.mktemp('cartpole_eval')
    path = os.path.join(checkpoint_dir, 'PPO_CartPole-v1_1.ckpt')
    videos = directory / 'videos'
    proc = run_module(
        'deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={path}', '--num_eval_episodes=1', f'--recording_video_dir={videos}',
        cwd=str(directory),
    )
    return proc, path, videos


def test_eval_agent_plays_the_cartpole_checkpoint_and_records_its_first_episode(cartpole_eval):
    proc, path, videos = cartpole_eval
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = RETURN_LINE.search(proc.stdout)
    assert match, proc.stdout
    assert match.group(1, 2, 3) == ('CartPole-v1', path, '1')
    episode_return = float(match.group(4))
    assert 8 <= episode_return <= 500 and match.group(8) == ''  # one whole episode
    assert f'video of the first episode: {videos}' in proc.stdout
    frames = video_frames(videos)
    # The reset frame and one per step, except the step that ends the episode: as many frames as steps,
    # and a CartPole return counts the steps.
    assert len(frames) == episode_return
    assert frames[0].shape == (400, 600, 3)


def test_eval_agent_prints_no_error_line_when_nothing_failed(cartpole_eval):
    proc, _, _ = cartpole_eval
    assert proc.returncode == 0
    assert [line for line in proc.stderr.splitlines() if line.startswith('error:')] == []


# --- Atari ----------------------------------------------------------------------------------------------------------

ATARI_FLAGS = (
    '--num_iterations=1',
    '--num_actors=1',
    '--num_envs_per_actor=2',
    '--unroll_length=16',
    '--num_train_steps=64',
    '--num_eval_steps=50',
)
ATARI_ACTIONS = {'Pong': 6, 'Breakout': 4}  # minimal action sets


@pytest.fixture(scope='module')
def atari_runs(tmp_path_factory):
    runs = {}
    for game in ATARI_ACTIONS:
        directory = tmp_path_factory.mktemp(game)
        runs[game] = train('deep_rl_zoo.ppo.run_atari', directory, f'--environment_name={game}', *ATARI_FLAGS)
    return runs


@pytest.mark.parametrize('game', sorted(ATARI_ACTIONS))
def test_run_atari_trains_and_checkpoints(atari_runs, game):
    proc, checkpoint_dir = atari_runs[game]
    rows = read_csv(os.path.join(checkpoint_dir, f'PPO_{game}_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '64', '2')]  # 2 x 16 x 2
    loaded = load(os.path.join(checkpoint_dir, f'PPO_{game}_0.ckpt'), game)
    assert loaded['counters'] == {'env_steps': 64, 'learner_steps': 2, 'iteration': 0}
    assert loaded['flags']['environment_kind'] == 'atari'
    network = loaded['state']['network']
    assert network['torso.convs.0.weight'].shape == (32, 4, 8, 8)  # 4 stacked frames in
    assert network['policy_head.weight'].shape == (ATARI_ACTIONS[game], 512)
    assert 'iteration 0: env steps 64' in proc.stdout


def test_eval_agent_plays_the_breakout_checkpoint_and_records_it(atari_runs, tmp_path):
    _, checkpoint_dir = atari_runs['Breakout']
    path = os.path.join(checkpoint_dir, 'PPO_Breakout_0.ckpt')
    videos = tmp_path / 'videos'
    proc = run_module(
        'deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={path}', '--num_eval_steps=50', f'--recording_video_dir={videos}',
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = RETURN_LINE.search(proc.stdout)
    assert match, proc.stdout
    assert match.group(1, 2) == ('Breakout', path)
    assert float(match.group(4)) >= 0.0  # raw Breakout score
    frames = video_frames(videos)
    # 50 steps cannot finish a Breakout game (5 lives): the reset frame plus one per step, full RGB screens.
    assert 'no episode finished' in match.group(8)
    assert len(frames) == 51
    assert frames[0].shape == (210, 160, 3)


# --- Continuous control ---------------------------------------------------------------------------------------------


def test_run_continuous_trains_a_gaussian_policy_on_pendulum(tmp_path):
    proc, checkpoint_dir = train(
        'deep_rl_zoo.ppo.run_continuous',
        tmp_path,
        '--environment_name=Pendulum-v1',
        '--num_iterations=1',
        '--num_envs_per_actor=2',
        '--unroll_length=16',
        '--num_train_steps=64',
        '--num_eval_steps=200',  # exactly one Pendulum episode (200-step time limit)
    )
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_Pendulum-v1_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '64', '2')]
    assert rows[0]['eval_num_episodes'] == '1'
    assert -2000.0 < float(rows[0]['eval_episode_return']) < 0.0  # Pendulum rewards are costs in [-16.3, 0]
    loaded = load(os.path.join(checkpoint_dir, 'PPO_Pendulum-v1_0.ckpt'), 'Pendulum-v1')
    assert loaded['counters'] == {'env_steps': 64, 'learner_steps': 2, 'iteration': 0}
    assert loaded['flags']['environment_kind'] == 'continuous'
    network = loaded['state']['network']
    assert network['log_std'].shape == (1,) and network['mean_head.weight'].shape == (1, 64)
    assert not torch.equal(network['log_std'], torch.zeros(1))  # the std is learned
    # eval_agent records Pendulum (drawn by pygame) headless without SDL's spurious 'error: XDG_RUNTIME_DIR' line.
    videos = tmp_path / 'videos'
    proc = run_module(
        'deep_rl_zoo.ppo.eval_agent', f'--load_checkpoint_file={os.path.join(checkpoint_dir, "PPO_Pendulum-v1_0.ckpt")}', '--num_eval_episodes=1',
        f'--recording_video_dir={videos}', cwd=str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0 and 'XDG_RUNTIME_DIR' not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    assert [name for name in os.listdir(videos) if name.endswith('.mp4')]


# --- Learning -------------------------------------------------------------------------------------------------------

# run_classic's CartPole-v1 hyperparameters with half their budget: 2 iterations of 25,000 steps (about 25 s on
# 2 busy cores). Final evaluation returns (2,500 greedy steps) measured with these flags and the current defaults
# (4 epochs at lr 5e-3): seeds 1, 2: 500.0, seed 3: 304.4, seed 4: 374.7, seeds 5, 6, 7: 500.0. A random policy
# scores about 22.
LEARNING_THRESHOLD = 250.0


def test_ppo_learns_cartpole_with_its_default_hyperparameters(tmp_path):
    proc, checkpoint_dir = train(
        'deep_rl_zoo.ppo.run_classic', tmp_path, '--environment_name=CartPole-v1', '--num_iterations=2', '--num_train_steps=25000', '--seed=1'
    )
    rows = read_csv(os.path.join(checkpoint_dir, 'PPO_CartPole-v1_results.csv'))
    assert [int(row['env_steps']) for row in rows] == [25088, 50176]  # 98 and 196 updates of 8 envs x 32 steps
    final = float(rows[-1]['eval_episode_return'])
    assert not math.isnan(final) and final >= LEARNING_THRESHOLD, f'final eval return {final} < {LEARNING_THRESHOLD}: {rows}'
