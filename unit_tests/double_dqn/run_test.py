"""Double DQN end to end, run as a user runs it: its CartPole and Pong runs with the checks every value-based agent
shares (unit_tests/value_agents.py), plus what is its own: uniform replay and van Hasselt et al.'s Atari settings.
Resume, Breakout and the flag plumbing of every replay agent are tested with DQN (unit_tests/dqn/run_test.py)."""

import pytest

from unit_tests import value_agents as runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('DoubleDQN', 'deep_rl_zoo.double_dqn')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)


def test_run_classic_checkpoints_and_results_csv(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    assert 600 - 65 <= payload['state']['learner_steps'] <= 600 - 64  # Every step once replay holds 64.
    assert 'priority_exponent' not in payload['flags']  # Uniform replay: no prioritized replay flags.
    rows = runs.read_csv(directory / 'ck' / AGENT.file_name(runs.CARTPOLE, 'results'))
    assert all(int(row['eval_num_episodes']) >= 1 for row in rows)


def test_run_classic_tensorboard_events(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    train = runs.cartpole_train_events(AGENT, directory)
    assert set(train.Tags()['scalars']) == runs.EPSILON_GREEDY_TAGS


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    assert tuple(payload['state']['network']['head.weight'].shape) == (6, 512)
    # The tuned settings of van Hasselt et al. 2016: targets refreshed 3x less often than DQN's, epsilon 0.01 / 0.001.
    assert payload['flags']['target_network_update_interval'] == 500  # the Pong preset's (the paper's 7,500 with --preset=none)
    assert payload['flags']['exploration_epsilon_end_value'] == 0.05 and payload['flags']['eval_exploration_epsilon'] == 0.001
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_eval_agent_refuses_another_agents_checkpoint(pong, tmp_path):
    runs.check_pong_checkpoint_refused(AGENT, runs.Agent('PrioritizedDQN', 'deep_rl_zoo.prioritized_dqn'), pong, tmp_path)
