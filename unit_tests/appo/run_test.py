"""End-to-end runs of the APPO entry points as subprocesses on tiny budgets, everything written under tmp_path:
run_classic on real CartPole (CSV, checkpoints, TensorBoard), eval_agent (mp4), the model card's config on Pong
with small overrides, a misspelt config key, and two policies learning CartPole side by side."""

import csv
import json
import math
import os
import re
import shutil

import imageio.v2 as imageio
import pytest

from deep_rl_zoo import checkpoint
from deep_rl_zoo.appo import sample_factory_config
from unit_tests.helpers import TRACEBACK, run_module, stderr_lines

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

QUIET = ('--noprogress', '--learner_threads=1')
CARD = os.path.join(os.path.dirname(sample_factory_config.__file__), 'configs', 'atari_amidar.json')


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def train(module, directory, *flags, timeout=600):
    checkpoint_dir = os.path.join(directory, 'checkpoints')
    proc = run_module(module, *QUIET, f'--checkpoint_dir={checkpoint_dir}', f'--runs_dir={directory}/runs', *flags, cwd=str(directory), timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TRACEBACK not in proc.stderr
    return proc, checkpoint_dir


def load(path, environment_name):
    return checkpoint.load_checkpoint(path, agent_name='APPO', environment_name=environment_name)


RETURN_LINE = re.compile(r'^APPO on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?[\d.]+) std', re.M)

# 2 workers x 2 envs x 16-step rollouts of 32 samples; a batch of 2 minibatches of 32 samples = 2 rollouts per
# update, so 256 steps per iteration are 8 rollouts: 4 updates of 2 epochs x 2 minibatches = 16 SGD steps.
CLASSIC_FLAGS = (
    '--environment_name=CartPole-v1', '--num_iterations=2', '--num_train_steps=256', '--num_eval_steps=600', '--seed=3',
    '--num_workers=2', '--num_envs_per_worker=2', '--rollout=16', '--batch_size=32', '--num_batches_per_epoch=2', '--num_epochs=2',
    '--normalize_input',
)  # fmt: skip


@pytest.fixture(scope='module')
def classic_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp('classic')
    proc, checkpoint_dir = train('deep_rl_zoo.appo.run_classic', directory, *CLASSIC_FLAGS)
    return proc, checkpoint_dir, directory


def test_run_classic_writes_results_checkpoints_and_tensorboard(classic_run):
    proc, checkpoint_dir, directory = classic_run
    rows = read_csv(os.path.join(checkpoint_dir, 'APPO_CartPole-v1_results.csv'))
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '256', '4'), ('1', '512', '8')]
    for row in rows:
        assert 8 <= float(row['eval_episode_return']) <= 500
    last = load(os.path.join(checkpoint_dir, 'APPO_CartPole-v1_1.ckpt'), 'CartPole-v1')
    assert last['counters'] == {'env_steps': 512, 'learner_steps': 8, 'iteration': 1}
    assert last['state']['policies'][0]['sgd_steps'] == 32
    network = last['state']['network']
    assert network['policies.0.policy_head.weight'].shape == (2, 64)
    assert network['policies.0.observation_normalizer.count'].item() == pytest.approx(512, rel=1e-4)  # every sample folded in once
    assert 'policies.0.return_normalizer.mean' in network
    flags = last['flags']
    assert (flags['num_workers'], flags['num_actors'], flags['rollout'], flags['unroll_length'], flags['batch_rollouts']) == (2, 2, 16, 16, 2)
    events = [name for _, _, names in os.walk(os.path.join(directory, 'runs')) for name in names if name.startswith('events.out.tfevents')]
    assert events, 'no TensorBoard event file'


