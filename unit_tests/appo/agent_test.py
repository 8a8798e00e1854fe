"""Tests of APPO's learner and actor (deep_rl_zoo/appo/agent.py), with numbers worked out by hand or recomputed in
numpy / plain torch (its loss pieces, Sample Factory's variants of the shared ones, are tested in policy_gradient_test
and schedule_test)."""

import copy
import math
import os

import gymnasium
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import checkpoint, gym_env
from deep_rl_zoo.appo import agent, sample_factory_config
from deep_rl_zoo.appo.settings import ATARI, AppoSettings
from deep_rl_zoo.networks.sample_factory import PolicySet, SampleFactoryActorCritic
from deep_rl_zoo.rollouts import PolicySetActor, policy_set_rollout_spec
from unit_tests import bf16_learning

CARD = os.path.join(os.path.dirname(sample_factory_config.__file__), 'configs', 'atari_amidar.json')

GAMMA = 0.9


# --- the learner ------------------------------------------------------------------------------------------------------


def small_network(normalize_input=False, normalize_returns=False, seed=0, num_actions=2, size=3):
    torch.manual_seed(seed)
    return SampleFactoryActorCritic((size,), num_actions, [16], [16], nonlinearity='tanh', normalize_input=normalize_input, normalize_returns=normalize_returns)


class SmallNetworkSpaces:
    """The environment `build_learner` is given: `small_network`'s spaces (APPO's learner reads none of them)."""

    single_observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    single_action_space = gymnasium.spaces.Discrete(2)


def make_learner(networks, **settings):
    trainer_settings = dict(learning_rate=1e-3, num_epochs=1, num_batches_per_epoch=1)
    learner_settings = {}
    for name in ('gamma', 'gae_lambda', 'reward_scale', 'reward_clip', 'value_bootstrap', 'with_vtrace', 'vtrace_rho', 'vtrace_c'):
        if name in settings:
            learner_settings[name] = settings.pop(name)
    trainer_settings.update(settings)
    policy_set = PolicySet(networks)
    trainers = [agent.PolicyTrainer(network, **trainer_settings) for network in networks]
    return agent.AppoLearner(policy_set, trainers, gamma=learner_settings.pop('gamma', GAMMA), **learner_settings)


def acted_buffer(policy_set, steps=6, envs=2, size=3, seed=0, offset=0.0, policy=None):
    """A rollout of random observations whose log-probs, logits and values come from `policy_set` itself (values of
    the T steps only: the learner computes the bootstrap value)."""
    generator = torch.Generator().manual_seed(seed)
    observation = offset + torch.randn(steps + 1, envs, size, generator=generator)
    policy = torch.zeros(steps + 1, envs, dtype=torch.int64) if policy is None else policy
    with torch.no_grad():
        output = policy_set(observation.flatten(0, 1), policy.flatten())
    logits = output.logits.reshape(steps + 1, envs, -1)
    action = torch.multinomial(torch.softmax(logits[:-1].flatten(0, 1), 1), 1, generator=generator).reshape(steps, envs)
    log_prob = torch.log_softmax(logits[:-1], 2).gather(2, action.unsqueeze(2)).squeeze(2)
    discount = torch.full((steps, envs), GAMMA)
    discount[2, 0] = 0.0
    return {
        'observation': observation[:-1].clone(),
        'last_observation': observation[-1].clone(),
        'action': action,
        'log_prob': log_prob,
        'logits': logits[:-1].clone(),
        'value': output.value.reshape(steps + 1, envs)[:-1].clone(),
        'policy': policy,
        'reward': torch.randn(steps, envs, generator=generator),
        'discount': discount,
        'time_out': torch.zeros(steps, envs, dtype=torch.bool),
    }


def with_bootstrap(policy_set, buffer):
    """The buffer's values [T, N] and below them V(x_T) of `policy_set` on the last observations: [T + 1, N]."""
    with torch.no_grad():
        bootstrap = policy_set(buffer['last_observation'], buffer['policy'][-1]).value
    return torch.cat([buffer['value'], bootstrap[None]])


def gae(reward, discount, value, lambda_):
    reward, discount, value = reward.double().numpy(), discount.double().numpy(), value.double().numpy()
    advantages, next_advantage = np.zeros_like(reward), np.zeros(reward.shape[1])
    for t in reversed(range(reward.shape[0])):
        next_advantage = reward[t] + discount[t] * value[t + 1] - value[t] + discount[t] * lambda_ * next_advantage
        advantages[t] = next_advantage
    return torch.from_numpy(advantages).float()


