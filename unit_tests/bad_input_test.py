"""Clear failure (DESIGN.md principle 7): bad flags, unknown environments and wrong, missing or corrupt
checkpoints end the run with a non-zero exit and one line on stderr naming the problem, never a traceback,
and leave no output files behind."""

import os
import socket

import pytest
import torch

from deep_rl_zoo import checkpoint
from deep_rl_zoo.networks.policy import mlp_actor_critic
from deep_rl_zoo.networks.value import mlp_q_network
from unit_tests.helpers import TRACEBACK, run_module, stderr_lines

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

ABSL_HINT = 'Pass --helpshort or --helpfull to see help on flags.'
CLASSIC_FLAGS = {
    'environment_name': 'CartPole-v1',
    'environment_kind': 'classic',
    'seed': 1,
    'num_train_steps': 300,
}


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    """Real checkpoint files written by checkpoint.save_checkpoint (no training needed)."""
    directory = tmp_path_factory.mktemp('bad_input_checkpoints')
    torch.manual_seed(0)
    network = mlp_q_network(4, 2)
    dqn = checkpoint.save_checkpoint(
        str(directory / 'DQN_CartPole-v1_0.ckpt'),
        agent_name='DQN',
        environment_name='CartPole-v1',
        iteration=0,
        state={
            'network': network.state_dict(),
            'target_network': network.state_dict(),
            'optimizer': torch.optim.Adam(network.parameters()).state_dict(),
            'env_steps': 300,
            'learner_steps': 200,
        },
        counters={'env_steps': 300, 'learner_steps': 200, 'iteration': 0},
        flags=CLASSIC_FLAGS,
    )
    ppo = checkpoint.save_checkpoint(
        str(directory / 'PPO_CartPole-v1_0.ckpt'),
        agent_name='PPO',
        environment_name='CartPole-v1',
        iteration=0,
        state={'network': mlp_actor_critic(4, 2).state_dict()},
        counters={'env_steps': 256, 'learner_steps': 20, 'iteration': 0},
        flags=CLASSIC_FLAGS,
    )
    with open(dqn, 'rb') as file:
        data = file.read()
    truncated = directory / 'truncated.ckpt'
    truncated.write_bytes(data[: len(data) // 2])
    return {'dqn': dqn, 'ppo': ppo, 'truncated': str(truncated), 'directory': str(directory)}


def run_in_empty_dir(tmp_path, module, *flags):
    """Runs `module` in an empty directory and checks it leaves it empty (no checkpoints, runs, recordings)."""
    work = tmp_path / 'work'
    work.mkdir()
    proc = run_module(module, *flags, cwd=str(work))
    assert os.listdir(work) == [], f'a failed run left files behind: {os.listdir(work)}'
    return proc


def assert_one_clear_line(proc, *keywords):
    """Non-zero exit, no traceback, and exactly one stderr line starting 'error: ' that holds every keyword."""
    assert proc.returncode != 0, f'expected a failure\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}'
    assert TRACEBACK not in proc.stderr, proc.stderr
    lines = stderr_lines(proc)
    assert len(lines) == 1, f'expected one line on stderr, got {len(lines)}:\n{proc.stderr}'
    assert lines[0].startswith('error: '), lines[0]
    for keyword in keywords:
        assert keyword in lines[0], f'{keyword!r} not in {lines[0]!r}'


def test_unknown_classic_environment(tmp_path):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.run_classic', '--environment_name=NoSuchGame', '--noprogress')
    assert_one_clear_line(proc, "--environment_name='NoSuchGame'", 'not a classic-control environment', 'CartPole-v1')


def test_unknown_atari_game(tmp_path):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.run_atari', '--environment_name=NoSuchGame', '--noprogress')
    assert_one_clear_line(proc, "--environment_name='NoSuchGame'", 'not an Atari game', 'Pong', 'Breakout')


@pytest.mark.parametrize(
    'module, name, keywords',
    [
        ('deep_rl_zoo.dqn.run_classic', 'Pendulum-v1', ('not a classic-control environment', 'continuous actions', 'python -m deep_rl_zoo.ppo.run_continuous --environment_name=Pendulum-v1')),
        ('deep_rl_zoo.dqn.run_classic', 'Pong', ('Pong is an Atari game', 'python -m deep_rl_zoo.dqn.run_atari --environment_name=Pong')),
        ('deep_rl_zoo.ppo.run_atari', 'CartPole-v1', ('not an Atari game', 'python -m deep_rl_zoo.ppo.run_classic --environment_name=CartPole-v1')),
        ('deep_rl_zoo.ppo.run_continuous', 'LunarLander-v3', ('not a continuous-control environment', 'deep_rl_zoo.ppo.run_classic --environment_name=LunarLander-v3')),
    ],
)
def test_a_task_given_to_the_wrong_script_points_to_the_right_one(tmp_path, module, name, keywords):
    proc = run_in_empty_dir(tmp_path, module, f'--environment_name={name}', '--noprogress')
    assert_one_clear_line(proc, f"--environment_name='{name}'", *keywords)


@pytest.mark.parametrize(
    'module, network',
    [('deep_rl_zoo.ppo.run_atari', "PPO's Nature CNN on Atari frames"), ('deep_rl_zoo.ppo_rnd.run_classic', "PPO-RND's network")],
)
def test_observation_normalisation_where_the_network_has_no_normaliser_is_refused_not_ignored(tmp_path, module, network):
    proc = run_in_empty_dir(tmp_path, module, '--normalize_observations', '--noprogress')
    assert_one_clear_line(proc, '--normalize_observations', 'vector observations only', 'deep_rl_zoo.ppo.run_classic', network)


# ---------------------------------------------------------------------------------- flag bounds


@pytest.fixture(scope='module')
def num_actors_zero(tmp_path_factory):
    work = tmp_path_factory.mktemp('num_actors_zero')
    proc = run_module('deep_rl_zoo.ppo.run_classic', '--num_actors=0', '--noprogress', cwd=str(work))
    assert os.listdir(work) == []
    return proc


def test_zero_actors(num_actors_zero):
    assert_one_clear_line(num_actors_zero, '--num_actors=0')


def test_negative_train_steps(tmp_path):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.run_classic', '--num_train_steps=-5', '--noprogress')
    assert_one_clear_line(proc, '--num_train_steps=-5', 'non-negative')


@pytest.mark.parametrize('module, flag', [('deep_rl_zoo.dqn.run_classic', 'checkpoint_dir'), ('deep_rl_zoo.ppo.run_classic', 'train_dir')])
def test_an_output_directory_that_is_a_file_is_refused_at_start(tmp_path, module, flag):
    work = tmp_path / 'work'
    work.mkdir()
    (work / 'notes.txt').write_text('a file')
    proc = run_module(module, f'--{flag}=notes.txt/run', '--num_train_steps=300', '--noprogress', cwd=str(work))
    assert_one_clear_line(proc, f'--{flag}=notes.txt/run is under the file {work}/notes.txt, not a directory')
    assert os.listdir(work) == ['notes.txt'] and 'iteration 0' not in proc.stdout  # before any training or file


def free_loopback_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_a_ray_address_where_no_cluster_answers_is_one_line(tmp_path, monkeypatch):
    """Ray itself retries a HOST:PORT for minutes and prints a traceback for 'auto' without a cluster."""
    monkeypatch.setenv('RAY_TMPDIR', str(tmp_path))  # no cluster of this machine is found there
    monkeypatch.setenv('RAY_AUTH_MODE', 'disabled')
    port = free_loopback_port()
    for address in (f'127.0.0.1:{port}', 'auto'):
        proc = run_module('deep_rl_zoo.ppo.run_classic', '--backend=ray', f'--ray_address={address}', '--num_train_steps=256', '--noprogress', cwd=str(tmp_path), timeout=60)
        port_shown = port if address != 'auto' else 6379
        assert_one_clear_line(proc, f'--ray_address={address}: no Ray cluster answers there', f'`ray start --head --port={port_shown}`', 'leave --ray_address empty')


@pytest.mark.parametrize('module, flag, sizes', [
    ('deep_rl_zoo.ppo.run_classic', '--unroll_length=1000000000000', '--num_actors=1 x --num_envs_per_actor=8 x --unroll_length=1000000000000 steps'),
    ('deep_rl_zoo.appo.run_classic', '--batch_size=1099511627776',
     '--num_workers=2 x --num_envs_per_worker=4 x --rollout=32 steps, buffers for --num_batches_to_accumulate=2 batches of --batch_size=1099511627776'),
])  # fmt: skip
def test_rollout_buffers_larger_than_the_free_memory_are_refused_before_allocating(tmp_path, module, flag, sizes):
    proc = run_in_empty_dir(tmp_path, module, flag, '--noprogress')
    assert_one_clear_line(proc, 'the rollout buffers would need', f'GiB of shared memory ({sizes})', 'is free: lower one of them')


# ---------------------------------------------------------------------------------- checkpoints


def test_eval_missing_checkpoint(tmp_path):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.eval_agent', '--load_checkpoint_file=no/such.ckpt')
    assert_one_clear_line(proc, 'checkpoint no/such.ckpt does not exist')


def test_resume_missing_checkpoint(tmp_path):
    proc = run_in_empty_dir(
        tmp_path, 'deep_rl_zoo.dqn.run_classic', '--load_checkpoint_file=no/such.ckpt', '--noprogress'
    )
    assert_one_clear_line(proc, 'checkpoint no/such.ckpt does not exist')


def test_eval_with_empty_checkpoint_path_refuses_to_play_random_weights(tmp_path):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.eval_agent', '--load_checkpoint_file=')
    assert_one_clear_line(proc, '--load_checkpoint_file is empty', '.ckpt')
    assert 'return mean' not in proc.stdout


def test_eval_checkpoint_of_another_agent(tmp_path, checkpoints):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.eval_agent', f'--load_checkpoint_file={checkpoints["ppo"]}')
    assert_one_clear_line(proc, checkpoints['ppo'], 'written by agent PPO, not DQN')


def test_eval_checkpoint_of_another_environment(tmp_path, checkpoints):
    proc = run_in_empty_dir(
        tmp_path,
        'deep_rl_zoo.dqn.eval_agent',
        f'--load_checkpoint_file={checkpoints["dqn"]}',
        '--environment_name=Acrobot-v1',
    )
    assert_one_clear_line(proc, 'written for environment CartPole-v1, not Acrobot-v1')


def test_the_same_checkpoint_evaluates_when_the_input_is_right(tmp_path, checkpoints):
    """Control for the cases above: the hand-written DQN checkpoint is valid, so the refusals are about the input."""
    proc = run_module(
        'deep_rl_zoo.dqn.eval_agent',
        f'--load_checkpoint_file={checkpoints["dqn"]}',
        '--environment_name=CartPole-v1',
        '--num_eval_steps=20',
        '--recording_video_dir=',
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert 'DQN on CartPole-v1' in proc.stdout and 'return mean' in proc.stdout


def test_eval_truncated_checkpoint(tmp_path, checkpoints):
    proc = run_in_empty_dir(tmp_path, 'deep_rl_zoo.dqn.eval_agent', f'--load_checkpoint_file={checkpoints["truncated"]}')
    assert_one_clear_line(proc, checkpoints['truncated'], 'truncated or corrupt')
