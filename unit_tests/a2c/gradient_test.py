"""Tests of A2C's gradient variant (deep_rl_zoo/a2c/agent.py: GradientActor, A2cGradientLearner): an actor sends
exactly the gradient of the A2C loss on its own rollout, and the learner's step from the actors' gradients is the
plain A2C learner's step on all their samples, exactly without compression and within each encoding's error with it.
"""

import copy

import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import gradient_compression, gym_env
from deep_rl_zoo.a2c import agent
from deep_rl_zoo.a2c.settings import A2cGradientSettings, A2cSettings
from deep_rl_zoo.rollouts import OnPolicyActor
from unit_tests.a2c.agent_test import LEARNER_SETTINGS as SETTINGS

UNROLL_LENGTH = 6


def gradient_actor_buffers(network, compression, num_envs_per_actor=(3, 2)):
    """One rollout of UNROLL_LENGTH steps per actor on real CartPole environments (3 and 2 of them: unequal sample
    counts), each actor acting with its own copy of `network` and sending its gradient with `compression`."""
    buffers = []
    loss = agent.A2cLoss(value_coef=SETTINGS['value_coef'], entropy_coef=SETTINGS['entropy_coef'], gae_lambda=1.0)
    for actor_id, num_envs in enumerate(num_envs_per_actor):
        env = gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=10 * actor_id)
        spec = agent.gradient_rollout_spec(A2cGradientSettings(gradient_compression=compression))(env, num_envs, UNROLL_LENGTH)
        buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
        rollout_actor = OnPolicyActor(copy.deepcopy(network), env, UNROLL_LENGTH, 0.99, False, seed=actor_id)
        agent.GradientActor(rollout_actor, loss, compression, seed=actor_id).collect(buffer)
        env.close()
        buffers.append(buffer)
    return buffers


def cartpole_network():
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    torch.manual_seed(0)
    network = agent.make_network(env, A2cSettings())
    env.close()
    return network


def flat_gradient(network):
    return torch.cat([parameter.grad.flatten() for parameter in network.parameters()])


def test_the_actor_sends_the_gradient_and_loss_parts_of_its_own_rollout():
    network = cartpole_network()
    (buffer,) = gradient_actor_buffers(network, 'none', num_envs_per_actor=(3,))
    assert buffer['gradient'].shape == (sum(p.numel() for p in network.parameters()),)

    # Recomputed here from the rollout the actor wrote, with the same parameters.
    loss, statistics = agent.A2cLoss(value_coef=0.5, entropy_coef=0.01, gae_lambda=1.0)(network, {name: buffer[name] for name in agent.BATCH_FIELDS})
    network.zero_grad()
    loss.backward()
    assert_close(buffer['gradient'], flat_gradient(network))
    assert_close(buffer['loss_statistics'], torch.stack([statistics[name] for name in agent.ACTOR_STATISTICS]))
    assert buffer['gradient'].abs().sum() > 0


def test_the_learner_step_from_actor_gradients_is_the_plain_a2c_step_on_all_samples():
    """Actors of 18 and 12 samples: the sample-weighted mean of their mean-loss gradients is the gradient of the
    mean loss over all 30, so both learners hold the same gradient and take the same RMSProp step."""
    network = cartpole_network()
    buffers = gradient_actor_buffers(network, 'none')
    plain = agent.A2cLearner(copy.deepcopy(network), **SETTINGS)
    from_actors = agent.A2cGradientLearner(copy.deepcopy(network), compression='none', **SETTINGS)
    plain.update(buffers)
    from_actors.update(buffers)

    assert_close(flat_gradient(from_actors.network), flat_gradient(plain.network), rtol=1e-5, atol=1e-7)
    for ours, theirs, before in zip(from_actors.network.parameters(), plain.network.parameters(), network.parameters()):
        assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
        assert not torch.equal(ours, before)  # a step was taken
    assert from_actors.samples_used == plain.samples_used == 30 and from_actors.learner_steps == 1
    ours, theirs = from_actors.learner_statistics(), plain.learner_statistics()
    for name in ('policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate'):
        assert ours[name] == pytest.approx(theirs[name], rel=1e-5), name
    assert from_actors.agent_name == 'A2C-grad'