def test_targets_scale_and_clip_rewards_and_bootstrap_time_limits_with_gae_in_reward_units():
    network = small_network(normalize_returns=True)
    network.return_normalizer.update(torch.tensor([10.0, 20.0, 30.0]))  # mean 20, var 66.7
    learner = make_learner([network], gae_lambda=0.8, reward_scale=2.0, reward_clip=1.5, value_bootstrap=True)
    buffer = acted_buffer(learner.network)
    buffer['time_out'][4, 1] = True
    buffer['discount'][4, 1] = 0.0
    advantages, returns = learner.targets(buffer)

    std = math.sqrt(network.return_normalizer.var.item() + 1e-5)
    values = with_bootstrap(learner.network, buffer).clamp(-5, 5) * std + network.return_normalizer.mean.item()
    reward = (2.0 * buffer['reward']).clamp(-1.5, 1.5)
    reward[4, 1] += GAMMA * values[4, 1]
    expected = gae(reward, buffer['discount'], values, 0.8)
    assert_close(advantages, expected, rtol=1e-5, atol=1e-4)
    assert_close(returns, expected + values[:-1], rtol=1e-5, atol=1e-4)


def linear_value_network(weight, bias):
    """A one-input network whose value is V(x) = weight x + bias (no hidden layer)."""
    network = SampleFactoryActorCritic((1,), 2, [], [], nonlinearity='tanh')
    with torch.no_grad():
        network.value_head.weight.fill_(weight)
        network.value_head.bias.fill_(bias)
    return network


def test_gae_bootstraps_from_the_learners_current_value_of_the_last_observation():
    """Sample Factory's learner recomputes V(x_T) with its current network from the stored last observation; the
    actor's own V(x_T) may be many updates old, so the rollout no longer carries it."""
    learner = make_learner([linear_value_network(2.0, 0.5), linear_value_network(-1.0, 0.0)], gae_lambda=0.5)
    buffer = {
        'observation': torch.tensor([[[3.0], [5.0]], [[4.0], [6.0]]]),  # T = 2 steps of N = 2 environments
        'last_observation': torch.tensor([[1.0], [2.0]]),
        'value': torch.tensor([[0.2, 0.0], [0.4, 0.0]]),  # the actor's values of x_0 and x_1, from older parameters
        'reward': torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
        'discount': torch.full((2, 2), GAMMA),
        'time_out': torch.zeros(2, 2, dtype=torch.bool),
        'policy': torch.tensor([[0, 1], [0, 1], [0, 1]]),  # environment k plays policy k
    }
    advantages, returns = learner.targets(buffer)
    # Environment 0, policy 0: V(x_T) = 2 x 1 + 0.5 = 2.5 (not the actor's). lambda = 0.5, gamma = 0.9:
    # delta_1 = 0 + 0.9 x 2.5 - 0.4 = 1.85; delta_0 = 1 + 0.9 x 0.4 - 0.2 = 1.16; A_0 = 1.16 + 0.45 x 1.85 = 1.9925.
    # Environment 1, policy 1: V(x_T) = -2. delta_1 = 1 - 1.8 - 0 = -0.8; delta_0 = 0; A_0 = 0.45 x -0.8 = -0.36.
    assert_close(advantages, torch.tensor([[1.9925, -0.36], [1.85, -0.8]]))
    assert_close(returns, torch.tensor([[2.1925, -0.36], [2.25, -0.8]]))
    assert_close(learner.bootstrap_values(buffer), torch.tensor([2.5, -2.0]))


