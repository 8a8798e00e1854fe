"""Tests of PPO-ICM's learner (deep_rl_zoo/ppo_icm/agent.py)."""

import math

import gymnasium
import numpy as np
import pytest
import torch

from deep_rl_zoo import curiosity, gym_env, rollouts
from deep_rl_zoo.networks.curiosity import icm_for
from deep_rl_zoo.networks.policy import mlp_actor_critic
from deep_rl_zoo.ppo.agent import concatenate_rollouts
from deep_rl_zoo.ppo_icm import agent
from deep_rl_zoo.ppo_icm.settings import ATARI, PpoIcmSettings
from unit_tests import bf16_learning

MOUNTAIN_CAR = gymnasium.spaces.Box(np.array([-1.2, -0.07], np.float32), np.array([0.6, 0.07], np.float32))
T, N = 6, 2


def make_learner(intrinsic_reward_coef=1.0, normalize_intrinsic_reward=False, icm_every_epoch=True):
    torch.manual_seed(0)
    icm = icm_for('classic', MOUNTAIN_CAR, 3) if intrinsic_reward_coef > 0 else None
    normalizer = curiosity.IntrinsicRewardNormalizer(N, discount=0.99) if normalize_intrinsic_reward else None
    return agent.PpoIcmLearner(
        mlp_actor_critic(2, 3), icm, icm_learning_rate=1e-3, icm_every_epoch=icm_every_epoch, icm_beta=0.2, icm_eta=0.5, extrinsic_reward_coef=1.0,
        intrinsic_reward_coef=intrinsic_reward_coef, intrinsic_reward_normalizer=normalizer, learning_rate=1e-3, num_epochs=2, num_minibatches=2, clip_epsilon=0.2,
        clip_value=False, entropy_coef=0.0, value_coef=0.5, gae_lambda=0.95, normalize_advantages=True, max_grad_norm=0.5,
        total_updates=10, anneal_learning_rate=False, anneal_clip_epsilon=False,
    )


def rollout(seed=0):
    generator = torch.Generator().manual_seed(seed)
    discount = torch.full((T, N), 0.99)
    discount[2, 0] = 0.0  # env 0's episode ends at step 2
    return {
        'observation': torch.rand(T, N, 2, generator=generator) - 0.5,
        'last_observation': torch.rand(N, 2, generator=generator) - 0.5,
        'action': torch.randint(3, (T, N), generator=generator),
        'log_prob': torch.full((T, N), -math.log(3.0)),
        'value': torch.zeros(T + 1, N),
        'reward': -torch.ones(T, N),
        'discount': discount,
        'visited_rooms': torch.zeros(T, N),
    }


def test_intrinsic_reward_is_the_module_error_and_zero_where_the_episode_ended():
    learner = make_learner()
    batch = rollout()
    next_observation = torch.cat([batch['observation'][1:], batch['last_observation'][None]])
    continues = batch['discount'] > 0
    rewards = learner.intrinsic_rewards(batch['observation'], next_observation, batch['action'], continues)
    assert rewards.shape == (T, N)
    assert rewards[2, 0] == 0.0 and (rewards[continues] > 0).all()
    with torch.no_grad():
        output = learner.icm(batch['observation'][4, 1:], next_observation[4, 1:], batch['action'][4, 1:])
    expected = 0.5 * 0.5 * (output.predicted_features - output.next_features).pow(2).sum()  # eta / 2 * ||error||^2
    torch.testing.assert_close(rewards[4, 1], expected)


def test_update_trains_policy_and_module_and_checkpoints_both():
    learner = make_learner()
    network_before = [parameter.clone() for parameter in learner.network.parameters()]
    icm_before = {name: tensor.clone() for name, tensor in learner.icm.state_dict().items()}
    learner.update([rollout(0)])
    assert learner.learner_steps == 1
    assert any(not torch.equal(a, b) for a, b in zip(network_before, learner.network.parameters()))
    changed = [name for name, tensor in learner.icm.state_dict().items() if not torch.equal(tensor, icm_before[name])]
    assert any(name.startswith('encoder.') for name in changed) and any(name.startswith('forward_model.') for name in changed)
    statistics = learner.learner_statistics()
    assert statistics['intrinsic_reward'] > 0 and statistics['icm_inverse_loss'] > 0 and statistics['icm_forward_loss'] > 0
    restored = make_learner()
    restored.load_state_dict(learner.state_dict())
    for name, tensor in learner.icm.state_dict().items():
        torch.testing.assert_close(restored.icm.state_dict()[name], tensor)


