"""Acceptance tests of experiments on real CartPole runs: kill -9 in the middle of an iteration, then the same command
again resumes from the last periodic checkpoint with its counters and schedules continuing, for a single-process
agent (DQN, with its replay memory saved) and an actors + learner agent (PPO); then a resumed run whose explicit
flags override the saved config and whose budget (--train_for_env_steps) ends it cleanly; and a session that fails to
start (no Ray cluster where --ray_address says), which leaves the experiment as it was."""

import csv
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from deep_rl_zoo import checkpoint
from unit_tests.helpers import REPO_ROOT, TRACEBACK, python_executable, run_module, snapshot

PERIODIC = re.compile(r'_0_at(\d+)\.ckpt$')

pytestmark = pytest.mark.slow


def killed_after_a_periodic_checkpoint(module, directory, experiment_dir, flags, every_env_steps, kill_at_env_steps):
    """Runs `module` with `flags` until it kills itself with SIGKILL right after a periodic checkpoint of at least
    `kill_at_env_steps` (one is written every `every_env_steps`: see `unit_tests.killed_after_checkpoint`); returns the
    newest periodic checkpoint left (the one a resume must start from) and its path."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    launcher = [python_executable(), '-m', 'unit_tests.killed_after_checkpoint', str(every_env_steps), str(kill_at_env_steps), module]
    with open(os.path.join(directory, 'first.txt'), 'w') as output:
        process = subprocess.run([*launcher, *flags], cwd=directory, env=env, stdout=output, stderr=subprocess.STDOUT, timeout=600, check=False)
    with open(os.path.join(directory, 'first.txt')) as output:
        assert process.returncode == -signal.SIGKILL, f'the run was not killed after a periodic checkpoint: {output.read()}'
    files = checkpoint.list_checkpoints(experiment_dir, *os.path.basename(experiment_dir).split('_', 1))
    newest = files[-1]
    assert all(file.periodic and file.iteration == 0 for file in files) and len(files) >= 2  # a resume must pick the newest
    assert int(PERIODIC.search(newest.path).group(1)) >= kill_at_env_steps
    assert not os.path.exists(os.path.join(experiment_dir, os.path.basename(experiment_dir) + '_0.ckpt'))  # mid-iteration
    return checkpoint.load_checkpoint(newest.path), newest.path


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


DQN_FLAGS = (
    '--num_iterations=1', '--num_train_steps=2000', '--num_eval_steps=0', '--min_replay_size=200', '--batch_size=32',
    '--learning_rate=0.001', '--save_every_sec=1', '--save_replay', '--nouse_tensorboard', '--noprogress', '--train_dir=exp',
    '--preset=none',  # run_classic's defaults (learn_interval 1), not the tuned CartPole preset
)  # fmt: skip


def test_dqn_killed_mid_iteration_resumes_from_its_periodic_checkpoint_and_learns_at_once(tmp_path):
    directory = str(tmp_path)
    experiment_dir = os.path.join(directory, 'exp', 'DQN_CartPole-v1')
    saved, path = killed_after_a_periodic_checkpoint('deep_rl_zoo.dqn.run_classic', directory, experiment_dir, DQN_FLAGS, every_env_steps=150, kill_at_env_steps=300)
    env_steps, learner_steps = saved['counters']['env_steps'], saved['counters']['learner_steps']
    assert saved['extra']['replay']['class'] == 'UniformReplay' and learner_steps > 0

    again = run_module('deep_rl_zoo.dqn.run_classic', *DQN_FLAGS, cwd=directory)  # the same command
    assert again.returncode == 0 and TRACEBACK not in again.stderr, again.stderr
    assert f'Resuming from {os.path.join("exp", "DQN_CartPole-v1", os.path.basename(path))}: iteration 0 ({env_steps} of its env steps done), {env_steps} env steps' in again.stdout
    assert 'Replay memory restored' in again.stdout
    final = checkpoint.load_checkpoint(os.path.join(experiment_dir, 'DQN_CartPole-v1_0.ckpt'))
    assert final['counters']['env_steps'] == 2000 and final['state']['env_steps'] == 2000  # epsilon's schedule input
    # With its replay restored the agent learns on every step at once (learn_interval 1): no refill.
    assert final['counters']['learner_steps'] == learner_steps + 2000 - env_steps
    rows = read_csv(os.path.join(experiment_dir, 'DQN_CartPole-v1_results.csv'))
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '2000')]
    assert float(rows[0]['wall_time']) > saved['extra']['experiment']['wall_time']  # wall time continues

    # Later: one more iteration, asked for explicitly, with a budget that ends it early. The learning rate is not on
    # this command line: it comes from the saved config.
    more = run_module('deep_rl_zoo.dqn.run_classic', *[flag for flag in DQN_FLAGS if not flag.startswith(('--num_iterations', '--learning_rate'))],
                      '--num_iterations=2', '--train_for_env_steps=2050', cwd=directory)  # fmt: skip
    assert more.returncode == 0 and TRACEBACK not in more.stderr, more.stderr
    config = os.path.join('exp', 'DQN_CartPole-v1', 'config.json')
    assert f'resume: --num_iterations=2 from the command line overrides 1 of {config}' in more.stdout
    assert f'resume: --train_for_env_steps=2050 from the command line overrides 0 of {config}' in more.stdout
    assert 'learning_rate' not in more.stdout
    assert 'Stopping during iteration 1: 2050 env steps reached --train_for_env_steps=2050' in more.stdout
    last = checkpoint.load_checkpoint(os.path.join(experiment_dir, 'DQN_CartPole-v1_1.ckpt'))
    assert last['counters']['env_steps'] == 2050 and last['flags']['learning_rate'] == 0.001
    assert [(row['iteration'], row['env_steps']) for row in read_csv(os.path.join(experiment_dir, 'DQN_CartPole-v1_results.csv'))] == [('0', '2000'), ('1', '2050')]
    with open(os.path.join(experiment_dir, 'log.txt')) as log:
        sessions = log.read().split('=== ')
    assert len(sessions) == 4  # one header per session
    assert f'resume: --num_iterations=2 from the command line overrides 1 of {config}\n' in sessions[3]  # printed before the log opened


PPO_FLAGS = ('--num_iterations=1', '--num_train_steps=12800', '--num_eval_steps=0', '--save_every_sec=1', '--nouse_tensorboard', '--noprogress', '--train_dir=exp')


def test_dqn_stopped_by_sigterm_with_save_replay_at_stop_resumes_with_its_replay(tmp_path):
    """Only the checkpoint at the stop holds the replay: a SIGTERM while the run waits after iteration 0
    (`unit_tests.paused_after_iteration`, so the point does not depend on the machine's speed)."""
    flags = [flag for flag in DQN_FLAGS if flag not in ('--save_replay', '--save_every_sec=1', '--num_iterations=1')]
    flags += ['--num_iterations=2', '--save_every_sec=0', '--save_replay_at_stop']
    experiment_dir, go_file = tmp_path / 'exp' / 'DQN_CartPole-v1', tmp_path / 'go'
    command = [python_executable(), '-m', 'unit_tests.paused_after_iteration', str(go_file), 'deep_rl_zoo.dqn.run_classic', *flags]
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    with open(tmp_path / 'stdout.txt', 'w') as stdout, open(tmp_path / 'stderr.txt', 'w') as stderr:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=stdout, stderr=stderr)
    try:
        milestone = experiment_dir / 'DQN_CartPole-v1_0.ckpt'
        deadline = time.monotonic() + 600
        while not milestone.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert milestone.exists(), (tmp_path / 'stderr.txt').read_text()[-3000:]
        process.send_signal(signal.SIGTERM)
        go_file.touch()
        assert process.wait(timeout=600) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = (tmp_path / 'stderr.txt').read_text()
    assert 'Adding the replay memory (' in stderr and 'Replay memory added in ' in stderr and TRACEBACK not in stderr, stderr[-3000:]
    assert 'replay' not in checkpoint.load_checkpoint(str(milestone))['extra']  # the iteration's own checkpoint: none
    at_stop = checkpoint.list_checkpoints(str(experiment_dir), 'DQN', 'CartPole-v1')[-1]  # the newest, which a resume takes
    assert at_stop.path.endswith('DQN_CartPole-v1_1_at2000.ckpt')  # after iteration 0's milestone: iteration 1 at its start
    saved = checkpoint.load_checkpoint(at_stop.path)
    assert saved['counters']['env_steps'] == 2000 and saved['extra']['replay']['class'] == 'UniformReplay'
    learner_steps = saved['counters']['learner_steps']

    again = run_module('deep_rl_zoo.dqn.run_classic', *flags, cwd=str(tmp_path))  # the same command
    assert again.returncode == 0 and TRACEBACK not in again.stderr, again.stderr
    assert f'Resuming from {os.path.join("exp", "DQN_CartPole-v1", "DQN_CartPole-v1_1_at2000.ckpt")}: iteration 1 (0 of its env steps done), 2000 env steps' in again.stdout
    assert 'Replay memory restored' in again.stdout
    assert [row['iteration'] for row in read_csv(experiment_dir / 'DQN_CartPole-v1_results.csv')] == ['0', '1']
    final = checkpoint.load_checkpoint(str(experiment_dir / 'DQN_CartPole-v1_1.ckpt'))
    assert final['counters']['learner_steps'] == learner_steps + 2000  # no refill: it learns on every step at once
    assert 'replay' not in final['extra']


