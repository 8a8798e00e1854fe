"""Tests of PPO-RND's learner (deep_rl_zoo/ppo_rnd/agent.py)."""

import math

import gymnasium
import numpy as np
import pytest
import torch

from deep_rl_zoo import gym_env
from deep_rl_zoo.networks.curiosity import TwoValueActorCritic, policy_torsos, rnd_for
from deep_rl_zoo.ppo.agent import learner_arguments
from deep_rl_zoo.ppo_rnd import agent
from deep_rl_zoo.ppo_rnd.settings import ATARI
from unit_tests import bf16_learning

T, N = 8, 2
MOUNTAIN_CAR = gymnasium.spaces.Box(np.array([-1.2, -0.07], np.float32), np.array([0.6, 0.07], np.float32))


def make_learner(num_envs=N):
    torch.manual_seed(0)
    torso, value_torso = policy_torsos('classic', MOUNTAIN_CAR)
    network = TwoValueActorCritic(torso, 3, value_torso)
    return agent.PpoRndLearner(
        network, rnd_for('classic', (2,)), num_envs=num_envs, intrinsic_discount=0.99, extrinsic_advantage_coef=2.0,
        intrinsic_advantage_coef=1.0, rnd_update_proportion=0.5, rnd_learning_rate=1e-3, learning_rate=1e-3, num_epochs=2,
        num_minibatches=2, clip_epsilon=0.2, clip_value=False, entropy_coef=0.0, value_coef=0.5, gae_lambda=0.95,
        normalize_advantages=True, max_grad_norm=0.5, total_updates=10, anneal_learning_rate=False, anneal_clip_epsilon=False,
    )


