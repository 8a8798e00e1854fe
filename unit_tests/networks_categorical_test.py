"""Noisy linear layers, the dueling aggregation and the C51 / Rainbow networks (deep_rl_zoo.networks.value)."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.testing import assert_close

from deep_rl_zoo.networks.value import (
    CategoricalQNetwork,
    NoisyLinear,
    RainbowQNetwork,
    categorical_support,
    dueling_aggregate,
    expected_value,
    mlp_c51_network,
    mlp_rainbow_network,
    nature_cnn_c51_network,
    nature_cnn_rainbow_network,
    noise_scale,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


SUPPORT = categorical_support(-10.0, 10.0, 51)

# ------------------------------------------------------------------------------------------------ NoisyLinear


def test_noise_scale_is_signed_square_root():
    assert_close(noise_scale(torch.tensor([-4.0, -0.25, 0.0, 1.0, 9.0])), torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0]))


def test_noisy_linear_initialisation():
    layer = NoisyLinear(16, 3, sigma_0=0.5)
    # mu ~ U[-1/sqrt(16), 1/sqrt(16)] = U[-0.25, 0.25]; sigma = 0.5 / sqrt(16) = 0.125 everywhere.
    for mu in (layer.weight_mu, layer.bias_mu):
        assert mu.abs().max() <= 0.25 and mu.std() > 0
    assert torch.equal(layer.weight_sigma, torch.full((3, 16), 0.125))
    assert torch.equal(layer.bias_sigma, torch.full((3,), 0.125))
    assert {name for name, _ in layer.named_parameters()} == {'weight_mu', 'weight_sigma', 'bias_mu', 'bias_sigma'}


def test_noisy_linear_output_matches_factorised_noise_drawn_by_hand():
    layer = NoisyLinear(4, 3, generator=torch.Generator().manual_seed(7))
    x = torch.randn(5, 4)
    y = layer(x)
    # The layer draws eps_in [4] then eps_out [3] in one call of randn(7) from its generator.
    eps = torch.randn(7, generator=torch.Generator().manual_seed(7)).double().numpy()
    f_in, f_out = np.sign(eps[:4]) * np.sqrt(np.abs(eps[:4])), np.sign(eps[4:]) * np.sqrt(np.abs(eps[4:]))
    weight = layer.weight_mu.detach().double().numpy() + layer.weight_sigma.detach().double().numpy() * np.outer(f_out, f_in)
    bias = layer.bias_mu.detach().double().numpy() + layer.bias_sigma.detach().double().numpy() * f_out
    np.testing.assert_allclose(y.detach().numpy(), x.double().numpy() @ weight.T + bias, rtol=1e-5, atol=1e-6)


def test_noisy_linear_draws_fresh_noise_each_call_the_same_for_the_whole_batch():
    layer = NoisyLinear(3, 2)
    x = torch.tensor([[1.0, -2.0, 0.5]])
    first, second = layer(x), layer(x)
    assert not torch.equal(first, second)
    # One noise sample per call: the output is affine in x across the batch, y(2x) - y(0) = 2 (y(x) - y(0)).
    y = layer(torch.cat([x, 2 * x, torch.zeros_like(x), x]))
    assert_close(y[1] - y[2], 2 * (y[0] - y[2]))
    assert torch.equal(y[0], y[3])


def test_noisy_linear_is_deterministic_with_a_seeded_generator():
    first = NoisyLinear(3, 2, generator=torch.Generator().manual_seed(3))
    second = NoisyLinear(3, 2, generator=torch.Generator().manual_seed(3))
    second.load_state_dict(first.state_dict())
    x = torch.randn(4, 3)
    for _ in range(3):
        assert torch.equal(first(x), second(x))


def test_noisy_linear_stays_noisy_in_eval_mode():
    layer = NoisyLinear(3, 2).eval()
    x = torch.ones(1, 3)
    assert not torch.equal(layer(x), layer(x))


def test_noisy_linear_with_sigma_zero_is_the_mean_linear_layer():
    layer = NoisyLinear(3, 2, sigma_0=0.0)
    x = torch.randn(4, 3)
    assert_close(layer(x), x @ layer.weight_mu.T + layer.bias_mu)


def test_noisy_linear_noise_statistics():
    # mu = 0 and sigma = 1: with input 0 the output is the bias noise f(eps_out); with input e_j (one-hot) it adds
    # f(eps_out) f(eps_in_j). For eps ~ N(0, 1): E f(eps) = 0 and E f(eps)^2 = E|eps| = sqrt(2 / pi).
    layer = NoisyLinear(2, 1000, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        layer.weight_mu.zero_(), layer.bias_mu.zero_(), layer.weight_sigma.fill_(1.0), layer.bias_sigma.fill_(1.0)
        bias_noise = torch.cat([layer(torch.zeros(1, 2)) for _ in range(50)])  # 50,000 draws of f(eps)
        outputs = torch.cat([layer(torch.tensor([[1.0, 0.0]])) for _ in range(50)])
    assert abs(bias_noise.mean().item()) < 0.02
    assert bias_noise.var().item() == pytest.approx(math.sqrt(2 / math.pi), rel=0.03)
    # y = f(eps_out) (1 + f(eps_in_0)): variance E f^2 * E (1 + f)^2 = sqrt(2/pi) * (1 + sqrt(2/pi)).
    assert outputs.var().item() == pytest.approx(math.sqrt(2 / math.pi) * (1 + math.sqrt(2 / math.pi)), rel=0.15)


def test_noisy_linear_gradient_reaches_mu_and_sigma():
    layer = NoisyLinear(3, 2, generator=torch.Generator().manual_seed(1))
    x = torch.tensor([[1.0, 2.0, -1.0]])
    layer(x).sum().backward()
    eps = torch.randn(5, generator=torch.Generator().manual_seed(1))
    f_in, f_out = noise_scale(eps[:3]), noise_scale(eps[3:])
    # d sum(y) / d W = 1 x^T for every output row; d / d sigma_w = that times eps_w = f_out f_in^T.
    assert_close(layer.weight_mu.grad, x.expand(2, 3))
    assert_close(layer.weight_sigma.grad, x.expand(2, 3) * torch.outer(f_out, f_in))
    assert_close(layer.bias_mu.grad, torch.ones(2))
    assert_close(layer.bias_sigma.grad, f_out)


@pytest.mark.parametrize('args', [(0, 2, 0.5), (2, 0, 0.5), (2, 2, -0.1)])
def test_noisy_linear_rejects_bad_sizes(args):
    with pytest.raises(ValueError, match='NoisyLinear needs positive sizes and sigma_0 >= 0'):
        NoisyLinear(*args)


# --------------------------------------------------------------------------------------------------- dueling


def test_dueling_aggregate_by_hand():
    # V = 5, A = [1, 2, 3] with mean 2: Q = 5 + A - 2 = [4, 5, 6].
    assert_close(dueling_aggregate(torch.tensor([[5.0]]), torch.tensor([[1.0, 2.0, 3.0]])), torch.tensor([[4.0, 5.0, 6.0]]))
    # Per atom: V = [1, 2]; A over 3 actions: atom 0 [1, 3, 2] (mean 2), atom 1 [0, 2, 4] (mean 2).
    value = torch.tensor([[[1.0, 2.0]]])
    advantages = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [2.0, 4.0]]])
    assert_close(dueling_aggregate(value, advantages), torch.tensor([[[0.0, 0.0], [2.0, 2.0], [1.0, 4.0]]]))


def test_dueling_aggregate_mean_over_actions_is_the_value():
    value, advantages = torch.randn(4, 1, 5), torch.randn(4, 3, 5)
    assert_close(dueling_aggregate(value, advantages).mean(dim=1, keepdim=True), value)


# ---------------------------------------------------------------------------------------- support, expectation


def test_categorical_support():
    assert_close(categorical_support(-1.0, 1.0, 5), torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]))
    assert len(SUPPORT) == 51 and SUPPORT[25] == 0.0


@pytest.mark.parametrize('v_min, v_max, num_atoms', [(1.0, 1.0, 51), (2.0, -2.0, 51), (-1.0, 1.0, 1)])
def test_categorical_support_rejects_bad_input(v_min, v_max, num_atoms):
    with pytest.raises(ValueError, match='v_min < v_max and num_atoms >= 2'):
        categorical_support(v_min, v_max, num_atoms)


def test_expected_value_by_hand():
    # probs [0.2, 0.3, 0.5] on [0, 1, 2]: 0.3 + 1.0 = 1.3; uniform on [-1, 0, 4]: 1.
    logits = torch.tensor([[0.2, 0.3, 0.5], [1.0, 1.0, 1.0]]).log()
    assert_close(expected_value(logits[:1], torch.tensor([0.0, 1.0, 2.0])), torch.tensor([1.3]))
    assert_close(expected_value(logits[1:], torch.tensor([-1.0, 0.0, 4.0])), torch.tensor([1.0]))


# ------------------------------------------------------------------------------------------------- networks


def test_c51_network_shapes_and_q_is_the_expectation():
    network = mlp_c51_network(4, 2, SUPPORT)
    observation = torch.randn(5, 4)
    logits = network.logits(observation)
    assert logits.shape == (5, 2, 51)
    assert network(observation).shape == (5, 2)
    assert_close(network(observation), (torch.softmax(logits, dim=2) * SUPPORT).sum(dim=2))
    assert torch.equal(network.state_dict()['support'], SUPPORT)  # the support travels with checkpoints


def test_c51_atari_network_shapes():
    network = nature_cnn_c51_network(6, SUPPORT)
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    assert network.logits(frames).shape == (2, 6, 51) and network(frames).shape == (2, 6)
    assert tuple(network.head.weight.shape) == (6 * 51, 512)


def test_rainbow_network_shapes_noise_and_gradients():
    network = mlp_rainbow_network(4, 3, SUPPORT, sigma_0=0.5, hidden_size=32)
    observation = torch.randn(5, 4)
    assert network.logits(observation).shape == (5, 3, 51) and network(observation).shape == (5, 3)
    assert not torch.equal(network(observation), network(observation))  # fresh noise per forward call
    assert sum(isinstance(module, NoisyLinear) for module in network.modules()) == 4  # 2 per stream
    network.logits(observation).sum().backward()
    assert all(parameter.grad is not None for parameter in network.parameters())
    assert torch.equal(network.state_dict()['support'], SUPPORT)


def test_rainbow_network_without_noise_is_a_dueling_c51():
    network = mlp_rainbow_network(4, 3, SUPPORT, sigma_0=0.0, hidden_size=32)
    observation = torch.randn(5, 4)
    logits = network.logits(observation)
    assert torch.equal(logits, network.logits(observation))
    assert_close(network(observation), expected_value(logits, SUPPORT))
    features = network.torso(observation)
    value = network.value_stream(features).view(5, 1, 51)
    assert_close(logits.mean(dim=1, keepdim=True), value)  # dueling: the logits' mean over actions is V


def test_rainbow_atari_network_has_noisy_512_unit_streams_on_the_nature_convolutions():
    network = nature_cnn_rainbow_network(6, SUPPORT, sigma_0=0.5)
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    assert network.logits(frames).shape == (2, 6, 51) and network(frames).shape == (2, 6)
    assert tuple(network.value_stream[0].weight_mu.shape) == (512, 3136)
    assert tuple(network.advantage_stream[2].weight_mu.shape) == (6 * 51, 512)
    assert not any(isinstance(module, nn.Linear) for module in network.modules())  # every dense layer is noisy


@pytest.mark.parametrize('network_class', [CategoricalQNetwork, RainbowQNetwork])
def test_categorical_networks_refuse_zero_actions(network_class):
    extra = (16,) if network_class is RainbowQNetwork else ()
    with pytest.raises(ValueError, match='num_actions must be >= 1'):
        network_class(nn.Linear(2, 2), 0, SUPPORT, *extra)