def test_vtrace_targets_use_the_current_network_against_the_behaviour_log_probs():
    network = small_network(seed=1)
    learner = make_learner([network], with_vtrace=True, vtrace_rho=1.0, vtrace_c=1.0)
    buffer = acted_buffer(learner.network)
    # On-policy (the network that acted is the current one): V-trace is the n-step return and its advantage.
    advantages, returns = learner.targets(buffer)
    values = with_bootstrap(learner.network, buffer)
    expected_returns = gae(buffer['reward'], buffer['discount'], values, 1.0) + values[:-1]
    assert_close(returns, expected_returns, rtol=1e-5, atol=1e-5)
    next_returns = torch.cat([returns[1:], values[-1:]])
    assert_close(advantages, buffer['reward'] + buffer['discount'] * next_returns - values[:-1], rtol=1e-5, atol=1e-5)
    # Off-policy: behaviour log-probs 0.5 lower make every rho = e^0.5, clipped to 1: the same targets as on-policy.
    on_policy = (advantages, returns)
    buffer['log_prob'] -= 0.5
    for got, expected in zip(learner.targets(buffer), on_policy):
        assert_close(got, expected)
    # 0.5 higher make rho = e^-0.5 < 1: the TD errors and the advantages shrink.
    buffer['log_prob'] += 1.0
    advantages, returns = learner.targets(buffer)
    assert not torch.allclose(returns, on_policy[1])
    assert_close(advantages[-1], math.exp(-0.5) * (buffer['reward'][-1] + buffer['discount'][-1] * values[-1] - values[-2]))


def test_update_takes_sample_factorys_step_on_contiguous_trajectory_major_minibatches():
    network = small_network(seed=2)
    reference = copy.deepcopy(network)
    learner = make_learner([network], gae_lambda=0.8, num_batches_per_epoch=2, ppo_clip_ratio=0.2, ppo_clip_value=0.3,
                           value_loss_coeff=0.7, exploration_loss_coeff=0.05, learning_rate=1e-2, adam_eps=1e-5)  # fmt: skip
    buffer = acted_buffer(learner.network, steps=6, envs=2)
    values = with_bootstrap(learner.network, buffer)  # before the update: the targets are computed first
    learner.update([buffer])

    advantage = gae(buffer['reward'], buffer['discount'], values, 0.8)
    returns = advantage + buffer['value']
    flat = lambda x: x.transpose(0, 1).flatten(0, 1)  # noqa: E731  env 0's 6 steps, then env 1's
    samples = {'observation': flat(buffer['observation']), 'action': flat(buffer['action']), 'log_prob': flat(buffer['log_prob']),
               'value': flat(buffer['value']), 'advantage': flat(advantage), 'return': flat(returns)}  # fmt: skip
    optimizer = torch.optim.Adam(reference.parameters(), lr=1e-2, eps=1e-5)
    for indices in (torch.arange(0, 6), torch.arange(6, 12)):  # minibatch 0 is env 0's trajectory, 1 is env 1's
        mb = {name: value[indices] for name, value in samples.items()}
        output = reference(mb['observation'])
        log_pi = torch.log_softmax(output.logits, 1)
        ratio = torch.exp(log_pi.gather(1, mb['action'][:, None]).squeeze(1) - mb['log_prob']).clamp(0.05, 20)
        a = (mb['advantage'] - mb['advantage'].mean()) / mb['advantage'].std()
        policy_loss = -torch.minimum(ratio * a, ratio.clamp(1 / 1.2, 1.2) * a).mean()
        clipped = mb['value'] + (output.value - mb['value']).clamp(-0.3, 0.3)
        value_loss = torch.maximum((output.value - mb['return']) ** 2, (clipped - mb['return']) ** 2).mean()
        entropy = -(log_pi.exp() * log_pi).sum(1).mean()
        optimizer.zero_grad()
        (policy_loss + 0.7 * value_loss - 0.05 * entropy).backward()
        optimizer.step()
    for name, tensor in reference.state_dict().items():
        assert_close(learner.network.policies[0].state_dict()[name], tensor, rtol=1e-5, atol=1e-6, msg=name)
    statistics = learner.learner_statistics()
    assert learner.learner_steps == 1 and learner.trainers[0].sgd_steps == 2
    assert {'policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction', 'learning_rate', 'explained_variance'} <= set(statistics)


