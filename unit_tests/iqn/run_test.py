"""IQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong, and one-line errors.
The runs and the checks every value-based agent shares are in unit_tests/value_agents.py."""

import pytest

from unit_tests import value_agents as runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('IQN', 'deep_rl_zoo.iqn')
cartpole = runs.cartpole_fixture(AGENT)
# Fewer tau samples and a smaller batch than the paper's keep Pong quick on a CPU.
pong = runs.pong_fixture(AGENT, '--batch_size=8', '--tau_samples_s_tm1=8', '--tau_samples_s_t=8', '--tau_samples_policy=8')


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    assert 600 - 65 <= payload['counters']['learner_steps'] <= 600 - 64  # learn_interval 1 after 64 transitions
    flags = payload['flags']
    assert (flags['tau_samples_s_tm1'], flags['tau_samples_s_t'], flags['tau_samples_policy'], flags['tau_embed_dim']) == (8, 8, 8, 64)
    network = payload['state']['network']
    assert tuple(network['tau_embedding.linear.weight'].shape) == (64, 64)  # n = 64 cosines -> psi's 64 units
    assert tuple(network['head.2.weight'].shape) == (2, 64)
    train = runs.cartpole_train_events(AGENT, directory)
    assert 'learner_statistics(learner_steps)/loss' in train.Tags()['scalars']


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_and_eval_agent_video(pong, tmp_path):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    network = payload['state']['network']
    assert tuple(network['tau_embedding.linear.weight'].shape) == (3136, 64)  # psi: Nature DQN's conv features
    assert tuple(network['head.0.weight'].shape) == (512, 3136) and tuple(network['head.2.weight'].shape) == (6, 512)
    assert payload['flags']['tau_embed_dim'] == 64 and payload['flags']['huber_param'] == 1.0
    assert payload['flags']['learning_rate'] == 1e-4 and payload['flags']['adam_eps'] == 1e-8  # the Pong preset's: Tianshou's rate and eps
    runs.check_pong_eval(AGENT, pong, tmp_path)


def test_bad_flags_and_wrong_checkpoint_give_one_line(cartpole, tmp_path):
    runs.check_bad_flag_and_wrong_checkpoint(AGENT, '--tau_samples_policy=0', runs.Agent('QRDQN', 'deep_rl_zoo.qr_dqn'), cartpole, tmp_path)
