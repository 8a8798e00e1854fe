"""Categorical projection and C51 Q-learning (deep_rl_zoo.value_learning): numbers worked out by hand in comments."""

import math

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import value_learning


def tensor(values, requires_grad=False):
    return torch.tensor(values, dtype=torch.float64, requires_grad=requires_grad)


SUPPORT = tensor([0.0, 1.0, 2.0])

# ------------------------------------------------------------------------------------ categorical_l2_project


@pytest.mark.parametrize(
    'z_p, probs, expected',
    [
        # Atoms on support points keep their mass there.
        ([[0.0, 1.0, 2.0]], [[0.2, 0.3, 0.5]], [[0.2, 0.3, 0.5]]),
        # 0.5 splits 0.4 evenly between 0 and 1; 1.25 gives 3/4 of 0.6 to 1 and 1/4 of it to 2.
        ([[0.5, 1.25]], [[0.4, 0.6]], [[0.2, 0.65, 0.15]]),
        # Beyond the ends: clipped to 0 and 2.
        ([[-3.0, 7.0]], [[0.3, 0.7]], [[0.3, 0.0, 0.7]]),
        # A terminal step (discount 0) collapses every atom to r = 1.5: half to 1, half to 2.
        ([[1.5, 1.5, 1.5]], [[0.2, 0.3, 0.5]], [[0.0, 0.5, 0.5]]),
        # Two rows at once; r = -0.5 with discount 0.5: atoms -0.5 (clipped to 0), 0, 0.5 -> [0.75, 0.25, 0].
        (
            [[0.0, 1.0, 2.0], [-0.5, 0.0, 0.5]],
            [[1.0, 0.0, 0.0], [0.25, 0.25, 0.5]],
            [[1.0, 0.0, 0.0], [0.75, 0.25, 0.0]],
        ),
    ],
)
def test_categorical_l2_project_by_hand(z_p, probs, expected):
    assert_close(value_learning.categorical_l2_project(tensor(z_p), tensor(probs), SUPPORT), tensor(expected))


def test_categorical_l2_project_uneven_support():
    # Support [0, 1, 3]: 2 lies halfway between 1 and 3; 0.25 gives 3/4 to 0 and 1/4 to 1; 3 stays on 3.
    projected = value_learning.categorical_l2_project(tensor([[2.0, 0.25, 3.0]]), tensor([[0.4, 0.4, 0.2]]), tensor([0.0, 1.0, 3.0]))
    assert_close(projected, tensor([[0.3, 0.1 + 0.2, 0.2 + 0.2]]))


def test_categorical_l2_project_keeps_mass_and_mean_inside_the_support():
    generator = torch.Generator().manual_seed(0)
    support = torch.linspace(-10, 10, 51, dtype=torch.float64)
    probs = torch.softmax(torch.randn(8, 51, generator=generator, dtype=torch.float64), dim=1)
    z_p = 0.3 + 0.9 * support.expand(8, 51)  # stays inside [-10, 10]: the projection keeps the mean exactly
    projected = value_learning.categorical_l2_project(z_p, probs, support)
    assert_close(projected.sum(dim=1), torch.ones(8, dtype=torch.float64))
    assert_close((projected * support).sum(dim=1), (probs * z_p).sum(dim=1))
    assert (projected >= 0).all()


@pytest.mark.parametrize(
    'z_p, probs, z_q, message',
    [
        ([[0.0, 1.0]], [[1.0]], [0.0, 1.0], r'z_p and probs must both have shape \[B, K\]'),
        ([0.0, 1.0], [0.5, 0.5], [0.0, 1.0], r'z_p and probs must both have shape \[B, K\]'),
        ([[0.0]], [[1.0]], [0.0], r'z_q must have shape \[N\] with N >= 2'),
        ([[0.0]], [[1.0]], [0.0, 1.0, 1.0], 'z_q must be strictly increasing'),
        ([[0.0]], [[1.0]], [1.0, 0.0], 'z_q must be strictly increasing'),
    ],
)
def test_categorical_l2_project_rejects_bad_input(z_p, probs, z_q, message):
    with pytest.raises(ValueError, match=message):
        value_learning.categorical_l2_project(tensor(z_p), tensor(probs), tensor(z_q))


# ------------------------------------------------------------------------------------ categorical_q_learning

# Two transitions, two actions, support [0, 1, 2]; logits are log-probabilities so softmax gives them back.
PROBS_T = [
    [[0.6, 0.2, 0.2], [0.2, 0.2, 0.6]],  # Q = [0.6, 1.4]: greedy action 1
    [[0.25, 0.25, 0.5], [0.5, 0.25, 0.25]],  # Q = [1.25, 0.75]
]
PROBS_TM1 = [
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]],  # Q = [0.75, 1.0]
    [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]],  # Q = [0.75, 1.25]
]
A_TM1 = [0, 1]
R_T = [0.5, 3.0]
DISCOUNT_T = [0.5, 0.0]  # the second transition ends its episode


def categorical_inputs():
    return (
        tensor(PROBS_TM1).log().requires_grad_(),
        torch.tensor(A_TM1),
        tensor(R_T),
        tensor(DISCOUNT_T),
        tensor(PROBS_T).log().requires_grad_(),
        SUPPORT,
    )


