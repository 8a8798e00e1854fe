"""QR-DQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong, and one-line errors.
The runs and the checks every value-based agent shares are in unit_tests/value_agents.py."""

import pytest

from unit_tests import value_agents as runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('QRDQN', 'deep_rl_zoo.qr_dqn')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)  # the paper's 200 quantiles


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    assert 600 - 65 <= payload['counters']['learner_steps'] <= 600 - 64  # learn_interval 1 after 64 transitions
    assert payload['flags']['num_quantiles'] == 32 and payload['flags']['huber_param'] == 1.0
    assert tuple(payload['state']['network']['head.weight'].shape) == (32 * 2, 128)
    train = runs.cartpole_train_events(AGENT, directory)
    assert 'learner_statistics(learner_steps)/loss' in train.Tags()['scalars']


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    assert tuple(payload['state']['network']['head.weight'].shape) == (200 * 6, 512)  # N = 200 per action
    assert payload['flags']['learning_rate'] == 1e-4 and payload['flags']['adam_eps'] == 1e-8  # the Pong preset's: Tianshou's rate and eps
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_bad_flags_and_wrong_checkpoint_give_one_line(cartpole, tmp_path):
    runs.check_bad_flag_and_wrong_checkpoint(AGENT, '--num_quantiles=0', runs.Agent('IQN', 'deep_rl_zoo.iqn'), cartpole, tmp_path)