def test_ppo_killed_mid_iteration_resumes_from_its_periodic_checkpoint_with_its_schedule(tmp_path):
    directory = str(tmp_path)
    experiment_dir = os.path.join(directory, 'exp', 'PPO_CartPole-v1')
    saved, _ = killed_after_a_periodic_checkpoint('deep_rl_zoo.ppo.run_classic', directory, experiment_dir, PPO_FLAGS, every_env_steps=1024, kill_at_env_steps=3000)
    env_steps, learner_steps = saved['counters']['env_steps'], saved['counters']['learner_steps']
    assert env_steps == 256 * learner_steps and env_steps < 12800  # 1 actor x 8 environments x 32 steps per update

    again = run_module('deep_rl_zoo.ppo.run_classic', *PPO_FLAGS, cwd=directory)
    assert again.returncode == 0 and TRACEBACK not in again.stderr, again.stderr
    assert f'iteration 0 ({env_steps} of its env steps done), {env_steps} env steps' in again.stdout
    final = checkpoint.load_checkpoint(os.path.join(experiment_dir, 'PPO_CartPole-v1_0.ckpt'))
    assert final['counters'] == {'env_steps': 12800, 'learner_steps': 50, 'iteration': 0}  # as without the kill
    # The learning rate decays linearly over the run's 50 updates: the last one used 5e-3 x (1 - 49/50).
    assert final['state']['optimizer']['param_groups'][0]['lr'] == pytest.approx(5e-3 * (1 - 49 / 50))
    assert final['state']['optimizer']['state'][0]['step'].item() == 50 * 4  # Adam's step count continues (4 epochs)
    assert [file.periodic for file in checkpoint.list_checkpoints(experiment_dir, 'PPO', 'CartPole-v1')][-1] is False


