"""REINFORCE with baseline's update on REINFORCE's hand-built episode (unit_tests/reinforce/agent_test.py), with
a linear value V(s) = v . s: the numbers are worked out by hand in the comments. Collection is REINFORCE's own,
tested there."""

import math

import numpy as np
import pytest
import torch

from deep_rl_zoo.reinforce_baseline.agent import ReinforceBaseline
from unit_tests.reinforce.agent_test import STATES, make_agent, play_episode


@pytest.mark.parametrize('truncated', [False, True])
def test_reinforce_baseline_update_by_hand(truncated):
    # V(s) = v . s with v = [1, -1]: V(s0) = 1, V(s1) = -1, V(s2) = 0, V(s3) = 2.
    # Terminated: G = [1.5, 1, 2], A = G - V = [0.5, 2, 2].
    # Truncated: the last reward becomes 2 + 0.5 * V(s3) = 3, G = [1.75, 1.5, 3], A = [0.75, 2.5, 3].
    # Value step: d/dv of 0.5 * mean_t 0.5 (G_t - V(s_t))^2 = -0.5 * mean_t A_t s_t.
    # Policy step: d loss / d W[0] = sum_t -A_t (onehot(a_t)[0] - 0.5) s_t / 3 = (0.5 A_0 s_0 - 0.5 A_1 s_1 + 0.5 A_2 s_2) / 3.
    advantage = [0.75, 2.5, 3.0] if truncated else [0.5, 2.0, 2.0]
    s = np.array(STATES)
    value_grad = -0.5 * (np.array(advantage)[:, None] * s).mean(axis=0)
    policy_grad0 = 0.5 * (advantage[0] * s[0] - advantage[1] * s[1] + advantage[2] * s[2]) / 3
    lr = 1.2
    # Written out: terminated v = [1.5, -0.2], W[0] = [-0.5, 0]; truncated v = [1.75, 0.1], W[0] = [-0.75, -0.1].
    expected_v = [1.75, 0.1] if truncated else [1.5, -0.2]
    expected_w0 = [-0.75, -0.1] if truncated else [-0.5, 0.0]
    np.testing.assert_allclose(np.array([1.0, -1.0]) - lr * value_grad, expected_v, atol=1e-12)
    np.testing.assert_allclose(-lr * policy_grad0, expected_w0, atol=1e-12)

    agent = make_agent(ReinforceBaseline, value_weight=[1.0, -1.0], lr=lr, value_coef=0.5)
    play_episode(agent, truncated)
    assert agent.learner_steps == 1
    torch.testing.assert_close(agent.online_network.value_weight.detach(), torch.tensor(expected_v))
    torch.testing.assert_close(agent.online_network.weight.detach(), torch.tensor([expected_w0, [-w for w in expected_w0]]))
    statistics = agent.learner_statistics()
    value_loss = float(np.mean(0.5 * np.square(advantage)))
    policy_loss = math.log(2.0) * float(np.mean(advantage))
    assert statistics['value_loss'] == pytest.approx(value_loss, rel=1e-6)
    assert statistics['policy_loss'] == pytest.approx(policy_loss, rel=1e-6)
    assert statistics['loss'] == pytest.approx(policy_loss + 0.5 * value_loss, rel=1e-6)


def test_baseline_normalized_advantages_keep_the_value_loss():
    # Terminated episode of the test above: A = [0.5, 2, 2] has mean 1.5 and std sqrt(0.5), so the policy sees
    # [-sqrt(2), sqrt(0.5), sqrt(0.5)] (mean 0: policy loss 0 at pi = 0.5) while V still regresses on G.
    advantage = np.array([0.5, 2.0, 2.0])
    normalized = (advantage - advantage.mean()) / advantage.std()
    agent = make_agent(ReinforceBaseline, value_weight=[1.0, -1.0], normalize_advantages=True, lr=1.2, value_coef=0.5)
    play_episode(agent)
    statistics = agent.learner_statistics()
    np.testing.assert_allclose(normalized, [-math.sqrt(2.0), math.sqrt(0.5), math.sqrt(0.5)])
    assert statistics['policy_loss'] == pytest.approx(0.0, abs=1e-6)
    assert statistics['value_loss'] == pytest.approx(float(np.mean(0.5 * advantage**2)), rel=1e-6)
    s = np.array(STATES)
    value_grad = -0.5 * (advantage[:, None] * s).mean(axis=0)  # the value step is unchanged by normalisation
    expected_v = torch.tensor(np.array([1.0, -1.0]) - 1.2 * value_grad, dtype=torch.float32)
    torch.testing.assert_close(agent.online_network.value_weight.detach(), expected_v)
