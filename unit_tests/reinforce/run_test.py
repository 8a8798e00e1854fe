"""REINFORCE end to end (subprocesses, real environments, tiny budgets): run_classic on CartPole, eval_agent video,
run_atari on Pong and eval_agent on it, bad flags. The runs and checks are in unit_tests/reinforce/runs.py."""

import pytest

from unit_tests import value_agents
from unit_tests.reinforce import runs

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('REINFORCE', 'deep_rl_zoo.reinforce')
BASELINE = value_agents.Agent('REINFORCE_BASELINE', 'deep_rl_zoo.reinforce_baseline')
cartpole = runs.cartpole_fixture(AGENT)
pong = runs.pong_fixture(AGENT)


def test_run_classic(cartpole):
    payloads = runs.check_cartpole_run(AGENT, cartpole, {'loss', 'policy_loss', 'entropy', 'update_steps'})
    assert 'value_head.weight' not in payloads[0]['state']['network']  # a policy without a value head


def test_eval_agent_on_cartpole_records_video(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_pong(pong):
    runs.check_pong_run(AGENT, pong)


def test_eval_agent_on_pong_records_video(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_bad_flags_and_another_agents_checkpoint(pong, tmp_path):
    runs.check_bad_flags(AGENT, tmp_path)
    value_agents.check_pong_checkpoint_refused(AGENT, BASELINE, pong, tmp_path)