@pytest.mark.parametrize('compression', ['bfloat16', 'int8'])
def test_a_compressed_gradient_is_the_exact_one_within_the_encoding_error(compression):
    network = cartpole_network()
    exact_buffers = gradient_actor_buffers(network, 'none')
    compressed_buffers = gradient_actor_buffers(network, compression)  # the same rollouts: same seeds and parameters
    compressed = agent.A2cGradientLearner(copy.deepcopy(network), compression=compression, **SETTINGS)
    compressed.update(compressed_buffers)
    received = flat_gradient(compressed.network)

    weights = [0.6, 0.4]  # 18 and 12 of the 30 samples
    expected = sum(w * b['gradient'] for w, b in zip(weights, exact_buffers))
    if compression == 'bfloat16':  # each number of each actor within 2^-8 of itself
        bound = sum(w * 2**-8 * b['gradient'].abs() for w, b in zip(weights, exact_buffers))
    else:  # each number of each actor within one level of its block, max |g_block| / 127
        bound = sum(w * b['gradient_scale'].repeat_interleave(256)[: received.numel()] for w, b in zip(weights, compressed_buffers))
    assert ((received - expected).abs() <= bound + 1e-7).all()
    assert torch.nn.functional.cosine_similarity(received, expected, dim=0) > 0.99


def test_gradients_of_another_network_size_are_refused():
    network = cartpole_network()
    buffers = gradient_actor_buffers(network, 'none')
    smaller = torch.nn.Sequential(torch.nn.Linear(4, 2))
    learner = agent.A2cGradientLearner(smaller, compression='none', **SETTINGS)
    num_parameters = sum(p.numel() for p in network.parameters())
    with pytest.raises(ValueError, match=f'gradients of {num_parameters} numbers for a network of 10 parameters'):
        learner.update(buffers)


def test_int8_buffers_are_a_quarter_of_float32_plus_the_block_scales():
    network = cartpole_network()
    num_parameters = sum(p.numel() for p in network.parameters())
    (buffer,) = gradient_actor_buffers(network, 'int8', num_envs_per_actor=(1,))
    assert buffer['gradient'].dtype == torch.int8 and buffer['gradient'].numel() == num_parameters
    assert buffer['gradient_scale'].numel() == -(-num_parameters // gradient_compression.INT8_BLOCK_SIZE)


def test_normalized_advantages_reach_both_variants_and_standardise_the_policy_term():
    settings = A2cGradientSettings(normalize_advantages=True)
    env = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=0)
    network = cartpole_network()
    try:
        assert agent.build_learner(network, env, settings, total_updates=1, device=torch.device('cpu')).loss.normalize_advantages
        assert agent.build_gradient_actor(network, env, settings, seed=0, device=torch.device('cpu')).loss.normalize_advantages
    finally:
        env.close()
    (buffer,) = gradient_actor_buffers(network, 'none', num_envs_per_actor=(3,))
    batch = {name: buffer[name] for name in agent.BATCH_FIELDS}
    loss = agent.A2cLoss(value_coef=0.5, entropy_coef=0.01, gae_lambda=1.0, normalize_advantages=True)
    _, statistics = loss(network, batch)
    with torch.no_grad():  # worked out apart: -log pi(a|s) times the advantage standardised over the 18 samples
        output = network(batch['observation'].flatten(0, 1))
        advantage = loss.returns(batch).flatten() - output.value
        standardised = (advantage - advantage.mean()) / (advantage.std(unbiased=False) + 1e-8)
        log_pi = torch.log_softmax(output.logits, dim=-1).gather(1, batch['action'].flatten()[:, None]).squeeze(1)
    assert_close(statistics['policy_loss'], (-log_pi * standardised).mean())
    _, plain_statistics = agent.A2cLoss(value_coef=0.5, entropy_coef=0.01, gae_lambda=1.0)(network, batch)
    assert not torch.allclose(plain_statistics['policy_loss'], statistics['policy_loss'])
    assert_close(plain_statistics['value_loss'], statistics['value_loss'])