@pytest.mark.parametrize('icm_every_epoch, module_steps', [(True, 4), (False, 2)])
def test_the_module_steps_on_every_minibatch_of_every_epoch_or_of_the_first_epoch_only(icm_every_epoch, module_steps):
    learner = make_learner(icm_every_epoch=icm_every_epoch)  # 2 epochs of 2 minibatches
    learner.update([rollout(0)])
    first_parameter = next(learner.icm.parameters())
    assert learner.icm_optimizer.state[first_parameter]['step'] == module_steps
    assert learner.learner_statistics()['icm_inverse_loss'] > 0


def test_with_no_curiosity_the_learner_is_plain_ppo_without_a_module():
    learner = make_learner(intrinsic_reward_coef=0.0)
    assert learner.icm is None
    learner.update([rollout(0)])
    assert 'icm' not in learner.state_dict() and 'intrinsic_reward' not in learner.learner_statistics()


def test_normalized_curiosity_reward_is_divided_by_the_running_std_of_its_return_and_resumes_from_a_checkpoint(monkeypatch):
    learner = make_learner(normalize_intrinsic_reward=True)
    mixed = []
    mix_rewards = curiosity.mix_rewards
    monkeypatch.setattr(curiosity, 'mix_rewards', lambda extrinsic, intrinsic, *coefs: mixed.append(intrinsic) or mix_rewards(extrinsic, intrinsic, *coefs))
    expected_normalizer = curiosity.IntrinsicRewardNormalizer(N, discount=0.99)
    for seed in (0, 1):
        batch = rollout(seed)
        next_observation = torch.cat([batch['observation'][1:], batch['last_observation'][None]])
        raw = learner.intrinsic_rewards(batch['observation'], next_observation, batch['action'], batch['discount'] > 0)
        learner.update([batch])
        # The update scores with the module as it was before its own steps: the same raw rewards, then divided.
        torch.testing.assert_close(mixed[-1], expected_normalizer(raw))
        statistics = learner.learner_statistics()
        assert statistics['normalized_intrinsic_reward'] == pytest.approx(float(mixed[-1].mean()))
        assert statistics['intrinsic_reward'] == pytest.approx(float(raw.mean()))
    assert not torch.allclose(mixed[-1], raw)  # the std of the return is not 1
    restored = make_learner(normalize_intrinsic_reward=True)
    restored.load_state_dict(learner.state_dict())
    assert restored.intrinsic_reward_normalizer.state_dict()['var'] == expected_normalizer.var
    torch.testing.assert_close(restored.intrinsic_reward_normalizer.returns, expected_normalizer.returns)
    with pytest.raises(ValueError, match='trained without --normalize_intrinsic_reward'):
        restored.load_state_dict(make_learner().state_dict())
    with pytest.raises(ValueError, match='--normalize_intrinsic_reward needs a curiosity reward'):
        make_learner(intrinsic_reward_coef=0.0, normalize_intrinsic_reward=True)


def test_concatenate_rollouts_joins_actors_along_environments():
    first, second = rollout(0), rollout(1)
    batch = concatenate_rollouts([first, second], torch.device('cpu'))
    assert batch['observation'].shape == (T, 2 * N, 2) and batch['value'].shape == (T + 1, 2 * N)
    torch.testing.assert_close(batch['last_observation'], torch.cat([first['last_observation'], second['last_observation']]))


def test_actor_scales_the_game_reward_before_the_curiosity_reward_is_added_when_asked():
    env = gym_env.create_classic_vector_env('MountainCar-v0', num_envs=2, seed=0)
    settings = PpoIcmSettings(environment_kind='classic', environment_name='MountainCar-v0', unroll_length=4, discount=0.99)
    network = mlp_actor_critic(2, 3)
    spec = rollouts.room_counting_rollout_spec(env, 2, 4)
    for scale in (False, True):
        actor = agent.build_actor(network, env, settings.replace(scale_rewards=scale), seed=0, device=torch.device('cpu'))
        buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
        actor.collect(buffer)
        # MountainCar pays -1 per step; the scaler divides by the std of the running return, which grows from 0.
        assert (buffer['reward'] == -1.0).all() != scale
    env.close()


@pytest.mark.slow
def test_bf16_learning_runs_the_policys_nature_cnn_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (1 epoch of 1 minibatch of random frames) of run_atari's learner from the same networks, without and
    with --bf16_learning: the policy's torso computes in float32, then bfloat16 (ICM's encoder, convolutions of its
    own, stays float32); the PPO loss moves by 0.01% (seeds 0-2: 0.001-0.01%), the gradient keeps its direction
    (cosine 0.9998)."""

    bf16_learning.check_the_nature_cnn_update(agent, ATARI.replace(num_epochs=1, num_minibatches=1))