def test_eval_agent_plays_the_checkpoint_and_records_an_mp4(classic_run, tmp_path):
    _, checkpoint_dir, _ = classic_run
    path = os.path.join(checkpoint_dir, 'APPO_CartPole-v1_1.ckpt')
    videos = tmp_path / 'videos'
    proc = run_module('deep_rl_zoo.appo.eval_agent', f'--load_checkpoint_file={path}', '--num_eval_episodes=1', f'--recording_video_dir={videos}', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = RETURN_LINE.search(proc.stdout)
    assert match and match.group(1, 2, 3) == ('CartPole-v1', path, '1'), proc.stdout
    (video,) = [name for name in os.listdir(videos) if name.endswith('.mp4')]
    with imageio.get_reader(os.path.join(videos, video)) as reader:
        frames = [frame for frame in reader]
    assert len(frames) == float(match.group(4))  # a CartPole return counts its steps, one frame each
    bad = run_module('deep_rl_zoo.appo.eval_agent', f'--load_checkpoint_file={path}', '--policy_index=1', '--recording_video_dir=', cwd=str(tmp_path))
    assert bad.returncode != 0 and stderr_lines(bad)[-1].startswith('error: --policy_index=1: the checkpoint holds 1 policies')


def test_the_model_cards_config_runs_a_short_pong_job_with_command_line_overrides(tmp_path):
    proc, checkpoint_dir = train(
        'deep_rl_zoo.appo.run_atari', tmp_path, f'--config_json={CARD}', '--environment_name=atari_pong', '--num_workers=2',
        '--num_envs_per_worker=2', '--rollout=8', '--batch_size=16', '--num_batches_per_epoch=2', '--num_iterations=1',
        '--num_train_steps=64', '--num_eval_steps=20', '--nouse_tensorboard', timeout=600,
    )  # fmt: skip
    # the card's hardware keys and checkpoint timers, noted one per line
    assert f'{CARD}: ignored 23 settings that change nothing learned here:\n  device: ' in proc.stdout
    assert '\n  save_milestones_sec: ' in proc.stdout and '\n  save_best_every_sec: ' in proc.stdout
    assert 'warning' not in proc.stderr  # the card has no unknown key
    rows = read_csv(os.path.join(checkpoint_dir, 'APPO_Pong_results.csv'))
    # The card's 2 policies: a batch is 2 x 16 x 2 = 64 samples = 4 rollouts of 2 envs x 8 steps: 64 steps, 1 update.
    assert [(row['iteration'], row['env_steps'], row['learner_steps']) for row in rows] == [('0', '64', '1')]
    loaded = load(os.path.join(checkpoint_dir, 'APPO_Pong_0.ckpt'), 'Pong')
    flags = loaded['flags']
    assert (flags['num_policies'], flags['seed'], flags['normalize_input'], flags['obs_scale'], flags['lr_schedule']) == (2, 1234, True, 255.0, 'linear_decay')
    assert flags['num_workers'] == 2 and flags['rollout'] == 8  # explicit flags win over the config
    network = loaded['state']['network']
    for k in range(2):
        assert network[f'policies.{k}.encoder.0.0.weight'].shape == (32, 4, 8, 8)
        assert network[f'policies.{k}.policy_head.weight'].shape == (6, 512)
        assert network[f'policies.{k}.observation_normalizer.mean'].shape == (4 * 84 * 84,)
    assert len(loaded['state']['policies']) == 2


def test_a_misspelt_key_in_a_config_is_one_line_naming_it(tmp_path):
    with open(CARD, encoding='utf-8') as file:
        config = json.load(file)
    config['learning_rat'] = config.pop('learning_rate')
    path = tmp_path / 'typo.json'
    path.write_text(json.dumps(config), encoding='utf-8')
    proc = run_module('deep_rl_zoo.appo.run_atari', f'--config_json={path}', '--environment_name=atari_pong', '--nouse_tensorboard', cwd=str(tmp_path))
    assert proc.returncode != 0
    assert stderr_lines(proc) == [f"error: {path}: unknown key 'learning_rat'; did you mean 'learning_rate'?"]


def test_a_batch_that_is_not_whole_rollouts_is_one_line_naming_the_flags(tmp_path):
    proc = run_module('deep_rl_zoo.appo.run_classic', '--batch_size=100', '--nouse_tensorboard', cwd=str(tmp_path))
    assert proc.returncode != 0
    (line,) = stderr_lines(proc)
    assert line.startswith('error: --batch_size=100 x --num_batches_per_epoch=1 = 100 samples must be a multiple of --rollout=32 x --num_envs_per_worker=4')


# Two policies on CartPole, in APPO's synchronous mode (--async_rl=false: every update takes one rollout of each
# worker, so the run is the same on every machine load; the asynchronous default let policy 1 end at 24 on a busy
# machine) with minibatches of 128 per policy (2 policies x 128 = one rollout of each of the 2 workers x 4 environments
# x 32 steps), 3 iterations of 20,000 steps (about 40 s on a loaded 2-core machine). Measured greedy returns of the
# last checkpoint (3 episodes), policies 0 and 1: seed 1: 114, 141; seed 2: 192, 191; seed 3: 163, 128 (at 2
# iterations seed 1's policy 1 was at 95). A random policy scores about 22.
LEARNING_THRESHOLD = 100.0


def test_two_policies_each_learn_cartpole(tmp_path):
    _, checkpoint_dir = train(
        'deep_rl_zoo.appo.run_classic', tmp_path, '--environment_name=CartPole-v1', '--num_policies=2', '--async_rl=false', '--batch_size=128',
        '--num_iterations=3', '--num_train_steps=20000', '--num_eval_steps=0', '--seed=1', '--nouse_tensorboard',
    )  # fmt: skip
    path = os.path.join(checkpoint_dir, 'APPO_CartPole-v1_2.ckpt')
    loaded = load(path, 'CartPole-v1')
    assert [state['sgd_steps'] > 0 for state in loaded['state']['policies']] == [True, True]
    for k in range(2):
        proc = run_module('deep_rl_zoo.appo.eval_agent', f'--load_checkpoint_file={path}', f'--policy_index={k}', '--num_eval_episodes=3',
                          '--recording_video_dir=', cwd=str(tmp_path))  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        episode_return = float(RETURN_LINE.search(proc.stdout).group(4))
        assert not math.isnan(episode_return) and episode_return >= LEARNING_THRESHOLD, f'policy {k}: {episode_return}'