def rollout(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return {
        'observation': torch.rand(T, N, 2, generator=generator),
        'last_observation': torch.rand(N, 2, generator=generator),
        'action': torch.randint(3, (T, N), generator=generator),
        'log_prob': torch.full((T, N), -math.log(3.0)),
        'value': torch.zeros(T + 1, N),
        'reward': torch.zeros(T, N),
        'discount': torch.full((T, N), 0.999),
        'visited_rooms': torch.zeros(T, N),
    }


def test_update_trains_predictor_and_both_heads_and_keeps_the_target_fixed():
    learner = make_learner()
    target_before = {name: tensor.clone() for name, tensor in learner.rnd.target.state_dict().items()}
    predictor_before = [parameter.clone() for parameter in learner.rnd.predictor.parameters()]
    head_before = learner.network.intrinsic_value_head.weight.clone()
    batch = rollout()
    learner.update([batch])
    for name, tensor in learner.rnd.target.state_dict().items():
        assert torch.equal(tensor, target_before[name])
    assert any(not torch.equal(a, b) for a, b in zip(predictor_before, learner.rnd.predictor.parameters()))
    assert not torch.equal(head_before, learner.network.intrinsic_value_head.weight)
    # The normaliser saw the batch's next observations, x_1 ... x_T: T x N of them.
    assert learner.rnd.observation_normalizer.count.item() == T * N
    next_observations = torch.cat([batch['observation'][1:], batch['last_observation'][None]]).flatten(0, 1)
    torch.testing.assert_close(learner.rnd.observation_normalizer.mean, next_observations.mean(0))
    statistics = learner.learner_statistics()
    assert statistics['rnd_error'] > 0 and statistics['intrinsic_reward'] > 0 and 'intrinsic_value_loss' in statistics


def test_intrinsic_reward_normaliser_carries_its_returns_across_updates_and_checkpoints():
    learner = make_learner()
    learner.update([rollout(0)])
    returns_after_one = learner.reward_normalizer.returns.clone()
    assert (returns_after_one > 0).all()
    restored = make_learner()
    restored.load_state_dict(learner.state_dict())
    torch.testing.assert_close(restored.reward_normalizer.returns, returns_after_one)
    torch.testing.assert_close(restored.rnd.observation_normalizer.mean, learner.rnd.observation_normalizer.mean)
    assert restored.reward_normalizer.count == learner.reward_normalizer.count == T * N + 1e-8


def test_observation_normaliser_starts_from_random_steps():
    with gym_env.create_vector_env('minigrid', 'MiniGrid-DoorKey-5x5-v0', 2, seed=5) as env:
        rnd = rnd_for('minigrid', env.single_observation_space.shape)
        agent.initialize_observation_normalizer(rnd, env, num_steps=100, seed=5)
    assert rnd.observation_normalizer.count.item() == 100  # 50 steps of 2 environments
    assert (rnd.observation_normalizer.var > 0).any()
    normalized = rnd.observation_normalizer(torch.full((1, 3 * 7 * 7), 255.0))
    assert normalized.max().item() == 5.0  # clipped to [-5, 5]


@pytest.mark.slow
def test_bf16_learning_runs_the_minibatches_nature_cnn_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (1 epoch of 1 minibatch of random frames) of a learner of run_atari's settings from the same networks,
    without and with --bf16_learning: the batch's intrinsic values (the old values) are computed in float32 either
    way, the minibatch's forward pass in float32, then bfloat16 (RND's networks, convolutions of their own, stay
    float32); the loss moves by 0.08% (seeds 0-2: 0.08-0.12%), the gradient keeps its direction (cosine 0.9999)."""

    def build_learner(bf16):
        settings = ATARI.replace(num_epochs=1, num_minibatches=1, bf16_learning=bf16)
        torch.manual_seed(0)
        return agent.PpoRndLearner(
            agent.make_network(bf16_learning.ATARI_SPACES, settings), rnd_for('atari', bf16_learning.FRAMES), num_envs=4, intrinsic_discount=0.99,
            extrinsic_advantage_coef=2.0, intrinsic_advantage_coef=1.0, rnd_update_proportion=0.25, rnd_learning_rate=1e-4,
            **learner_arguments(settings, 10, torch.device('cpu')),
        )  # fmt: skip

    def loss(update):
        statistics = update.statistics
        value_loss = statistics['value_loss'] + statistics['intrinsic_value_loss']
        return statistics['policy_loss'] + ATARI.value_coef * value_loss - ATARI.entropy_coef * statistics['entropy']

    float32, bf16 = bf16_learning.updates_without_and_with_bf16(build_learner, [bf16_learning.atari_rollout()])
    assert float32.conv_dtypes == [torch.float32, torch.float32] and bf16.conv_dtypes == [torch.float32, torch.bfloat16]
    assert loss(bf16) == pytest.approx(loss(float32), rel=0.02) and loss(bf16) != loss(float32)
    assert bf16.cosine_similarity(float32) > 0.99


def test_predictor_step_is_the_mean_error_of_the_drawn_samples_and_only_they_are_computed():
    """With proportion 0.5, the step draws rows with torch.rand < 0.5; its loss is the mean prediction error of those
    rows (the paper's masked mean), the networks see only those rows, and Adam steps on that loss's gradient."""
    learner = make_learner()
    observations = torch.rand(6, 2, generator=torch.Generator().manual_seed(3))
    torch.manual_seed(7)
    drawn = torch.rand(6) < 0.5
    assert 0 < drawn.sum() < 6
    reference = make_learner()
    prediction, target = reference.rnd(observations[drawn])
    expected_loss = ((prediction - target) ** 2).mean(dim=1).mean()  # error per sample: the mean over features
    expected_loss.backward()
    reference.rnd_optimizer.step()
    seen_batch_sizes = []
    learner.rnd.predictor.register_forward_pre_hook(lambda module, inputs: seen_batch_sizes.append(inputs[0].shape[0]))
    torch.manual_seed(7)
    learner._predictor_step(observations)
    assert seen_batch_sizes == [int(drawn.sum())]
    torch.testing.assert_close(learner.statistics.means()['rnd_loss'], expected_loss.item())
    for parameter, expected in zip(learner.rnd.predictor.parameters(), reference.rnd.predictor.parameters()):
        torch.testing.assert_close(parameter, expected)


def test_predictor_step_with_no_sample_drawn_is_an_adam_step_on_zero_gradients():
    learner = make_learner()
    learner.rnd_update_proportion = 0.0
    before = [parameter.clone() for parameter in learner.rnd.predictor.parameters()]
    learner._predictor_step(torch.rand(4, 2))
    assert learner.statistics.means()['rnd_loss'] == 0.0
    for parameter, old in zip(learner.rnd.predictor.parameters(), before):
        assert torch.equal(parameter.grad, torch.zeros_like(parameter)) and torch.equal(parameter, old)
