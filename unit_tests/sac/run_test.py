"""End-to-end runs of the discrete SAC entry points as subprocesses on tiny budgets (one run per module fixture
serves several tests): run_classic on CartPole-v1 with two actor processes, eval_agent on its checkpoint (mp4 read
back), run_atari on Pong with the real ROM and eval_agent on that checkpoint, a bad flag and another agent's
checkpoint refused.
"""

import math
import os

import pytest
import torch

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('SAC', 'deep_rl_zoo.sac')
A2C = value_agents.Agent('A2C', 'deep_rl_zoo.a2c')

# 2 actors x 2 environments x 5 steps = 20 env steps per update (5 replay adds of 4 streams): 300 per iteration.
CLASSIC_FLAGS = (
    f'--environment_name={CARTPOLE}',
    '--num_actors=2',
    '--num_envs_per_actor=2',
    '--unroll_length=5',
    '--num_train_steps=300',
    '--num_eval_steps=100',
    '--min_replay_size=64',
    '--batch_size=32',
    '--learn_interval=4',
    '--noprogress',
    '--learner_threads=1',
)
# 1 actor x 2 environments x 4 steps = 8 env steps per update; a small compressed replay of 4-frame stacks; a
# gradient step per 50 env steps (2 in all: Nature CNNs with Adam cost up to a second a step on a busy CPU).
ATARI_FLAGS = (
    '--num_actors=1',
    '--num_envs_per_actor=2',
    '--unroll_length=4',
    '--replay_capacity=2000',
    '--min_replay_size=64',
    '--batch_size=8',
    '--learn_interval=50',
    '--num_train_steps=200',
    '--num_eval_steps=100',
    '--num_iterations=1',
    '--noprogress',
)

cartpole = value_agents.cartpole_fixture(AGENT, flags=CLASSIC_FLAGS)
pong = value_agents.pong_fixture(AGENT, atari_flags=ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='SAC', environment_name=environment)


def check_replay_ratio(state, env_steps, num_streams, min_replay_size, learn_interval, n_step):
    """Every step went to replay; learning began once it held min_replay_size (after min_replay_size / streams adds,
    or up to n_step more while the newest slots of a stream wait for their n-step window); then one gradient step
    per learn_interval env steps."""
    assert state['env_steps'] == env_steps
    adds = env_steps // num_streams
    first_learning_add = [min_replay_size // num_streams + extra for extra in range(n_step + 1)]
    assert state['learning_env_steps'] in [num_streams * (adds - k + 1) for k in first_learning_add]
    assert state['learner_steps'] == state['learning_env_steps'] // learn_interval > 0


def test_run_classic_fills_one_replay_from_both_actors_and_keeps_the_replay_ratio(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    assert all(8 <= float(row['eval_episode_return']) <= 500 for row in rows)
    first, last = load(directory, CARTPOLE, 0), load(directory, CARTPOLE, 1)
    for payload, env_steps in ((first, 300), (last, 600)):
        state = payload['state']
        assert payload['counters'] == {'env_steps': env_steps, 'learner_steps': state['learner_steps'], 'iteration': payload['iteration']}
        check_replay_ratio(state, env_steps, num_streams=4, min_replay_size=64, learn_interval=4, n_step=3)
        assert rows[payload['iteration']]['learner_steps'] == str(state['learner_steps'])
    assert last['flags']['num_actors'] == 2 and last['flags']['environment_kind'] == 'classic'
    state = last['state']
    assert set(state) >= {'network', 'critics', 'target_critics', 'policy_optimizer', 'critic_optimizer', 'temperature_optimizer', 'log_alpha'}
    assert 'exp_avg' in state['critic_optimizer']['state'][0]  # Adam's state is saved for resuming
    assert state['network']['policy_head.weight'].shape == (2, 64)  # the policy is what eval_agent loads
    assert state['critics']['critic_1.head.weight'].shape == (2, 128)
    assert not torch.equal(state['network']['policy_head.weight'], first['state']['network']['policy_head.weight'])
    assert not torch.equal(state['critics']['critic_1.head.weight'], state['critics']['critic_2.head.weight'])  # two critics
    assert not any(key.startswith('torso') for key in state['critics'])  # each with a torso of its own (no --shared_torso)
    assert last['flags']['n_step'] == 3 and not torch.equal(state['log_alpha'], torch.log(torch.tensor(0.1)))  # the temperature is learned


def test_run_classic_logs_learner_statistics_to_tensorboard(cartpole):
    value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    _, directory = cartpole
    train = value_agents.cartpole_train_events(AGENT, directory)
    tags = set(train.Tags()['scalars'])
    for name in ('q_loss', 'policy_loss', 'temperature_loss', 'alpha', 'entropy', 'mean_q', 'critic_grad_norm', 'policy_grad_norm'):
        assert f'learner_statistics(learner_steps)/{name}' in tags, sorted(tags)


def test_eval_agent_plays_the_cartpole_checkpoint_and_records_an_mp4(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_trains_on_pong_with_nature_cnns(pong):
    directory = value_agents.check_run_files(AGENT, pong, 'Pong', 1)
    value_agents.check_results_csv(AGENT, directory, 'Pong', [200])
    payload = load(directory, 'Pong', 0)
    assert payload['flags']['environment_kind'] == 'atari' and payload['flags']['compress_replay']
    assert not payload['flags']['learn_temperature'] and payload['state']['log_alpha'].item() == pytest.approx(math.log(0.05))  # Pong preset: fixed
    check_replay_ratio(payload['state'], 200, num_streams=2, min_replay_size=64, learn_interval=50, n_step=3)  # the Pong preset's 3-step returns
    state = payload['state']
    assert payload['flags']['shared_torso']  # the Pong preset: one Nature CNN under the policy and both critics
    assert state['network']['torso.torso.convs.0.weight'].shape == (32, 4, 8, 8)  # 4 stacked frames in
    assert torch.equal(state['network']['torso.torso.convs.0.weight'], state['critics']['torso.convs.0.weight'])
    assert state['network']['policy_head.weight'].shape == (6, 512)  # Pong's minimal action set
    assert state['critics']['head_2.weight'].shape == (6, 512)
    assert state['target_critics']['torso.convs.0.weight'].shape == (32, 4, 8, 8)


def test_eval_agent_plays_the_pong_checkpoint_and_records_it(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_a_bad_flag_fails_with_one_error_line_and_a2c_refuses_a_sac_checkpoint(cartpole, tmp_path):
    value_agents.check_bad_flag_and_wrong_checkpoint(AGENT, '--target_entropy_ratio=2', A2C, cartpole, tmp_path)
    assert not os.path.exists(tmp_path / 'runs')
