"""C51 end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong, and one-line errors.
The runs and the checks every value-based agent shares are in unit_tests/value_agents.py."""

import pytest
import glob

from unit_tests import value_agents as runs
from unit_tests.helpers import run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('C51', 'deep_rl_zoo.c51_dqn')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)  # the paper's 51 atoms on [-10, 10]


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    assert 600 - 65 <= payload['counters']['learner_steps'] <= 600 - 64  # learn_interval 1 after 64 transitions
    assert (payload['flags']['num_atoms'], payload['flags']['v_min'], payload['flags']['v_max']) == (51, 0.0, 100.0)
    network = payload['state']['network']
    assert tuple(network['head.weight'].shape) == (2 * 51, 128)
    assert network['support'][0] == 0.0 and network['support'][-1] == 100.0 and len(network['support']) == 51
    train = runs.cartpole_train_events(AGENT, directory)
    assert {
        'learner_statistics(learner_steps)/loss',
        'agent_statistics(env_steps)/exploration_epsilon',
        'performance(env_steps)/episode_return',
    } <= set(train.Tags()['scalars'])


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_checkpoint(pong):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    assert payload['flags']['learning_rate'] == 1e-4 and payload['flags']['adam_eps'] == 1e-8  # the Pong preset's: Tianshou's rate and eps
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['head.weight'].shape) == (6 * 51, 512)  # Pong's 6 actions x 51 atoms
    assert network['support'][0] == -10.0 and network['support'][-1] == 10.0


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_v_min_not_below_v_max_ends_with_one_line(tmp_path):
    proc = run_module(AGENT.module('run_classic'), '--v_min=5', '--v_max=5', '--nouse_tensorboard', '--checkpoint_dir=ck', cwd=str(tmp_path))
    assert runs.failed_cleanly(proc)[-1] == 'error: --v_min (5.0) must be below --v_max (5.0)', proc.stderr
    assert not glob.glob(str(tmp_path / 'ck' / '*.ckpt'))
