"""REINFORCE with baseline end to end (subprocesses, real environments, tiny budgets): run_classic on CartPole,
eval_agent video, run_atari on Pong and eval_agent on it, bad flags. The runs and checks are REINFORCE's
(unit_tests/reinforce/runs.py)."""

import pytest

from unit_tests import value_agents
from unit_tests.reinforce import runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('REINFORCE_BASELINE', 'deep_rl_zoo.reinforce_baseline')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)


def test_run_classic(cartpole):
    payloads = runs.check_cartpole_run(AGENT, cartpole, {'loss', 'policy_loss', 'value_loss', 'entropy', 'update_steps'})
    network = payloads[0]['state']['network']
    assert 'value_head.weight' in network and 'value_torso.body.0.weight' in network  # separate value MLP


def test_eval_agent_on_cartpole_records_video(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong(pong):
    network = runs.check_pong_run(AGENT, pong)['state']['network']
    assert tuple(network['value_head.weight'].shape) == (1, 512)  # shares the Nature CNN torso


def test_eval_agent_on_pong_records_video(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_bad_flags(tmp_path):
    runs.check_bad_flags(AGENT, tmp_path)
