"""Tests for REINFORCE, REINFORCE with baseline and actor-critic losses in deep_rl_zoo.policy_gradient.

Expected numbers are worked out by hand in the comments.
"""

import math

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import multistep, policy_gradient


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


# A three-step episode with probabilities [0.5, 0.5], [0.25, 0.75], [0.25, 0.75] and actions 1, 0, 1.
LOGITS = [[0.0, 0.0], [0.0, math.log(3.0)], [0.0, math.log(3.0)]]
ACTIONS = [1, 0, 1]
LOG_PI = [math.log(0.5), math.log(0.25), math.log(0.75)]
PI = [[0.5, 0.5], [0.25, 0.75], [0.25, 0.75]]


def episode_returns():
    # Rewards [1, 0, 2], gamma 0.5, the episode ends after the last step (discount 0 there):
    # G_2 = 2, G_1 = 0 + 0.5 * 2 = 1, G_0 = 1 + 0.5 * 1 = 1.5.
    return multistep.discounted_returns(tensor([1.0, 0.0, 2.0]), tensor([0.5, 0.5, 0.0]), 0.0)


def score_gradient(weights):
    """d(-log pi(a) w)/d logits = -w (onehot(a) - pi) for each step."""
    rows = []
    for action, probs, weight in zip(ACTIONS, PI, weights):
        onehot = [1.0 if i == action else 0.0 for i in range(2)]
        rows.append([-weight * (o - p) for o, p in zip(onehot, probs)])
    return tensor(rows)


def test_reinforce_is_the_policy_gradient_loss_of_the_returns():
    returns = episode_returns()
    assert_close(returns, tensor([1.5, 1.0, 2.0]))
    logits = tensor(LOGITS, requires_grad=True)
    returns.requires_grad_()  # to check that no gradient reaches the returns
    loss = policy_gradient.policy_gradient_loss(logits, torch.tensor(ACTIONS), returns)
    assert_close(loss, tensor([-lp * g for lp, g in zip(LOG_PI, [1.5, 1.0, 2.0])]))
    loss.sum().backward()
    assert_close(logits.grad, score_gradient([1.5, 1.0, 2.0]))
    assert returns.grad is None


def baseline_inputs():
    return (
        tensor(LOGITS, requires_grad=True),
        torch.tensor(ACTIONS),
        episode_returns().requires_grad_(),
        tensor([1.0, 2.0, 0.5], requires_grad=True),
    )


@pytest.mark.parametrize('value_cost', [1.0, 0.5, 0.0])
def test_policy_gradient_with_baseline_values_and_gradients(value_cost):
    logits, actions, returns, values = baseline_inputs()
    output = policy_gradient.policy_gradient_with_baseline_loss(logits, actions, returns, values, value_cost)
    # advantage = G - V = [1.5 - 1, 1 - 2, 2 - 0.5] = [0.5, -1, 1.5]; value loss 0.5 (G - V)^2 = [0.125, 0.5, 1.125].
    advantage = [0.5, -1.0, 1.5]
    policy_loss = [-lp * a for lp, a in zip(LOG_PI, advantage)]
    value_loss = [0.125, 0.5, 1.125]
    assert_close(output.extra.advantage, tensor(advantage))
    assert_close(output.extra.policy_loss, tensor(policy_loss))
    assert_close(output.extra.value_loss, tensor(value_loss))
    assert_close(output.loss, tensor([p + value_cost * v for p, v in zip(policy_loss, value_loss)]))
    assert not any(x.requires_grad for x in output.extra)
    output.loss.sum().backward()
    # The policy sees the advantage as a constant weight ...
    assert_close(logits.grad, score_gradient(advantage))
    # ... and the baseline gets only the value loss's gradient value_cost * (V - G): had the advantage not been
    # detached in the policy term, V would also get +log pi(a) from it.
    assert_close(values.grad, value_cost * tensor([-0.5, 1.0, -1.5]))
    assert returns.grad is None


def test_policy_gradient_with_baseline_standardises_the_advantage_in_the_policy_term_only():
    logits, actions, returns, values = baseline_inputs()
    output = policy_gradient.policy_gradient_with_baseline_loss(logits, actions, returns, values, 0.5, normalized_advantage=True)
    # advantage [0.5, -1, 1.5]: mean 1/3, population std sqrt(((1/6)^2 + (4/3)^2 + (7/6)^2) / 3) = sqrt(19/18).
    standardised = [(a - 1 / 3) / math.sqrt(19 / 18) for a in (0.5, -1.0, 1.5)]
    assert_close(output.extra.advantage, tensor([0.5, -1.0, 1.5]))  # reported as it was
    assert_close(output.extra.policy_loss, tensor([-lp * a for lp, a in zip(LOG_PI, standardised)]))
    assert_close(output.extra.value_loss, tensor([0.125, 0.5, 1.125]))  # the baseline's regression is unchanged
    output.loss.sum().backward()
    assert_close(logits.grad, score_gradient(standardised))
    assert_close(values.grad, 0.5 * tensor([-0.5, 1.0, -1.5]))


def test_one_step_actor_critic_advantage_is_the_td_error():
    # r = [1, -1], d = [0.9, 0], V(s) = [2, 1], V(s') = [3, 5]:
    # G = r + d V(s') = [1 + 2.7, -1 + 0] = [3.7, -1]; advantage = TD error = [1.7, -2].
    returns = multistep.n_step_bootstrapped_returns(tensor([1.0, -1.0]), tensor([0.9, 0.0]), tensor([3.0, 5.0]), n=1)
    logits = tensor([[0.0, 0.0], [0.0, math.log(3.0)]], requires_grad=True)
    output = policy_gradient.policy_gradient_with_baseline_loss(logits, torch.tensor([0, 1]), returns, tensor([2.0, 1.0]))
    assert_close(output.extra.advantage, tensor([1.7, -2.0]))
    assert_close(output.extra.policy_loss, tensor([1.7 * math.log(2.0), 2.0 * math.log(0.75)]))
    assert_close(output.extra.value_loss, tensor([0.5 * 1.7**2, 2.0]))


@pytest.mark.parametrize(
    'change, message',
    [
        (dict(logits=tensor([0.0, 0.0, 0.0])), r'logits must have shape \[B, A\]'),
        (dict(returns=tensor([1.0, 2.0])), r'returns must have shape \[B\]=\(3,\) like logits'),
        (dict(returns=tensor([[1.0], [2.0], [3.0]])), r'returns must have shape \[B\]=\(3,\) like logits'),
        (dict(returns=torch.tensor([1, 2, 3])), 'returns must be a floating point'),
        (dict(values=tensor([1.0, 2.0])), 'values must have shape'),
        (dict(actions=torch.tensor([0, 2, 1])), r'actions must lie in \[0, 2\)'),
        (dict(actions=tensor([0.0, 1.0, 1.0])), 'actions must hold integer'),
        (dict(value_cost=-1.0), 'value_cost must be >= 0'),
    ],
)
def test_policy_gradient_with_baseline_rejects_bad_input(change, message):
    logits, actions, returns, values = baseline_inputs()
    kwargs = dict(logits=logits, actions=actions, returns=returns, values=values) | change
    with pytest.raises(ValueError, match=message):
        policy_gradient.policy_gradient_with_baseline_loss(**kwargs)
