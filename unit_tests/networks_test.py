"""Networks: output shapes, uint8 scaling of the Nature and IMPALA CNNs, the IMPALA ResNet's size, orthogonal
initialisation gains, learned log std."""

import math

import pytest
import torch
from torch import nn

from deep_rl_zoo import gym_env
from deep_rl_zoo.networks.common import ImpalaResNetTorso, MlpTorso, NatureCnnTorso, orthogonal_init
from deep_rl_zoo.networks.policy import (
    CategoricalActorCritic,
    GaussianActorCritic,
    actor_critic_for,
    mlp_actor_critic,
    nature_cnn_actor_critic,
    policy_for,
)
from deep_rl_zoo.networks.value import QNetwork, mlp_q_network, nature_cnn_q_network


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ---------------------------------------------------------------------------------------------- shapes


def test_mlp_torso_shape_and_float_conversion():
    torso = MlpTorso(4, (16, 8))
    assert torso.output_size == 8
    out = torso(torch.ones(5, 4, dtype=torch.float64))  # converted to float32 inside
    assert out.shape == (5, 8) and out.dtype == torch.float32
    assert (out >= 0).all()  # ReLU after every layer


@pytest.mark.parametrize('input_size, hidden_sizes', [(0, (8,)), (4, ()), (4, (8, 0))])
def test_mlp_torso_refuses_bad_sizes(input_size, hidden_sizes):
    with pytest.raises(ValueError, match='MlpTorso needs'):
        MlpTorso(input_size, hidden_sizes)


def test_q_network_shapes():
    assert mlp_q_network(4, 2)(torch.zeros(3, 4)).shape == (3, 2)
    frames = torch.zeros(2, 4, 84, 84, dtype=torch.uint8)
    assert nature_cnn_q_network(6, frame_stack=4)(frames).shape == (2, 6)
    assert nature_cnn_q_network(18, frame_stack=1)(torch.zeros(1, 1, 84, 84, dtype=torch.uint8)).shape == (1, 18)


def test_q_network_refuses_zero_actions():
    with pytest.raises(ValueError, match='num_actions must be >= 1'):
        QNetwork(MlpTorso(4), 0)


def test_nature_cnn_conv_output_size_matches_paper():
    torso = NatureCnnTorso(4, 84)
    # 84 -> (84-8)/4+1 = 20 -> (20-4)/2+1 = 9 -> 9-3+1 = 7: 64 channels of 7x7 = 3136 (Mnih et al. 2015).
    assert torso.fc[0].in_features == 64 * 7 * 7
    assert torso.output_size == 512


def test_actor_critic_shapes():
    categorical = mlp_actor_critic(4, 3)
    output = categorical(torch.zeros(5, 4))
    assert output.logits.shape == (5, 3) and output.value.shape == (5,)
    atari = nature_cnn_actor_critic(6)
    output = atari(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))
    assert output.logits.shape == (2, 6) and output.value.shape == (2,)
    gaussian = GaussianActorCritic(11, 3)
    output = gaussian(torch.zeros(7, 11))
    assert output.mean.shape == (7, 3) and output.log_std.shape == (7, 3) and output.value.shape == (7,)


def test_categorical_actor_critic_refuses_zero_actions():
    with pytest.raises(ValueError, match='num_actions must be >= 1'):
        CategoricalActorCritic(MlpTorso(4), 0)


def test_impala_resnet_torso_shape():
    torso = ImpalaResNetTorso()
    assert torso.output_size == 256
    out = torso(torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8))
    assert out.shape == (2, 256) and out.dtype == torch.float32
    assert (out >= 0).all()  # ReLU after the linear layer
    # Each max-pool (3x3, stride 2, padding 1) maps n to floor((n - 1) / 2) + 1: 84 -> 42 -> 21 -> 11.
    assert torso.fc[0].in_features == 32 * 11 * 11
    # Other frame sizes and channel counts work too.
    small = ImpalaResNetTorso(in_channels=1, frame_size=64, channels=(8, 16), output_size=32)
    assert small.fc[0].in_features == 16 * 16 * 16  # 64 -> 32 -> 16
    assert small(torch.zeros(3, 1, 64, 64, dtype=torch.uint8)).shape == (3, 32)