# A session that fails to start (issue 23): here --backend=ray with a --ray_address where no Ray cluster answers, which
# fails as the learner starts its actor pool, after the experiment has been read (and its checkpoint checked).
START_FLAGS = ('--num_train_steps=512', '--num_eval_steps=0', '--save_every_sec=0', '--noprogress', '--train_dir=exp', '--runs_dir=runs')


def no_cluster_flags():
    with socket.socket() as probe:  # a loopback port where nothing listens
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return ('--backend=ray', f'--ray_address=127.0.0.1:{port}')


def failed_to_start(process):
    assert process.returncode != 0 and TRACEBACK not in process.stderr, process.stderr
    assert 'no Ray cluster answers there' in process.stderr, process.stderr
    assert not re.search(r'^iteration \d+:', process.stdout, re.MULTILINE), process.stdout  # no iteration ran


@pytest.fixture
def ray_environment(tmp_path_factory, monkeypatch):
    monkeypatch.setenv('RAY_TMPDIR', str(tmp_path_factory.mktemp('ray')))  # no cluster of this machine is found there
    monkeypatch.setenv('RAY_AUTH_MODE', 'disabled')


@pytest.mark.parametrize('session', [
    ('--num_iterations=3',),  # the same command, to train on: resumes from iteration 1 with the saved config
    ('--load_checkpoint_file=exp/PPO_CartPole-v1/PPO_CartPole-v1_0.ckpt',),  # an older checkpoint: iteration 1's would go aside
])  # fmt: skip
def test_a_resumed_session_that_fails_to_start_leaves_the_experiment_as_it_was(tmp_path, ray_environment, session):
    """The session's flags must not reach config.json (or every later plain run of the experiment would fail the same
    way), nor may it move checkpoints aside, drop results rows, or write log.txt or TensorBoard events."""
    first = run_module('deep_rl_zoo.ppo.run_classic', *START_FLAGS, '--num_iterations=2', cwd=str(tmp_path))
    assert first.returncode == 0, first.stderr
    before = snapshot(tmp_path)
    assert os.path.join(tmp_path, 'exp', 'PPO_CartPole-v1', 'PPO_CartPole-v1_1.ckpt') in before and os.path.join(tmp_path, 'runs', 'PPO_CartPole-v1', 'train') in before

    failed_to_start(run_module('deep_rl_zoo.ppo.run_classic', *START_FLAGS, *session, *no_cluster_flags(), cwd=str(tmp_path)))
    config = os.path.join(tmp_path, 'exp', 'PPO_CartPole-v1', 'config.json')
    with open(config, 'rb') as file:
        assert file.read() == before[config]  # no --backend=ray in it
    assert snapshot(tmp_path) == before  # config.json byte for byte, the checkpoints, the results, the log, TensorBoard

    again = run_module('deep_rl_zoo.ppo.run_classic', *START_FLAGS, '--num_iterations=3', cwd=str(tmp_path))  # plain, later
    assert again.returncode == 0 and TRACEBACK not in again.stderr, again.stderr
    assert f'Resuming from {os.path.join("exp", "PPO_CartPole-v1", "PPO_CartPole-v1_1.ckpt")}: iteration 2, 1024 env steps' in again.stdout
    rows = read_csv(tmp_path / 'exp' / 'PPO_CartPole-v1' / 'PPO_CartPole-v1_results.csv')
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('0', '512'), ('1', '1024'), ('2', '1536')]


def test_a_new_experiment_that_fails_to_start_writes_nothing(tmp_path, ray_environment):
    failed_to_start(run_module('deep_rl_zoo.ppo.run_classic', *START_FLAGS, '--num_iterations=2', *no_cluster_flags(), cwd=str(tmp_path)))
    assert os.listdir(tmp_path) == []  # no experiment directory, config.json, log.txt or TensorBoard folder
