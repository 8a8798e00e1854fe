"""Quantile networks: QR-DQN's midpoints and output layout, IQN's cosine embedding (exact numbers), the
psi(s) * phi(tau) combination, Q-values as quantile means, Atari shapes and bad input."""

import math

import pytest
import torch
from torch import nn

from deep_rl_zoo.networks.common import NatureCnnTorso
from deep_rl_zoo.networks.value import (
    CosineTauEmbedding,
    ImplicitQuantileNetwork,
    QuantileQNetwork,
    cosine_features,
    mlp_iqn_network,
    mlp_quantile_q_network,
    nature_cnn_iqn_network,
    nature_cnn_quantile_q_network,
    quantile_midpoints,
)


class IdentityTorso(nn.Module):
    """psi(s) = s, so that a test controls the state embedding exactly."""

    def __init__(self, size):
        super().__init__()
        self.output_size = size

    def forward(self, observation):
        return observation


# ------------------------------------------------------------------------------------------------ QR-DQN


def test_quantile_midpoints():
    torch.testing.assert_close(quantile_midpoints(1), torch.tensor([0.5]))
    torch.testing.assert_close(quantile_midpoints(4), torch.tensor([0.125, 0.375, 0.625, 0.875]))
    assert quantile_midpoints(200)[0].item() == pytest.approx(1 / 400) and quantile_midpoints(200)[-1].item() == pytest.approx(399 / 400)


def test_quantile_network_layout_is_quantiles_then_actions_and_q_is_their_mean():
    network = QuantileQNetwork(IdentityTorso(2), num_actions=3, num_quantiles=2)
    with torch.no_grad():
        network.head.weight.zero_()
        network.head.weight[:, 0] = 1.0  # adds s[0] to every output
        network.head.bias.copy_(torch.arange(6.0))  # output k = i * A + a gets bias k
    observation = torch.tensor([[10.0, 0.0], [20.0, 5.0]])
    expected = torch.tensor([[[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]], [[20.0, 21.0, 22.0], [23.0, 24.0, 25.0]]])
    torch.testing.assert_close(network.quantiles(observation), expected)
    torch.testing.assert_close(network(observation), torch.tensor([[11.5, 12.5, 13.5], [21.5, 22.5, 23.5]]))
    torch.testing.assert_close(network.taus, torch.tensor([0.25, 0.75]))
    assert 'taus' not in network.state_dict()  # fixed by num_quantiles, not saved


def test_quantile_network_shapes_classic_and_atari():
    mlp = mlp_quantile_q_network(4, 2, 50)
    assert mlp.quantiles(torch.zeros(5, 4)).shape == (5, 50, 2) and mlp(torch.zeros(5, 4)).shape == (5, 2)
    cnn = nature_cnn_quantile_q_network(6, 200)
    frames = torch.zeros(2, 4, 84, 84, dtype=torch.uint8)
    assert cnn.quantiles(frames).shape == (2, 200, 6) and cnn(frames).shape == (2, 6)
    assert cnn.head.weight.shape == (1200, 512)


# --------------------------------------------------------------------------------------------------- IQN


def test_cosine_features_exact():
    """cos(pi i tau), i = 0, 1, 2: tau 0 -> [1, 1, 1]; tau 1/2 -> [1, 0, -1]; tau 1/3 -> [1, 1/2, -1/2]; tau 1 -> [1, -1, 1]."""
    features = cosine_features(torch.tensor([[0.0, 0.5], [1 / 3, 1.0]]), 3)
    expected = torch.tensor([[[1.0, 1.0, 1.0], [1.0, 0.0, -1.0]], [[1.0, 0.5, -0.5], [1.0, -1.0, 1.0]]])
    torch.testing.assert_close(features, expected, atol=1e-6, rtol=0)
    assert cosine_features(torch.rand(7), 64).shape == (7, 64)