def test_impala_resnet_torso_parameter_count():
    # A 3x3 conv from c_in to c_out channels holds 9 * c_in * c_out weights and c_out biases.
    # Section 1:  conv 4 -> 16:   9 * 4 * 16 + 16  =    592;  4 residual convs 16 -> 16: 4 * (2304 + 16) =  9,280.
    # Section 2:  conv 16 -> 32:  9 * 16 * 32 + 32 =  4,640;  4 residual convs 32 -> 32: 4 * (9216 + 32) = 36,992.
    # Section 3:  conv 32 -> 32:  9 * 32 * 32 + 32 =  9,248;  4 residual convs:                            36,992.
    # Linear:     32 * 11 * 11 = 3,872 features -> 256:  3872 * 256 + 256 = 991,488.
    # Total: 592 + 9,280 + 4,640 + 36,992 + 9,248 + 36,992 + 991,488 = 1,089,232.
    torso = ImpalaResNetTorso()
    assert sum(parameter.numel() for parameter in torso.parameters()) == 1_089_232
    # 15 conv layers, as the paper's figure 3 says of the large architecture.
    assert sum(isinstance(layer, nn.Conv2d) for layer in torso.modules()) == 15


def test_impala_resnet_torso_gradients_reach_the_first_conv():
    torso = ImpalaResNetTorso()
    torso(torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)).sum().backward()
    first_conv = torso.convs[0]
    assert isinstance(first_conv, nn.Conv2d) and first_conv.in_channels == 4
    assert first_conv.weight.grad is not None and torch.count_nonzero(first_conv.weight.grad) > 0
    assert all(parameter.grad is not None for parameter in torso.parameters())


def test_impala_residual_block_adds_its_input():
    torso = ImpalaResNetTorso(in_channels=1, frame_size=8, channels=(2,), output_size=4)
    block = torso.convs[2]
    for conv in (block.conv0, block.conv1):
        nn.init.zeros_(conv.weight)
        nn.init.zeros_(conv.bias)
    x = torch.randn(1, 2, 4, 4)
    torch.testing.assert_close(block(x), x)  # zero convs leave only the skip, negative entries included


@pytest.mark.parametrize(
    'kwargs', [dict(in_channels=0), dict(frame_size=0), dict(channels=()), dict(channels=(16, 0)), dict(output_size=0)]
)
def test_impala_resnet_torso_refuses_bad_sizes(kwargs):
    with pytest.raises(ValueError, match='ImpalaResNetTorso needs'):
        ImpalaResNetTorso(**kwargs)


# ----------------------------------------------------------------------------------- uint8 scaling


def test_nature_cnn_scales_uint8_frames_to_unit_interval():
    torso = NatureCnnTorso(4, 84)
    white = torch.full((2, 4, 84, 84), 255, dtype=torch.uint8)
    with torch.no_grad():
        from_uint8 = torso(white)
        from_ones = torso.fc(torso.convs(torch.ones(2, 4, 84, 84)))
        from_unscaled = torso.fc(torso.convs(torch.full((2, 4, 84, 84), 255.0)))
    torch.testing.assert_close(from_uint8, from_ones)
    assert not torch.allclose(from_uint8, from_unscaled)


