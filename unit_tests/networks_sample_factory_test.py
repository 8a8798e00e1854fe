"""Sample Factory's actor-critic (deep_rl_zoo/networks/sample_factory.py): learner-sized batches of frames take the
channels-last path of networks.common with the numbers of the plain layout, the convnet_atari encoder runs in
bfloat16 within networks.common.bf16_torsos, and the parameter names (what checkpoints hold) are Sample Factory's
layout of APPO's earlier network."""

import torch
from torch.testing import assert_close

from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH, bf16_torsos, channels_last
from deep_rl_zoo.networks.sample_factory import SampleFactoryActorCritic


def atari_network():
    torch.manual_seed(0)
    network = SampleFactoryActorCritic((4, 84, 84), 6, [512], [32], nonlinearity='relu', normalize_input=True, obs_scale=255.0)
    with torch.no_grad():  # input statistics that are not the identity
        network.observation_normalizer.mean.copy_(torch.rand(4 * 84 * 84) * 0.5)
        network.observation_normalizer.var.copy_(torch.rand(4 * 84 * 84) * 0.1 + 0.01)
    return network


def test_a_learner_batch_of_frames_is_scaled_and_normalised_channels_last_with_the_same_numbers():
    network = atari_network()
    frames = torch.randint(0, 256, (CHANNELS_LAST_MIN_BATCH, 4, 84, 84), dtype=torch.uint8)
    normalizer = network.observation_normalizer
    # ((x / 255) - mu) / sigma, clipped to +-5, computed plainly in the usual layout:
    std = torch.sqrt(normalizer.var + normalizer.epsilon)
    plain = ((frames.flatten(1).float() / 255.0 - normalizer.mean) / std).clamp(-5.0, 5.0).view_as(frames)
    with torch.no_grad():
        normalised = network._scale_and_normalize(channels_last(frames))
    assert normalised.is_contiguous(memory_format=torch.channels_last)
    assert_close(normalised, plain, rtol=1e-6, atol=1e-5)
    # The whole forward pass matches the plain layout's (convolutions may sum in another order).
    with torch.no_grad():
        output = network(frames)
        features = network.encoder(plain.contiguous())
        assert_close(output.logits, network.policy_head(features), rtol=1e-4, atol=1e-5)
        assert_close(output.value, network.value_head(features).squeeze(-1), rtol=1e-4, atol=1e-5)


def test_an_actors_few_frames_stay_in_the_plain_layout():
    frames = torch.zeros(CHANNELS_LAST_MIN_BATCH - 1, 4, 84, 84, dtype=torch.uint8)
    assert channels_last(frames) is frames
    assert channels_last(torch.zeros(CHANNELS_LAST_MIN_BATCH, 4, 84, 84, dtype=torch.uint8)).is_contiguous(memory_format=torch.channels_last)



def test_bf16_torsos_run_the_convnet_atari_encoder_in_bfloat16_only_within_and_hand_on_float32_features():
    network = atari_network()
    convs = []
    network.encoder[0].register_forward_hook(lambda module, inputs, output: convs.append(output.dtype))
    frames = torch.randint(0, 256, (CHANNELS_LAST_MIN_BATCH, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        exact = network(frames)
        with bf16_torsos():
            low = network(frames)
        after = network(frames)
    assert convs == [torch.float32, torch.bfloat16, torch.float32]
    assert low.logits.dtype == low.value.dtype == torch.float32 and not torch.equal(low.value, exact.value)
    assert_close(low.value, exact.value, rtol=0.05, atol=0.02)
    assert_close(low.logits, exact.logits, rtol=0.05, atol=0.02)
    assert torch.equal(after.value, exact.value) and torch.equal(after.logits, exact.logits)

def test_parameter_names_keep_the_layout_of_earlier_appo_checkpoints():
    network = SampleFactoryActorCritic((3,), 2, [16, 8], [], nonlinearity='tanh', normalize_input=True, normalize_returns=True, rnn_type='lstm', rnn_size=4)
    assert [name for name in network.state_dict() if not name.startswith(('observation_normalizer', 'return_normalizer'))] == [
        'encoder.0.weight', 'encoder.0.bias', 'encoder.2.weight', 'encoder.2.bias',
        'core.weight_ih', 'core.weight_hh', 'core.bias_ih', 'core.bias_hh',
        'policy_head.weight', 'policy_head.bias', 'value_head.weight', 'value_head.bias',
    ]  # fmt: skip
    convnet = atari_network()
    assert [name for name in convnet.state_dict() if name.startswith('encoder')] == [
        'encoder.0.0.weight', 'encoder.0.0.bias', 'encoder.0.2.weight', 'encoder.0.2.bias', 'encoder.0.4.weight', 'encoder.0.4.bias',
        'encoder.1.0.weight', 'encoder.1.0.bias',
    ]  # fmt: skip


def test_frames_fold_into_the_input_statistics_as_their_scaled_floats_do():
    """The exact uint8 moments, scaled, give the statistics that folding the scaled float frames gives."""
    frames = torch.randint(0, 256, (300, 4, 84, 84), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    by_bytes, by_floats = atari_network(), atari_network()
    by_bytes.fold_observations(frames)
    by_floats.observation_normalizer.update(by_floats.scale(frames).flatten(1))
    normalizer, reference = by_bytes.observation_normalizer, by_floats.observation_normalizer
    assert_close(normalizer.count, reference.count)
    assert_close(normalizer.mean, reference.mean, rtol=1e-6, atol=1e-7)
    assert_close(normalizer.var, reference.var, rtol=1e-5, atol=1e-8)
    assert not torch.equal(normalizer.mean, atari_network().observation_normalizer.mean)


def test_minibatches_of_inputs_prepared_once_give_the_numbers_of_the_observations():
    """APPO's learner scales and normalises an update's batch once (`encoder_inputs`) and passes minibatches of it
    with prepared=True: the same outputs, bit for bit, as the minibatches' frames, at learner-sized (channels-last)
    and small minibatches, feed-forward and unrolled."""
    network = atari_network()
    frames = torch.randint(0, 256, (2 * CHANNELS_LAST_MIN_BATCH, 4, 84, 84), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        inputs = network.encoder_inputs(frames)
        for indices in (torch.randperm(len(frames))[:CHANNELS_LAST_MIN_BATCH], torch.arange(5)):
            prepared, plain = network(inputs[indices], prepared=True), network(frames[indices])
            assert torch.equal(prepared.logits, plain.logits) and torch.equal(prepared.value, plain.value)
    torch.manual_seed(0)
    recurrent = SampleFactoryActorCritic((4, 84, 84), 6, [512], [32], nonlinearity='relu', normalize_input=True, obs_scale=255.0, rnn_type='gru', rnn_size=8)
    sequence = frames[:12].view(4, 3, 4, 84, 84)
    starts = torch.zeros(4, 3, dtype=torch.bool)
    with torch.no_grad():
        prepared = recurrent.unroll(recurrent.encoder_inputs(frames[:12]).view(4, 3, 4, 84, 84), recurrent.initial_state(3), starts, prepared=True)
        plain = recurrent.unroll(sequence, recurrent.initial_state(3), starts)
    assert torch.equal(prepared.logits, plain.logits) and torch.equal(prepared.value, plain.value)