def test_categorical_q_learning_targets_and_losses():
    logits_tm1, a_tm1, r_t, discount_t, logits_t, support = categorical_inputs()
    output = value_learning.categorical_q_learning(logits_tm1, a_tm1, r_t, discount_t, logits_t, support)
    # Row 0: greedy next action 1, atoms 0.5 + 0.5 * [0, 1, 2] = [0.5, 1, 1.5] with probs [0.2, 0.2, 0.6]:
    # 0.5 -> 0.1 to 0 and 0.1 to 1; 1 -> 0.2 to 1; 1.5 -> 0.3 to 1 and 0.3 to 2.
    # Row 1: terminal, every atom at r = 3, clipped to 2.
    assert_close(output.extra.target, tensor([[0.1, 0.6, 0.3], [0.0, 0.0, 1.0]]))
    # Cross-entropy with the online distribution of a_tm1: row 0 with [0.5, 0.25, 0.25]:
    # -(0.1 ln 0.5 + 0.9 ln 0.25) = 1.9 ln 2; row 1 with [0.25, 0.25, 0.5]: -ln 0.5 = ln 2.
    ln2 = math.log(2.0)
    assert_close(output.loss, tensor([1.9 * ln2, ln2]))
    entropy_0 = -(0.1 * math.log(0.1) + 0.6 * math.log(0.6) + 0.3 * math.log(0.3))
    assert_close(output.extra.kl_divergence, tensor([1.9 * ln2 - entropy_0, ln2]))
    assert_close(output.extra.q_tm1, tensor([[0.75, 1.0], [0.75, 1.25]]))
    assert_close(output.extra.q_t, tensor([[0.6, 1.4], [1.25, 0.75]]))


def test_categorical_q_learning_with_selector_is_double_q():
    logits_tm1, a_tm1, r_t, discount_t, logits_t, support = categorical_inputs()
    selector = tensor([[1.0, 0.0], [0.0, 1.0]])  # picks action 0 in row 0, against the target's own argmax (1)
    output = value_learning.categorical_q_learning(logits_tm1, a_tm1, r_t, discount_t, logits_t, support, q_t_selector=selector)
    # Row 0: atoms [0.5, 1, 1.5] with probs [0.6, 0.2, 0.2]: 0.5 -> 0.3/0.3, 1 -> 0.2, 1.5 -> 0.1/0.1.
    assert_close(output.extra.target, tensor([[0.3, 0.6, 0.1], [0.0, 0.0, 1.0]]))
    # -(0.3 ln 0.5 + 0.7 ln 0.25) = 1.7 ln 2; row 1 is terminal, so its selected action does not matter.
    assert_close(output.loss, tensor([1.7 * math.log(2.0), math.log(2.0)]))


def test_categorical_q_learning_gradient_is_softmax_minus_target_on_taken_action_only():
    logits_tm1, a_tm1, r_t, discount_t, logits_t, support = categorical_inputs()
    value_learning.categorical_q_learning(logits_tm1, a_tm1, r_t, discount_t, logits_t, support).loss.sum().backward()
    expected = tensor(
        [
            [[0.5 - 0.1, 0.25 - 0.6, 0.25 - 0.3], [0.0, 0.0, 0.0]],
            [[0.0, 0.0, 0.0], [0.25, 0.25, 0.5 - 1.0]],
        ]
    )
    assert_close(logits_tm1.grad, expected)
    assert logits_t.grad is None  # the target takes no gradient


def test_categorical_q_learning_float32_and_int32_actions():
    logits_tm1, a_tm1, r_t, discount_t, logits_t, support = (x.detach().float() for x in categorical_inputs())
    output = value_learning.categorical_q_learning(logits_tm1, a_tm1.int(), r_t, discount_t, logits_t, support)
    assert output.loss.dtype == torch.float32 and output.loss.shape == (2,)
    assert_close(output.loss, torch.tensor([1.9, 1.0]) * math.log(2.0))


@pytest.mark.parametrize(
    'change, message',
    [
        (lambda i: {**i, 'logits_t': i['logits_t'][:, :1]}, r'logits_tm1 and logits_t must have shape \[B, A, N\]'),
        (lambda i: {**i, 'support': i['support'][:2]}, r'support \[N\]'),
        (lambda i: {**i, 'logits_tm1': i['logits_tm1'][:, :, 0], 'logits_t': i['logits_t'][:, :, 0]}, r'\[B, A, N\]'),
        (lambda i: {**i, 'a_tm1': torch.tensor([0, 2])}, r'a_tm1 must lie in \[0, 2\)'),
        (lambda i: {**i, 'a_tm1': torch.tensor([0.0, 1.0])}, 'a_tm1 must hold integer action indices'),
        (lambda i: {**i, 'r_t': i['r_t'][:1]}, r'r_t must have shape \[B\]'),
        (lambda i: {**i, 'discount_t': i['discount_t'][:1]}, r'discount_t must have shape \[B\]'),
        (lambda i: {**i, 'q_t_selector': torch.zeros(2, 3, dtype=torch.float64)}, r'q_t_selector must have shape \[B, A\]'),
    ],
)
def test_categorical_q_learning_rejects_bad_input(change, message):
    names = ('logits_tm1', 'a_tm1', 'r_t', 'discount_t', 'logits_t', 'support')
    inputs = change(dict(zip(names, categorical_inputs())))
    with pytest.raises(ValueError, match=message):
        value_learning.categorical_q_learning(**inputs)