def test_nature_cnn_scaling_of_mid_gray():
    torso = NatureCnnTorso(1, 84)
    frame = torch.randint(0, 256, (1, 1, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        torch.testing.assert_close(torso(frame), torso.fc(torso.convs(frame.float() / 255.0)))


def test_impala_resnet_scales_uint8_frames_to_unit_interval():
    torso = ImpalaResNetTorso()
    white = torch.full((2, 4, 84, 84), 255, dtype=torch.uint8)
    with torch.no_grad():
        from_uint8 = torso(white)
        from_unit_floats = torso.fc(torso.convs(torch.ones(2, 4, 84, 84)))
        from_unscaled = torso.fc(torso.convs(torch.full((2, 4, 84, 84), 255.0)))
    torch.testing.assert_close(from_uint8, from_unit_floats)
    assert not torch.allclose(from_uint8, from_unscaled)


# ------------------------------------------------------------------------------ initialisation gains


def _assert_orthogonal_rows_or_columns(weight: torch.Tensor, gain: float):
    """An orthogonal matrix scaled by gain: W W^T = gain^2 I (wide) or W^T W = gain^2 I (tall)."""
    matrix = weight.detach().flatten(1)
    rows, cols = matrix.shape
    product = matrix @ matrix.T if rows <= cols else matrix.T @ matrix
    torch.testing.assert_close(product, gain**2 * torch.eye(min(rows, cols)), atol=1e-5 * max(gain**2, 1), rtol=1e-4)


def test_orthogonal_init_gain_and_zero_bias():
    layer = orthogonal_init(nn.Linear(16, 8), gain=3.0)
    _assert_orthogonal_rows_or_columns(layer.weight, 3.0)
    assert torch.count_nonzero(layer.bias) == 0
    conv = orthogonal_init(nn.Conv2d(4, 32, 8, 4))
    _assert_orthogonal_rows_or_columns(conv.weight, math.sqrt(2.0))
    assert torch.count_nonzero(conv.bias) == 0


def test_categorical_actor_critic_head_gains():
    network = mlp_actor_critic(4, 3, hidden_sizes=(64, 64))
    _assert_orthogonal_rows_or_columns(network.policy_head.weight, 0.01)
    assert network.policy_head.weight.abs().max() <= 0.01 + 1e-7  # each row has norm 0.01
    _assert_orthogonal_rows_or_columns(network.value_head.weight, 1.0)
    for torso in (network.torso, network.value_torso):
        for layer in torso.modules():
            if isinstance(layer, nn.Linear):
                _assert_orthogonal_rows_or_columns(layer.weight, math.sqrt(2.0))
                assert torch.count_nonzero(layer.bias) == 0
    # A near-uniform first policy: logits of any reasonable input are tiny.
    with torch.no_grad():
        logits = network(torch.randn(32, 4)).logits
    assert logits.abs().max() < 0.1


def test_gaussian_actor_critic_head_gains():
    network = GaussianActorCritic(11, 3)
    _assert_orthogonal_rows_or_columns(network.mean_head.weight, 0.01)
    _assert_orthogonal_rows_or_columns(network.value_head.weight, 1.0)
    assert torch.count_nonzero(network.mean_head.bias) == 0


# -------------------------------------------------------------------------------------- log std


def test_gaussian_log_std_is_a_learned_parameter():
    network = GaussianActorCritic(5, 2, initial_log_std=-0.5)
    assert isinstance(network.log_std, nn.Parameter) and network.log_std.requires_grad
    assert any(parameter is network.log_std for parameter in network.parameters())
    assert 'log_std' in network.state_dict()
    output = network(torch.randn(4, 5))
    torch.testing.assert_close(output.log_std, torch.full((4, 2), -0.5))
    # The expanded output still reaches the parameter, so an optimiser can move it.
    output.log_std.sum().backward()
    torch.testing.assert_close(network.log_std.grad, torch.full((2,), 4.0))
    optimizer = torch.optim.SGD(network.parameters(), lr=0.1)
    optimizer.step()
    torch.testing.assert_close(network.log_std.detach(), torch.full((2,), -0.9))


def test_policy_gradient_networks_for_an_environment_and_continuous_actions_refused():
    cartpole = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    actor_critic, alone = actor_critic_for(cartpole, 'A2C'), policy_for(cartpole, 'REINFORCE')
    output = actor_critic(torch.zeros(3, 4))
    assert output.logits.shape == (3, 2) and output.value.shape == (3,)
    assert actor_critic.value_torso is not None  # separate MLPs for vector observations
    assert alone(torch.zeros(3, 4)).logits.shape == (3, 2) and not hasattr(alone, 'value_head')
    cartpole.close()
    pendulum = gym_env.create_continuous_vector_env('Pendulum-v1', 1, seed=0)
    with pytest.raises(ValueError, match='^discrete SAC takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous$'):
        policy_for(pendulum, 'discrete SAC')
    pendulum.close()


def test_scaled_frames_are_the_same_numbers_in_channels_last_layout_for_learner_sized_batches():
    from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH, NatureCnnTorso, scaled_frames

    frames = torch.randint(0, 256, (CHANNELS_LAST_MIN_BATCH, 4, 84, 84), dtype=torch.uint8)
    large, small = scaled_frames(frames), scaled_frames(frames[:8])
    assert large.is_contiguous(memory_format=torch.channels_last) and small.is_contiguous()
    assert torch.equal(large, frames.float() / 255.0) and torch.equal(small, frames[:8].float() / 255.0)
    torch.manual_seed(0)
    torso = NatureCnnTorso()
    with torch.no_grad():  # one layout or the other: the same features up to float rounding
        torch.testing.assert_close(torso(frames)[:8], torso(frames[:8]), rtol=1e-4, atol=1e-5)


def test_scaled_frames_write_a_new_array_in_float32_or_in_bfloat16_the_float32_numbers_rounded():
    from deep_rl_zoo.networks.common import scaled_frames

    every_value = torch.arange(256, dtype=torch.uint8).view(4, 1, 8, 8)
    exact = every_value.float() / 255.0
    assert torch.equal(scaled_frames(every_value), exact)
    in_bfloat16 = scaled_frames(every_value, torch.bfloat16)  # what autocast would cast float32 frames to
    assert in_bfloat16.dtype == torch.bfloat16 and torch.equal(in_bfloat16, exact.to(torch.bfloat16))
    floats = exact * 255.0
    assert torch.equal(scaled_frames(floats), exact) and torch.equal(floats, exact * 255.0)  # divided in its own copy


def test_fold_time_copies_a_learners_frames_once_straight_into_channels_last():
    from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH, channels_last, channels_last_steps, fold_time

    batch_size = CHANNELS_LAST_MIN_BATCH // 4
    frames = torch.randint(0, 256, (batch_size, 8, 4, 84, 84), dtype=torch.uint8).transpose(0, 1)  # [T, B] view of [B, T]
    folded = fold_time(frames, frames=True)
    assert folded.shape == (8 * batch_size, 4, 84, 84) and torch.equal(folded, frames.flatten(0, 1))
    assert folded.is_contiguous(memory_format=torch.channels_last) and channels_last(folded).data_ptr() == folded.data_ptr()  # no second copy
    # Frames laid out [T, B, H, W, C] once (`channels_last_steps`) fold without a copy, any run of steps of them;
    # fewer than CHANNELS_LAST_MIN_BATCH frames in the plain layout.
    steps = channels_last_steps(frames)
    assert torch.equal(steps, frames)
    for run in (slice(None), slice(4, None)):
        assert fold_time(steps[run], frames=True).data_ptr() == steps[run].data_ptr()
        assert torch.equal(fold_time(steps[run], frames=True), frames[run].flatten(0, 1))
    few = fold_time(steps[:2], frames=True)
    assert few.is_contiguous() and torch.equal(few, frames[:2].flatten(0, 1))
    actor_step = frames[:1]
    assert channels_last_steps(actor_step) is actor_step  # too few frames to lay out
    # A torso of other inputs, or an actor's few frames: time folded in the layout they have.
    for observation, as_frames in ((frames, False), (frames[:1], True)):
        assert torch.equal(fold_time(observation, as_frames), observation.flatten(0, 1))
        assert not fold_time(observation, as_frames).is_contiguous(memory_format=torch.channels_last)
    assert fold_time(torch.zeros(8, 4, 3), True).shape == (32, 3)


def test_bf16_torsos_run_the_nature_cnn_in_bfloat16_only_within_and_hand_on_float32_features():
    from deep_rl_zoo.networks.common import NatureCnnTorso, bf16_torsos

    torch.manual_seed(0)
    torso = NatureCnnTorso()
    convs = []
    torso.convs.register_forward_hook(lambda module, inputs, output: convs.append(output.dtype))
    frames = torch.randint(0, 256, (32, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        exact = torso(frames)
        with bf16_torsos():
            low = torso(frames)
            with bf16_torsos(False):  # nested: off again
                again = torso(frames)
        after = torso(frames)
        with pytest.raises(RuntimeError), bf16_torsos():
            raise RuntimeError('the context ends with the exception')
        last = torso(frames)
    assert convs == [torch.float32, torch.bfloat16, torch.float32, torch.float32, torch.float32]
    assert low.dtype == torch.float32 and not torch.equal(low, exact)
    torch.testing.assert_close(low, exact, rtol=0.05, atol=0.02)
    assert torch.equal(again, exact) and torch.equal(after, exact) and torch.equal(last, exact)


def test_bf16_torsos_also_run_iqns_hidden_layer_on_the_nature_cnn_and_hand_float32_to_its_output_layer():
    from deep_rl_zoo.networks.common import bf16_torsos
    from deep_rl_zoo.networks.value import mlp_iqn_network, nature_cnn_iqn_network

    torch.manual_seed(0)
    network, mlp = nature_cnn_iqn_network(6, 64, 32), mlp_iqn_network(4, 2, 64, 32)
    taus = torch.linspace(0.05, 0.95, 8).expand(4, 8)
    dtypes = []
    network.head[0].register_forward_hook(lambda module, inputs, out: dtypes.append(out.dtype))
    network.head[2].register_forward_hook(lambda module, inputs, out: dtypes.append((inputs[0].dtype, out.dtype)))
    frames = torch.randint(0, 256, (4, 4, 84, 84), dtype=torch.uint8)
    observations = torch.randn(4, 4, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        exact, mlp_exact = network.quantile_values(frames, taus), mlp.quantile_values(observations, taus)
        with bf16_torsos():
            low, mlp_low = network.quantile_values(frames, taus), mlp.quantile_values(observations, taus)
            torso_features = network.torso(frames)
        torso_only = network.head(torso_features.unsqueeze(1) * network.tau_embedding(taus))  # f in float32
    hidden_then_output = [torch.float32, (torch.float32, torch.float32)]
    assert dtypes == hidden_then_output + [torch.bfloat16, (torch.float32, torch.float32)] + hidden_then_output  # exact, low, torso_only
    assert low.dtype == torch.float32 and not torch.equal(low, torso_only)  # f's hidden layer ran in bfloat16 too
    torch.testing.assert_close(low, exact, rtol=0.05, atol=0.02)
    assert torch.equal(mlp_low, mlp_exact)  # classic-control networks stay float32
