"""Rainbow end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with
TensorBoard and the results CSV, eval_agent videos on CartPole and Pong, run_atari on Pong. The runs and the
checks every value-based agent shares are in unit_tests/value_agents.py."""

import pytest

from unit_tests import value_agents as runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('Rainbow', 'deep_rl_zoo.rainbow')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)  # the paper's network and hyperparameters


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    payload = runs.cartpole_checkpoint(AGENT, directory)
    # learn_interval 1 once 64 3-step transitions are sampleable (after 66 or 67 steps).
    assert 600 - 67 <= payload['counters']['learner_steps'] <= 600 - 66
    flags = payload['flags']
    assert flags['n_step'] == 3 and flags['priority_exponent'] == 0.5 and flags['noisy_sigma'] == 0.5
    assert flags['exploration_epsilon_begin_value'] == flags['exploration_epsilon_end_value'] == flags['eval_exploration_epsilon'] == 0.0
    network = payload['state']['network']
    assert tuple(network['value_stream.2.weight_mu'].shape) == (51, 128)
    assert tuple(network['advantage_stream.2.weight_sigma'].shape) == (2 * 51, 128)
    train = runs.cartpole_train_events(AGENT, directory)
    assert {
        'learner_statistics(learner_steps)/loss',
        'agent_statistics(env_steps)/importance_sampling_exponent',
        'agent_statistics(env_steps)/noisy_weight_sigma',
        'agent_statistics(env_steps)/exploration_epsilon',
    } <= set(train.Tags()['scalars'])
    epsilon = [event.value for event in train.Scalars('agent_statistics(env_steps)/exploration_epsilon')]
    assert epsilon == [0.0, 0.0]  # exploration comes from the noisy layers only


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong_checkpoint(pong):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    flags = payload['flags']
    assert (flags['learning_rate'], flags['adam_eps'], flags['n_step'], flags['target_network_update_interval']) == (6.25e-5, 1e-8, 3, 500)  # the Pong preset's: Tianshou's rate, eps and target interval
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['value_stream.0.weight_mu'].shape) == (512, 3136)  # noisy 512-unit layer on the convolutions
    assert tuple(network['advantage_stream.2.weight_mu'].shape) == (6 * 51, 512)


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    runs.check_pong_eval(AGENT, pong, tmp_path)
