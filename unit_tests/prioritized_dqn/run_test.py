"""Prioritized DQN through its scripts (subprocesses, tiny budgets): beyond the runs and checks in
unit_tests/value_agents.py, its priority and beta flags, the annealed beta in TensorBoard, and the --priority_eps
error. DQN's run tests (unit_tests/dqn/run_test.py) cover resume and Breakout for all replay agents."""

import pytest

from unit_tests import value_agents as runs
from unit_tests.helpers import run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('PrioritizedDQN', 'deep_rl_zoo.prioritized_dqn')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)


def test_run_classic_checkpoints_and_results_csv(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    assert 600 - 65 <= payload['state']['learner_steps'] <= 600 - 64  # Every step once replay holds 64.
    assert payload['flags']['priority_exponent'] == 0.6 and payload['flags']['importance_sampling_exponent_begin_value'] == 0.4
    rows = runs.read_csv(directory / 'ck' / AGENT.file_name(runs.CARTPOLE, 'results'))
    assert all(int(row['eval_num_episodes']) >= 1 for row in rows)


def test_run_classic_tensorboard_events(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    train = runs.cartpole_train_events(AGENT, directory)
    assert set(train.Tags()['scalars']) == runs.EPSILON_GREEDY_TAGS | {'agent_statistics(env_steps)/importance_sampling_exponent'}
    # beta is annealed linearly from 0.4 to 1 over run_classic's 200,000 steps.
    beta = [event.value for event in train.Scalars('agent_statistics(env_steps)/importance_sampling_exponent')]
    assert beta == pytest.approx([0.4 + 0.6 * 300 / 200_000, 0.4 + 0.6 * 600 / 200_000], abs=1e-6)


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    assert tuple(payload['state']['network']['head.weight'].shape) == (6, 512)
    # Schaul et al. 2016: alpha 0.6, beta 0.4 -> 1 over the whole run, a quarter of Double DQN's step size.
    flags = payload['flags']
    assert flags['priority_exponent'] == 0.5 and flags['learning_rate'] == 6.25e-5  # the Pong preset's (Tianshou's Rainbow)
    assert flags['importance_sampling_exponent_decay_step'] == 2_000_000  # The Pong preset's env steps.
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_eval_agent_refuses_another_agents_checkpoint(pong, tmp_path):
    runs.check_pong_checkpoint_refused(AGENT, runs.Agent('DoubleDQN', 'deep_rl_zoo.double_dqn'), pong, tmp_path)


def test_zero_priority_eps_gives_one_error_line(tmp_path):
    result = run_module(AGENT.module('run_classic'), '--priority_eps=0', '--num_iterations=1', '--checkpoint_dir=ck', cwd=str(tmp_path))
    assert runs.failed_cleanly(result) == ['error: priority_eps must be a finite number > 0 (so no transition is starved), got 0.0']
    assert not (tmp_path / 'ck').exists()