def test_linear_decay_and_kl_adaptive_schedules_run_per_minibatch_and_per_epoch():
    buffer = acted_buffer(PolicySet([small_network(seed=3)]))
    learner = make_learner([small_network(seed=3)], learning_rate=1e-3, lr_schedule='linear_decay', total_sgd_steps=8,
                           num_epochs=2, num_batches_per_epoch=2)  # fmt: skip
    seen = []
    loss = learner.trainers[0].minibatch_loss  # called after the learning rate of the step is set
    learner.trainers[0].minibatch_loss = lambda mb: (seen.append(learner.trainers[0].optimizer.param_groups[0]['lr']), loss(mb))[1]
    learner.update([buffer])
    learner.update([buffer])
    assert seen == pytest.approx([1e-3, 8.75e-4, 7.5e-4, 6.25e-4, 5e-4, 3.75e-4, 2.5e-4, 1.25e-4])

    # kl_adaptive_minibatch: a KL far above 2 x threshold after every step divides by 1.5 each time.
    learner = make_learner([small_network(seed=3)], learning_rate=1e-3, lr_schedule='kl_adaptive_minibatch', lr_schedule_kl_threshold=1e-12,
                           num_epochs=1, num_batches_per_epoch=2)  # fmt: skip
    buffer['log_prob'] -= 1.0  # the behaviour policy "was" far from the current one
    learner.update([buffer])
    assert learner.trainers[0].learning_rate == pytest.approx(1e-3 / 1.5**2)
    # kl_adaptive_epoch: once per epoch, and a KL below threshold / 2 multiplies by 1.5 (capped).
    learner = make_learner([small_network(seed=3)], learning_rate=1e-3, lr_schedule='kl_adaptive_epoch', lr_schedule_kl_threshold=1e3,
                           lr_adaptive_max=2e-3, num_epochs=2, num_batches_per_epoch=2)  # fmt: skip
    learner.update([buffer])
    assert learner.trainers[0].learning_rate == pytest.approx(2e-3)  # 1e-3 x 1.5 = 1.5e-3, then capped at 2e-3


def test_return_statistics_follow_sample_factory_and_round_trip_through_a_checkpoint(tmp_path):
    learner = make_learner([small_network(normalize_returns=True, normalize_input=True, seed=4)], gae_lambda=0.8)
    buffer = acted_buffer(learner.network, offset=3.0)
    advantages, returns = learner.targets(buffer)
    learner.update([buffer])
    statistics = learner.network.policies[0].return_normalizer
    assert statistics.mean.item() == pytest.approx(returns.mean().item(), rel=1e-5)
    assert statistics.var.item() == pytest.approx(returns.var(correction=0).item(), rel=1e-4)
    inputs = learner.network.policies[0].observation_normalizer
    assert_close(inputs.mean.double(), buffer['observation'].flatten(0, 1).double().mean(0), rtol=1e-5, atol=1e-6)
    assert inputs.count.item() == pytest.approx(12, rel=1e-5)

    path = checkpoint.save_checkpoint(str(tmp_path / 'APPO_x_0.ckpt'), agent_name='APPO', environment_name='x', iteration=0,
                                      state=learner.state_dict(), counters={'env_steps': 12}, flags={})  # fmt: skip
    restored = make_learner([small_network(normalize_returns=True, normalize_input=True, seed=5)], gae_lambda=0.8)
    restored.load_state_dict(checkpoint.load_checkpoint(path)['state'])
    for name in ('return_normalizer.mean', 'return_normalizer.var', 'return_normalizer.count', 'observation_normalizer.mean',
                 'observation_normalizer.var', 'observation_normalizer.count', 'policy_head.weight'):  # fmt: skip
        assert torch.equal(restored.network.policies[0].state_dict()[name], learner.network.policies[0].state_dict()[name]), name
    assert restored.trainers[0].sgd_steps == 1 and restored.learner_steps == 1
    # Both continue identically.
    for each in (learner, restored):
        each.update([buffer])
    for name, tensor in learner.network.state_dict().items():
        assert torch.equal(restored.network.state_dict()[name], tensor), name


