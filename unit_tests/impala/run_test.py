"""End-to-end runs of the IMPALA entry points as subprocesses on tiny budgets (one run per module fixture serves several
tests): run_classic on CartPole-v1 with two asynchronous actor processes, eval_agent on its checkpoint (mp4 read
back), run_atari on Pong with the real ROM and the deep residual torso and eval_agent on that checkpoint, a bad flag
and another agent's checkpoint refused.
"""

import pytest
import os

import torch

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('IMPALA', 'deep_rl_zoo.impala')
A2C = value_agents.Agent('A2C', 'deep_rl_zoo.a2c')

# 2 environments x 5 steps = 10 env steps per rollout, 2 rollouts per update: 300 env steps per iteration are 30
# rollouts, at most 15 updates; how many are trained on depends on timing (the lag bound may drop some).
CLASSIC_FLAGS = (
    f'--environment_name={CARTPOLE}',
    '--num_actors=2',
    '--num_envs_per_actor=2',
    '--unroll_length=5',
    '--batch_rollouts=2',
    '--max_policy_lag=3',
    '--num_train_steps=300',
    '--num_eval_steps=1000',  # a whole greedy episode even when it already balances to the 500-step limit
    '--noprogress',
    '--learner_threads=1',
)
ATARI_FLAGS = (
    '--num_actors=1', '--num_envs_per_actor=2', '--unroll_length=5', '--batch_rollouts=1', '--num_train_steps=100', '--num_eval_steps=100',
    '--num_iterations=1', '--noprogress', '--torso=impala_resnet',
)  # fmt: skip

cartpole = value_agents.cartpole_fixture(AGENT, flags=CLASSIC_FLAGS)
pong = value_agents.pong_fixture(AGENT, atari_flags=ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='IMPALA', environment_name=environment)


def test_run_classic_trains_asynchronously_and_checkpoints(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    learner_steps = [int(row['learner_steps']) for row in rows]
    assert 0 < learner_steps[0] < learner_steps[1] <= 30  # at most every rollout, two per update, of 60
    assert all(8 <= float(row['eval_episode_return']) <= 500 for row in rows)
    first, last = load(directory, CARTPOLE, 0), load(directory, CARTPOLE, 1)
    assert last['counters'] == {'env_steps': 600, 'learner_steps': learner_steps[1], 'iteration': 1}
    assert last['state']['learner_steps'] == learner_steps[1]
    assert last['flags']['max_policy_lag'] == 3 and last['flags']['batch_rollouts'] == 2
    assert last['flags']['optimizer'] == 'adam' and last['flags']['environment_kind'] == 'classic'
    assert not torch.equal(last['state']['network']['policy_head.weight'], first['state']['network']['policy_head.weight'])


def test_run_classic_logs_v_trace_and_policy_lag_statistics_to_tensorboard(cartpole):
    value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    _, directory = cartpole
    train = value_agents.cartpole_train_events(AGENT, directory)
    tags = set(train.Tags()['scalars'])
    for name in (
        'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate', 'importance_weight_mean', 'importance_weight_clipped_fraction',
        'version_diff_min', 'version_diff_mean', 'version_diff_max', 'dropped_rollouts', 'dropped_fraction',
    ):  # fmt: skip
        assert f'learner_statistics(learner_steps)/{name}' in tags, sorted(tags)
    lags = train.Scalars('learner_statistics(learner_steps)/version_diff_max')
    assert all(0 <= event.value <= 3 for event in lags)  # the bound holds


def test_eval_agent_plays_the_cartpole_checkpoint_and_records_an_mp4(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_trains_on_pong_with_the_deep_residual_torso(pong):
    directory = value_agents.check_run_files(AGENT, pong, 'Pong', 1)
    value_agents.check_results_csv(AGENT, directory, 'Pong', [100])
    payload = load(directory, 'Pong', 0)
    assert payload['counters']['env_steps'] == 100 and payload['counters']['learner_steps'] >= 1
    assert payload['flags']['environment_kind'] == 'atari' and payload['flags']['torso'] == 'impala_resnet'
    network = payload['state']['network']
    assert network['torso.convs.0.weight'].shape == (16, 4, 3, 3)  # the residual network's first conv, 4 frames in
    assert network['torso.fc.0.weight'].shape == (256, 3872)
    assert network['policy_head.weight'].shape == (6, 256)  # Pong's minimal action set
    assert 'square_avg' in payload['state']['optimizer']['state'][0]  # RMSProp, as in the paper


def test_eval_agent_plays_the_pong_checkpoint_and_records_it(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_a_bad_flag_fails_with_one_error_line_and_a2c_refuses_an_impala_checkpoint(cartpole, tmp_path):
    value_agents.check_bad_flag_and_wrong_checkpoint(AGENT, '--max_policy_lag=-1', A2C, cartpole, tmp_path)
    assert not os.path.exists(tmp_path / 'runs')
