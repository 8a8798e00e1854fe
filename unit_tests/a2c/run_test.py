"""End-to-end runs of the A2C entry points as subprocesses on tiny budgets (one run per module fixture serves several
tests): run_classic on CartPole-v1 with two actor processes, eval_agent on its checkpoint (mp4 read back), run_atari
on Pong with the real ROM and eval_agent on that checkpoint, a bad flag and another agent's checkpoint refused.
"""

import pytest
import os

import torch

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('A2C', 'deep_rl_zoo.a2c')
PPO = value_agents.Agent('PPO', 'deep_rl_zoo.ppo')

# 2 actors x 2 environments x 5 steps = 20 samples per update: 300 env steps per iteration are 15 updates.
CLASSIC_FLAGS = (
    f'--environment_name={CARTPOLE}',
    '--num_actors=2',
    '--num_envs_per_actor=2',
    '--unroll_length=5',
    '--num_train_steps=300',
    '--num_eval_steps=100',
    '--noprogress',
    '--learner_threads=1',
)
# 1 actor x 2 environments x 5 steps = 10 samples per update: 200 env steps are 20 updates.
ATARI_FLAGS = ('--num_actors=1', '--num_envs_per_actor=2', '--num_train_steps=200', '--num_eval_steps=100', '--num_iterations=1', '--noprogress')

cartpole = value_agents.cartpole_fixture(AGENT, flags=CLASSIC_FLAGS)
pong = value_agents.pong_fixture(AGENT, atari_flags=ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='A2C', environment_name=environment)


def test_run_classic_learns_from_every_sample_exactly_once_and_checkpoints(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    assert [row['learner_steps'] for row in rows] == ['15', '30']
    assert all(8 <= float(row['eval_episode_return']) <= 500 for row in rows)
    first, last = load(directory, CARTPOLE, 0), load(directory, CARTPOLE, 1)
    for payload, env_steps, learner_steps in ((first, 300, 15), (last, 600, 30)):
        assert payload['counters'] == {'env_steps': env_steps, 'learner_steps': learner_steps, 'iteration': payload['iteration']}
        assert payload['state']['learner_steps'] == learner_steps
        assert payload['state']['samples_used'] == env_steps  # every collected sample learned from once, none dropped
    assert last['flags']['num_actors'] == 2 and last['flags']['environment_kind'] == 'classic'
    assert last['flags']['optimizer'] == 'rmsprop' and last['flags']['unroll_length'] == 5
    assert 'square_avg' in last['state']['optimizer']['state'][0]  # RMSProp's state is saved for resuming
    assert last['state']['network']['policy_head.weight'].shape == (2, 64)
    assert not torch.equal(last['state']['network']['policy_head.weight'], first['state']['network']['policy_head.weight'])


def test_run_classic_logs_performance_and_learner_statistics_to_tensorboard(cartpole):
    value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    _, directory = cartpole
    train = value_agents.cartpole_train_events(AGENT, directory)
    tags = set(train.Tags()['scalars'])
    for name in ('policy_loss', 'value_loss', 'entropy', 'grad_norm', 'explained_variance', 'learning_rate'):
        assert f'learner_statistics(learner_steps)/{name}' in tags, sorted(tags)
    assert value_agents.scalar_steps(train, 'learner_statistics(learner_steps)/policy_loss') == [15, 30]


def test_eval_agent_plays_the_cartpole_checkpoint_and_records_an_mp4(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_trains_on_pong_with_the_nature_cnn(pong):
    directory = value_agents.check_run_files(AGENT, pong, 'Pong', 1)
    rows = value_agents.check_results_csv(AGENT, directory, 'Pong', [200])
    assert rows[0]['learner_steps'] == '20'
    payload = load(directory, 'Pong', 0)
    assert payload['counters'] == {'env_steps': 200, 'learner_steps': 20, 'iteration': 0}
    assert payload['state']['samples_used'] == 200
    assert payload['flags']['environment_kind'] == 'atari'
    assert (payload['flags']['optimizer'], payload['flags']['value_coef'], payload['flags']['anneal_learning_rate']) == ('rmsprop_tf', 0.25, False)  # the preset
    network = payload['state']['network']
    mean_squares = [state['square_avg'] for state in payload['state']['optimizer']['state'].values()]
    assert len(mean_squares) == len(network) and all(0.0 < float(square.min()) <= float(square.max()) <= 1.0 for square in mean_squares)  # from 1, decayed
    assert network['torso.convs.0.weight'].shape == (32, 4, 8, 8)  # 4 stacked frames in
    assert network['policy_head.weight'].shape == (6, 512)  # Pong's minimal action set


def test_eval_agent_plays_the_pong_checkpoint_and_records_it(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_a_bad_flag_fails_with_one_error_line_and_ppo_refuses_an_a2c_checkpoint(cartpole, tmp_path):
    value_agents.check_bad_flag_and_wrong_checkpoint(AGENT, '--unroll_length=0', PPO, cartpole, tmp_path)
    assert not os.path.exists(tmp_path / 'runs')