def test_the_ratio_is_exactly_one_before_the_first_gradient_step_with_normalize_input():
    """The actors' log-probs were made with the input statistics before this batch; the learner folds the batch
    in only after its epochs, so its first minibatch scores them with the same statistics: ratio exactly 1."""
    network = small_network(normalize_input=True, seed=6)
    network.observation_normalizer.update(torch.randn(50, 3))  # statistics near N(0, 1)
    learner = make_learner([network], num_epochs=2, num_batches_per_epoch=1)
    buffer = acted_buffer(learner.network, offset=40.0)  # far from the statistics: folding them in moves every input
    # The old log-probs as the learner's first minibatch will compute them: one pass, trajectory-major order.
    flat = lambda x: x.transpose(0, 1).flatten(0, 1)  # noqa: E731
    with torch.no_grad():
        logits = network(flat(buffer['observation'])).logits
    buffer['log_prob'] = torch.log_softmax(logits, 1).gather(1, flat(buffer['action'])[:, None]).squeeze(1).view(2, 6).T.contiguous()
    ratios = []
    loss = learner.trainers[0].minibatch_loss
    learner.trainers[0].minibatch_loss = lambda mb: (lambda result: (ratios.append(result[1]['ratio']), result)[1])(loss(mb))
    learner.update([buffer])
    assert torch.equal(ratios[0], torch.ones(12))  # exactly
    assert not torch.equal(ratios[1], torch.ones(12))  # the second epoch follows a gradient step
    assert network.observation_normalizer.mean.mean().item() > 5.0  # the batch was folded in, after the epochs

    # Folding the batch in before the epochs (the bug this mends) would break the ratio at once.
    broken = make_learner([copy.deepcopy(network)], num_epochs=1)
    buffer = acted_buffer(broken.network, offset=-80.0)
    broken.network.policies[0].fold_observations(flat(buffer['observation']))
    ratios.clear()
    loss = broken.trainers[0].minibatch_loss
    broken.trainers[0].minibatch_loss = lambda mb: (lambda result: (ratios.append(result[1]['ratio']), result)[1])(loss(mb))
    broken.update([buffer])
    assert (ratios[0] - 1).abs().max() > 1e-3


def test_several_policies_each_train_on_their_own_samples_only():
    networks = [small_network(seed=7), small_network(seed=8)]
    learner = make_learner([copy.deepcopy(n) for n in networks], num_epochs=1, num_batches_per_epoch=1)
    policy = torch.zeros(7, 2, dtype=torch.int64)
    policy[:, 1] = 1  # env 0 plays policy 0, env 1 plays policy 1
    buffer = acted_buffer(learner.network, policy=policy)
    learner.update([buffer])
    # Policy k trained as a single-policy learner on env k's column alone.
    for k in range(2):
        alone = make_learner([copy.deepcopy(networks[k])], num_epochs=1, num_batches_per_epoch=1)
        column = {name: (value[k] if name == 'last_observation' else value[:, k : k + 1]) for name, value in buffer.items()}
        column['policy'] = torch.zeros_like(column['policy'])
        column['last_observation'] = column['last_observation'][None]
        alone.update([column])
        for name, tensor in alone.network.policies[0].state_dict().items():
            assert_close(learner.network.policies[k].state_dict()[name], tensor, msg=f'policy {k} {name}')
    statistics = learner.learner_statistics()
    assert 'policy_0/policy_loss' in statistics and 'policy_1/policy_loss' in statistics


def test_actor_redraws_each_environments_policy_every_ten_episodes():
    env = gym_env.create_classic_vector_env('CartPole-v1', 3, seed=1, max_episode_steps=2)  # an episode every 2 steps
    policy_set = PolicySet([small_network(seed=9, size=4), small_network(seed=10, size=4)])
    actor = PolicySetActor(policy_set, env, 40, GAMMA, False, seed=3)
    spec = policy_set_rollout_spec(env, 3, 40)
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
    actor.collect(buffer)
    policy = buffer['policy'].numpy()
    for i in range(3):
        changes = np.flatnonzero(policy[1:, i] != policy[:-1, i]) + 1
        assert all(step % 20 == 0 for step in changes), changes  # only after every 10th 2-step episode
    assert len(set(policy.flatten())) == 2
    # Each policy's rows hold that policy's own log-probs and values.
    with torch.no_grad():
        for k in range(2):
            mask = buffer['policy'][:-1] == k
            output = policy_set.policies[k](buffer['observation'][mask])
            assert_close(buffer['value'][mask], output.value)
            assert_close(buffer['logits'][mask], output.logits)
    assert buffer['time_out'].any()  # every 2 steps is a time limit


