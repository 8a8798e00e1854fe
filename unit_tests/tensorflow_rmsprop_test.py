"""`types.TensorflowRmsprop` (--optimizer=rmsprop_tf): RMSProp as TensorFlow 1 computes it, with exact numbers; its
first steps against PyTorch's RMSprop; its state in a checkpoint; `rmsprop_or_adam` builds it (A2C and IMPALA)."""

import math

import pytest
import torch
from torch import nn

from deep_rl_zoo.types import TensorflowRmsprop, rmsprop_or_adam


def two_steps(optimizer_class, **kwargs):
    weight = nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    optimizer = optimizer_class([weight], **kwargs)
    for gradient in ([0.5, 0.1], [-0.25, 0.0]):
        weight.grad = torch.tensor(gradient, dtype=torch.float64)
        optimizer.step()
    return weight.detach().tolist(), optimizer


def test_two_steps_have_tensorflows_numbers():
    weights, optimizer = two_steps(TensorflowRmsprop, lr=0.1, alpha=0.9, eps=0.01)
    mean_square_1 = [0.9 + 0.1 * 0.25, 0.9 + 0.1 * 0.01]  # from 1, not 0
    after_1 = [1.0 - 0.1 * 0.5 / math.sqrt(mean_square_1[0] + 0.01), -2.0 - 0.1 * 0.1 / math.sqrt(mean_square_1[1] + 0.01)]
    mean_square_2 = [0.9 * mean_square_1[0] + 0.1 * 0.0625, 0.9 * mean_square_1[1]]
    after_2 = [after_1[0] + 0.1 * 0.25 / math.sqrt(mean_square_2[0] + 0.01), after_1[1]]
    assert weights == pytest.approx(after_2, abs=1e-15)
    assert weights == pytest.approx([0.97542750, -2.01047709], abs=1e-8)  # by hand
    assert optimizer.state[optimizer.param_groups[0]['params'][0]]['square_avg'].tolist() == pytest.approx(mean_square_2, abs=1e-15)


def test_its_first_step_is_about_lr_g_where_pytorchs_is_about_ten_lr():
    """A gradient of 0.01 at lr 1e-3, alpha 0.99, eps 1e-5: TensorFlow's mean square is 0.99 + 0.01 g^2 after it,
    PyTorch's 0.01 g^2 (so its step is about lr / (sqrt(0.01) + eps / |g|), 985x TensorFlow's here)."""
    steps = {}
    for optimizer_class in (TensorflowRmsprop, torch.optim.RMSprop):
        weight = nn.Parameter(torch.tensor([0.0], dtype=torch.float64))
        weight.grad = torch.tensor([0.01], dtype=torch.float64)
        optimizer_class([weight], lr=1e-3, alpha=0.99, eps=1e-5).step()
        steps[optimizer_class] = weight.item()
    assert steps[TensorflowRmsprop] == pytest.approx(-1e-3 * 0.01 / math.sqrt(0.99 + 0.01 * 1e-4 + 1e-5), rel=1e-12)
    assert steps[torch.optim.RMSprop] == pytest.approx(-1e-3 * 0.01 / (math.sqrt(0.01 * 1e-4) + 1e-5), rel=1e-12)
    assert steps[torch.optim.RMSprop] / steps[TensorflowRmsprop] == pytest.approx(985.14, rel=1e-4)


def test_its_state_survives_a_state_dict_round_trip():
    _, optimizer = two_steps(TensorflowRmsprop, lr=0.1, alpha=0.9, eps=0.01)
    weight = optimizer.param_groups[0]['params'][0]
    restored = TensorflowRmsprop([weight], lr=0.1, alpha=0.9, eps=0.01)
    restored.load_state_dict(optimizer.state_dict())
    assert torch.equal(restored.state[weight]['square_avg'], optimizer.state[weight]['square_avg'])


def test_rmsprop_or_adam_builds_each_and_refuses_others():
    network = nn.Linear(2, 1)
    assert isinstance(rmsprop_or_adam(network, 'rmsprop_tf', 7e-4, 0.99, 1e-5), TensorflowRmsprop)
    assert type(rmsprop_or_adam(network, 'rmsprop', 7e-4, 0.99, 1e-5)) is torch.optim.RMSprop
    assert type(rmsprop_or_adam(network, 'adam', 7e-4, 0.99, 1e-5)) is torch.optim.Adam
    with pytest.raises(ValueError, match=r"^optimizer must be rmsprop, rmsprop_tf or adam, got 'sgd'$"):
        rmsprop_or_adam(network, 'sgd', 7e-4, 0.99, 1e-5)


def test_a_closure_is_refused_with_a_clear_error():
    weight = nn.Parameter(torch.zeros(1))
    with pytest.raises(ValueError, match=r'^TensorflowRmsprop.step takes no closure'):
        TensorflowRmsprop([weight], lr=0.1).step(lambda: torch.zeros(()))
