"""End-to-end runs of IMPALA with its LSTM core (--use_lstm) as subprocesses on tiny budgets: run_classic on CartPole-v1
with two asynchronous actor processes (the checkpoint records the flag and holds the core), eval_agent rebuilding
the recurrent network from the checkpoint (mp4 read back), and run_atari on Pong with the Nature torso and the core.
"""

import pytest

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.impala.run_test import AGENT, CLASSIC_FLAGS
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

ATARI_FLAGS = (
    '--num_actors=1', '--num_envs_per_actor=2', '--unroll_length=5', '--batch_rollouts=1', '--num_train_steps=100', '--num_eval_steps=100',
    '--num_iterations=1', '--noprogress', '--use_lstm',
)  # fmt: skip

cartpole = value_agents.cartpole_fixture(AGENT, flags=(*CLASSIC_FLAGS, '--use_lstm'))
pong = value_agents.pong_fixture(AGENT, atari_flags=ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='IMPALA', environment_name=environment)


def test_run_classic_with_the_lstm_core_trains_and_checkpoints_it(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    assert 0 < int(rows[0]['learner_steps']) < int(rows[1]['learner_steps'])
    assert all(8 <= float(row['eval_episode_return']) <= 500 for row in rows)
    payload = load(directory, CARTPOLE, 1)
    assert payload['flags']['use_lstm'] is True
    network = payload['state']['network']
    assert network['core.weight_ih'].shape == (4 * 256, 64 + 2 + 1)  # torso output, one-hot previous action, reward
    assert network['policy_head.weight'].shape == (2, 256) and 'value_torso.body.0.weight' not in network


def test_eval_agent_rebuilds_the_recurrent_network_and_records_an_mp4(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_with_the_lstm_core_trains_on_pong_and_eval_agent_plays_it(pong, tmp_path):
    directory = value_agents.check_run_files(AGENT, pong, 'Pong', 1)
    value_agents.check_results_csv(AGENT, directory, 'Pong', [100])
    payload = load(directory, 'Pong', 0)
    assert payload['counters']['learner_steps'] >= 1 and payload['flags']['use_lstm'] is True
    network = payload['state']['network']
    assert network['torso.fc.0.weight'].shape == (512, 3136)  # the Nature CNN
    assert network['core.weight_ih'].shape == (4 * 256, 512 + 6 + 1)  # Pong's 6 actions
    value_agents.check_pong_eval(AGENT, pong, tmp_path)