def test_core_settings_translate_sample_factory_settings_and_refuse_what_does_not_fit():
    base = AppoSettings(
        environment_kind='atari', use_rnn=False, num_policies=1, rollout=128, num_envs_per_worker=2, num_workers=16, batch_size=1024,
        num_batches_per_epoch=8, num_epochs=4, recurrence=1, async_rl=True, num_batches_to_accumulate=2, max_policy_lag=1000, gamma=0.99,
        train_for_env_steps=100_000_000, env_frameskip=4, env_framestack=4, summaries_use_frameskip=True, num_train_steps=1_000_000,
        num_iterations=10, environment_name='atari_amidar', save_best_after=100_000,
    )  # fmt: skip
    core = base.core_settings()
    assert core.environment_name == 'Amidar' and core.environment_frame_skip == 4
    assert (core.num_actors, core.num_envs_per_actor, core.unroll_length, core.discount) == (16, 2, 128, 0.99)
    assert core.batch_rollouts == 32  # 8192 samples / 256 per rollout
    assert core.num_buffers_per_actor == 4  # 2 batches of 32 rollouts over 16 workers
    assert core.max_policy_lag == 31  # lag >= 1000 SGD steps <=> >= 32 updates of 32 SGD steps
    assert core.num_iterations == 25  # 1e8 frames / 4 = 2.5e7 agent steps in 1e6-step iterations
    assert base.replace(given_flags=frozenset({'num_iterations'})).core_settings().num_iterations == 10
    assert base.replace(num_policies=2).core_settings().batch_rollouts == 64
    with pytest.raises(ValueError, match=r'--batch_size=1000 x --num_batches_per_epoch=8 = 8000 samples must be a multiple of --rollout=128'):
        base.replace(batch_size=1000).core_settings()
    with pytest.raises(ValueError, match=r'--async_rl=false'):
        base.replace(async_rl=False).core_settings()
    assert base.replace(async_rl=False, num_workers=32).core_settings().batch_rollouts == 32
    with pytest.raises(ValueError, match='--use_rnn=true takes one policy here'):
        base.replace(use_rnn=True, num_policies=2).core_settings()


# --- Sample Factory's budget units: the linear_decay plan and save_best_after -------------------------------------------


def card_run(**overrides):
    """The model card's settings as the core runs them (`AppoSettings.core_settings`) for a run of 1M-step iterations,
    and the updates of its budget as main_loop counts them."""
    card, _ = sample_factory_config.load_config(CARD)
    card_settings = AppoSettings(environment_kind='atari').with_values(
        {**card, 'environment_name': 'atari_amidar', 'num_train_steps': 1_000_000, 'num_iterations': 10, 'adam_fused': False, **overrides}
    )
    settings = card_settings.core_settings()
    steps_per_update = settings.batch_rollouts * settings.num_envs_per_actor * settings.unroll_length
    return settings, math.ceil(settings.num_train_steps / steps_per_update) * settings.num_iterations


def learning_rates_seen(learner, buffer):
    """The learning rate of every SGD step of one update."""
    seen, trainer = [], learner.trainers[0]
    loss = trainer.minibatch_loss  # called after the learning rate of the step is set
    trainer.minibatch_loss = lambda mb: (seen.append(trainer.optimizer.param_groups[0]['lr']), loss(mb))[1]
    learner.update([buffer])
    trainer.minibatch_loss = loss
    return seen


def test_linear_decay_follows_sample_factorys_plan_of_the_card_and_resumes_from_the_sgd_step_count():
    settings, total_updates = card_run()
    lr = settings.learning_rate
    # train_for_env_steps = 1e8 frames per policy: 1e8 // 1024 x 4 epochs = 97,656 x 4 = 390,624 SGD steps planned.
    networks = PolicySet([small_network(seed=11), small_network(seed=12)])
    learner = agent.build_learner(networks, SmallNetworkSpaces(), settings, total_updates, torch.device('cpu'))
    assert [trainer.linear_decay.decay_steps for trainer in learner.trainers] == [390_624, 390_624]
    # Each policy plays 1e8 / 4 = 2.5e7 agent steps and trains 4 epochs on each 1,024 of them: 97,656 SGD steps (a
    # quarter of the plan), so the rate ends at 0.75 x lr (the budget's own plan, 99,200 SGD steps, ended at 0.016 x lr).
    learner.trainers[0].sgd_steps = 97_656
    buffer = acted_buffer(learner.network)  # both environments play policy 0: 8 minibatches x 4 epochs = 32 SGD steps
    seen = learning_rates_seen(learner, buffer)
    assert seen[0] == pytest.approx(0.75 * lr, rel=1e-12)
    assert seen == pytest.approx([lr * (1 - step / 390_624) for step in range(97_656, 97_688)], rel=1e-12)
    assert learner.trainers[0].linear_decay(195_312) == pytest.approx(0.5 * lr, rel=1e-12)
    # A resumed learner continues from the saved SGD step count, exactly.
    restored_networks = PolicySet([small_network(seed=13), small_network(seed=14)])
    restored = agent.build_learner(restored_networks, SmallNetworkSpaces(), settings, total_updates, torch.device('cpu'))
    restored.load_state_dict(learner.state_dict())
    assert restored.trainers[0].sgd_steps == 97_688
    assert learning_rates_seen(restored, buffer) == learning_rates_seen(learner, buffer) == pytest.approx(
        [lr * (1 - step / 390_624) for step in range(97_688, 97_720)], rel=1e-12
    )
    # Without --train_for_env_steps the budget is --num_iterations x --num_train_steps (no Sample Factory setting):
    # the plan is all its SGD steps, so the rate reaches 0 at the end of the run (run_classic's and run_atari's runs).
    settings, total_updates = card_run(train_for_env_steps=0)
    assert total_updates == 10 * math.ceil(1_000_000 / 16_384)  # updates of 2 x 8 x 1,024 samples
    learner = agent.build_learner(networks, SmallNetworkSpaces(), settings, total_updates, torch.device('cpu'))
    assert learner.trainers[0].linear_decay.decay_steps == total_updates * 32