def test_cosine_embedding_is_relu_of_linear_cosines():
    embedding = CosineTauEmbedding(num_cosines=3, embedding_size=2)
    with torch.no_grad():
        embedding.linear.weight.copy_(torch.tensor([[1.0, 1.0, 1.0], [0.0, -2.0, 0.0]]))
        embedding.linear.bias.copy_(torch.tensor([0.0, 0.5]))
    # tau 0: features [1, 1, 1] -> [3, -1.5] -> [3, 0];  tau 1/2: [1, 0, -1] -> [0, .5];  tau 1/3: [1, .5, -.5] -> [1, -.5] -> [1, 0]
    out = embedding(torch.tensor([[0.0, 0.5, 1 / 3]]))
    torch.testing.assert_close(out, torch.tensor([[[3.0, 0.0], [0.0, 0.5], [1.0, 0.0]]]), atol=1e-6, rtol=0)


def test_iqn_combines_state_and_tau_embeddings_by_elementwise_product():
    torch.manual_seed(0)
    network = ImplicitQuantileNetwork(IdentityTorso(3), num_actions=2, tau_embed_dim=4, tau_samples_policy=5, hidden_size=8)
    observation, taus = torch.randn(2, 3), torch.rand(2, 6)
    expected = network.head(observation.unsqueeze(1) * network.tau_embedding(taus))
    values = network.quantile_values(observation, taus)
    assert values.shape == (2, 6, 2)
    torch.testing.assert_close(values, expected)
    # Each state uses only its own taus, and the value of a fraction does not depend on the others drawn with it.
    torch.testing.assert_close(network.quantile_values(observation[1:], taus[1:, 2:4]), values[1:, 2:4])


def test_iqn_q_values_are_the_mean_over_k_fresh_taus():
    torch.manual_seed(0)
    network = mlp_iqn_network(4, 3, tau_embed_dim=8, tau_samples_policy=7, hidden_size=16)
    observation = torch.randn(5, 4)
    torch.manual_seed(1)
    q_values = network(observation)
    torch.manual_seed(1)
    taus = torch.rand(5, 7)
    assert q_values.shape == (5, 3)
    torch.testing.assert_close(q_values, network.quantile_values(observation, taus).mean(dim=1))
    assert not torch.equal(network(observation), q_values)  # fresh taus each call


def test_iqn_atari_network_uses_conv_features_as_psi_and_512_units_in_f():
    torso = NatureCnnTorso(4, fully_connected=False)
    assert torso.output_size == 64 * 7 * 7 and not list(torso.fc.parameters())
    network = nature_cnn_iqn_network(6, tau_embed_dim=64, tau_samples_policy=32)
    assert network.tau_embedding.linear.weight.shape == (3136, 64)
    assert network.head[0].weight.shape == (512, 3136) and network.head[2].weight.shape == (6, 512)
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    assert network(frames).shape == (2, 6)
    assert network.quantile_values(frames, torch.rand(2, 3)).shape == (2, 3, 6)


def test_cosine_frequencies_start_at_zero():
    """i runs from 0 (eq. 4 of the paper): the first feature is the constant cos(0) = 1."""
    taus = torch.rand(10)
    torch.testing.assert_close(cosine_features(taus, 2)[:, 0], torch.ones(10))
    torch.testing.assert_close(cosine_features(taus, 2)[:, 1], torch.cos(math.pi * taus))


@pytest.mark.parametrize(
    'build, message',
    [
        (lambda: quantile_midpoints(0), 'num_quantiles must be >= 1'),
        (lambda: mlp_quantile_q_network(4, 0, 10), 'num_actions must be >= 1'),
        (lambda: cosine_features(torch.rand(3), 0), 'num_cosines must be >= 1'),
        (lambda: mlp_iqn_network(4, 2, 8, 0), 'tau_samples_policy must be >= 1'),
    ],
)
def test_bad_network_arguments(build, message):
    with pytest.raises(ValueError, match=message):
        build()
