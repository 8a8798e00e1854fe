"""The actor-critic end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic on
CartPole with TensorBoard, run_atari on Pong, eval_agent videos of both checkpoints, a bad flag. The checks every
agent's runs share are in unit_tests/value_agents.py."""

import pytest
import re

from unit_tests import value_agents as runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('ActorCritic', 'deep_rl_zoo.actor_critic')
# 4 CartPoles x 75 steps = 300 env steps per iteration, one update per 5 steps of each: 15 updates.
cartpole = runs.cartpole_fixture(
    AGENT,
    flags=(
        f'--environment_name={runs.CARTPOLE}',
        '--num_train_steps=300',
        '--num_eval_steps=100',
        '--num_envs=4',
        '--unroll_length=5',
        '--noprogress',
    ),
)
# 2 Pongs x 20 steps = 40 env steps: 4 updates of the Nature CNN (kept tiny: conv passes dominate the test's time).
pong = runs.pong_fixture(
    AGENT,
    atari_flags=('--num_envs=2', '--unroll_length=5', '--num_train_steps=40', '--num_eval_steps=20', '--num_iterations=1', '--noprogress'),
)
LEARNER_TAGS = {f'learner_statistics(learner_steps)/{name}' for name in ('loss', 'policy_loss', 'value_loss', 'entropy', 'advantage')}


def check_checkpoint(directory, environment, iteration, env_steps, learner_steps, kind):
    payload = runs.checkpoint.load_checkpoint(
        AGENT.checkpoint(directory, environment, iteration), agent_name=AGENT.name, environment_name=environment
    )
    assert payload['iteration'] == iteration
    assert payload['counters'] == {'env_steps': env_steps, 'learner_steps': learner_steps, 'iteration': iteration}
    assert payload['state']['env_steps'] == env_steps and payload['state']['learner_steps'] == learner_steps
    assert set(payload['state']) == {'network', 'optimizer', 'env_steps', 'learner_steps'}
    assert payload['flags']['environment_kind'] == kind
    return payload


def test_run_classic_checkpoints_counters_and_results(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    first = check_checkpoint(directory, runs.CARTPOLE, 0, 300, 15, 'classic')
    second = check_checkpoint(directory, runs.CARTPOLE, 1, 600, 30, 'classic')
    assert second['flags']['num_envs'] == 4 and second['flags']['unroll_length'] == 5
    network = second['state']['network']
    assert network['policy_head.weight'].shape == (2, 64) and network['value_head.weight'].shape == (1, 64)
    assert not (network['policy_head.weight'] == first['state']['network']['policy_head.weight']).all()  # it learned on
    rows = runs.check_results_csv(AGENT, directory, runs.CARTPOLE, [300, 600])
    assert [row['learner_steps'] for row in rows] == ['15', '30']
    for row in rows:
        assert int(row['train_num_episodes']) >= 1 and float(row['train_episode_return']) >= 8
        assert int(row['eval_num_episodes']) >= 1 and float(row['eval_episode_return']) > 0
    proc, _ = cartpole
    assert re.search(r'^iteration 1: env steps 600, ', proc.stdout, re.MULTILINE)


def test_run_classic_tensorboard_events(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    train = runs.cartpole_train_events(AGENT, directory)
    assert set(train.Tags()['scalars']) == runs.PERFORMANCE_TAGS | LEARNER_TAGS
    assert runs.scalar_steps(train, 'learner_statistics(learner_steps)/loss') == [15, 30]


def test_eval_agent_plays_and_records_the_cartpole_checkpoint(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_on_pong(pong):
    directory = runs.check_run_files(AGENT, pong, 'Pong', 1)
    runs.check_results_csv(AGENT, directory, 'Pong', [40])
    payload = check_checkpoint(directory, 'Pong', 0, 40, 4, 'atari')
    network = payload['state']['network']
    assert network['torso.convs.0.weight'].shape == (32, 4, 8, 8)  # 4 stacked frames in
    assert network['policy_head.weight'].shape == (6, 512)  # Pong's minimal action set
    assert payload['flags']['terminal_on_life_loss'] is True and payload['flags']['entropy_coef'] == 0.01


def test_eval_agent_plays_and_records_the_pong_checkpoint(pong, tmp_path):
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_bad_flag_and_another_agents_eval(cartpole, tmp_path):
    runs.check_bad_flag_and_wrong_checkpoint(AGENT, '--unroll_length=0', runs.Agent('DQN', 'deep_rl_zoo.dqn'), cartpole, tmp_path)