def test_save_best_after_counts_frames_per_policy_like_train_for_env_steps():
    # The card: 1e5 frames per policy, 4 frames per agent step, 2 policies: 1e5 x 2 / 4 = 50,000 agent steps of the
    # run (the experiment counts agent steps of all policies), as train_for_env_steps 1e8 -> 5e7.
    settings, _ = card_run()
    assert (settings.save_best_after, settings.train_for_env_steps) == (50_000, 50_000_000)
    settings, _ = card_run(num_policies=1)
    assert (settings.save_best_after, settings.train_for_env_steps) == (25_000, 25_000_000)
    settings, _ = card_run(num_policies=1, summaries_use_frameskip=False)  # env steps are agent steps
    assert (settings.save_best_after, settings.train_for_env_steps) == (100_000, 100_000_000)
    settings, _ = card_run(save_best_after=0)
    assert settings.save_best_after == 0


def test_bf16_learning_runs_the_minibatches_convnet_atari_encoder_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (1 epoch of 1 minibatch: one rollout of 8 steps x 4 envs of random frames) of run_atari's learner
    from the same network, without and with --bf16_learning: the bootstrap values V(x_T) are computed in float32
    either way, the minibatch's encoder in float32, then bfloat16; the loss moves by 0.006% (seeds 0-2:
    0.006-0.03%), the gradient keeps its direction (cosine 0.999)."""
    steps, envs = 8, 4
    run_atari = ATARI.replace(rollout=steps, num_envs_per_worker=envs, batch_size=steps * envs, num_batches_per_epoch=1, num_epochs=1)

    def build_learner(bf16):
        settings = run_atari.replace(bf16_learning=bf16).core_settings()
        torch.manual_seed(0)
        return agent.build_learner(agent.make_network(bf16_learning.ATARI_SPACES, settings), bf16_learning.ATARI_SPACES, settings, 10, torch.device('cpu'))

    def loss(update):
        statistics = update.statistics
        return statistics['policy_loss'] + ATARI.value_loss_coeff * statistics['value_loss'] - ATARI.exploration_loss_coeff * statistics['entropy']

    rollout = bf16_learning.atari_rollout(steps, envs)
    rollout.update(
        value=rollout['value'][:-1], logits=torch.randn(steps, envs, bf16_learning.NUM_ACTIONS, generator=torch.Generator().manual_seed(0)),
        time_out=torch.zeros(steps, envs, dtype=torch.bool), policy=torch.zeros(steps + 1, envs, dtype=torch.int64),
    )  # fmt: skip
    float32, bf16 = bf16_learning.updates_without_and_with_bf16(build_learner, [rollout])
    assert float32.conv_dtypes == [torch.float32, torch.float32] and bf16.conv_dtypes == [torch.float32, torch.bfloat16]
    assert loss(bf16) == pytest.approx(loss(float32), rel=0.02) and loss(bf16) != loss(float32)
    assert bf16.cosine_similarity(float32) > 0.99
