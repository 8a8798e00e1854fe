"""Tests of the PPO actor and learner (deep_rl_zoo/ppo/agent.py), in-process on real gymnasium environments.

Expected values are recomputed here from first principles (log-softmax, the Gaussian density, a hand-written GAE
loop, a hand-written PPO loss), never with the library's own helpers.
"""

import copy
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import checkpoint, gym_env
from deep_rl_zoo.networks.policy import GaussianActorCritic, mlp_actor_critic
from deep_rl_zoo.ppo import agent
from deep_rl_zoo.ppo.settings import ATARI, PpoSettings
from deep_rl_zoo.rollouts import OnPolicyActor, policy_distribution
from unit_tests import bf16_learning

GAMMA = 0.9


class RecordingEnv:
    """A VectorEnvironment that remembers its first observation, the actions it got and the steps it returned."""

    def __init__(self, env):
        self.env = env
        self.first_observation = None
        self.actions = []
        self.steps = []

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self):
        self.first_observation = np.copy(self.env.reset())
        return self.first_observation

    def step(self, action):
        self.actions.append(np.array(action, copy=True))
        step = self.env.step(action)
        self.steps.append(gym_env.VectorStep(*(np.copy(field) for field in step)))
        return step


def empty_buffer(env, num_envs, unroll_length):
    """A rollout buffer of the actor's spec, filled with NaN / -7 so that unwritten entries show."""
    spec = agent.rollout_spec(env, num_envs, unroll_length)
    return {
        name: torch.full(shape, math.nan if dtype.is_floating_point else -7, dtype=dtype) for name, (shape, dtype) in spec.items()
    }


def values_of(network, observations):
    with torch.no_grad():
        return network(torch.as_tensor(observations)).value


def make_learner(network, total_updates=4, anneal_clip_epsilon=False, **overrides):
    settings = dict(
        learning_rate=1e-3,
        num_epochs=1,
        num_minibatches=1,
        clip_epsilon=0.2,
        clip_value=False,
        entropy_coef=0.01,
        value_coef=0.5,
        gae_lambda=0.8,
        normalize_advantages=True,
        max_grad_norm=0.5,
        total_updates=total_updates,
        anneal_learning_rate=True,
        anneal_clip_epsilon=anneal_clip_epsilon,
    )
    settings.update(overrides)
    return agent.PpoLearner(network, **settings)


def test_collect_fills_the_buffer_from_a_cartpole_vector_env():
    num_envs, unroll_length = 3, 40
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=5))
    torch.manual_seed(0)
    network = agent.make_network(env, PpoSettings())
    actor = OnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=1)
    buffer = empty_buffer(env, num_envs, unroll_length)
    finished = actor.collect(buffer)

    assert {name: (tuple(tensor.shape), tensor.dtype) for name, tensor in buffer.items()} == {
        'observation': ((40, 3, 4), torch.float32),
        'action': ((40, 3), torch.int64),
        'log_prob': ((40, 3), torch.float32),
        'value': ((41, 3), torch.float32),
        'reward': ((40, 3), torch.float32),
        'discount': ((40, 3), torch.float32),
    }
    assert len(env.steps) == unroll_length
    for name, tensor in buffer.items():
        assert not (tensor.isnan().any() if tensor.is_floating_point() else (tensor == -7).any()), f'{name} not filled'

    # Observation t is what the agent saw before action t: the reset, then each step's (autoreset) observation.
    seen = np.stack([env.first_observation] + [step.observation for step in env.steps[:-1]])
    assert np.array_equal(buffer['observation'].numpy(), seen)
    assert np.array_equal(buffer['action'].numpy(), np.stack(env.actions))

    # log pi(a|s) of the acting network, recomputed with a log-softmax.
    with torch.no_grad():
        output = network(buffer['observation'].flatten(0, 1))
    log_pi = torch.log_softmax(output.logits, dim=1).gather(1, buffer['action'].flatten().unsqueeze(1)).squeeze(1)
    assert_close(buffer['log_prob'], log_pi.reshape(40, 3))
    assert_close(buffer['value'][:-1], output.value.reshape(40, 3))
    # values[T] bootstraps from the observation the next rollout starts from.
    assert_close(buffer['value'][-1], values_of(network, env.steps[-1].observation))

    done = np.stack([step.terminated | step.truncated for step in env.steps])
    assert done.sum() >= 3, 'the test needs episode ends inside the rollout'
    assert not np.stack([step.truncated for step in env.steps]).any()  # 500-step limit: no bootstrapping here
    assert np.array_equal(buffer['reward'].numpy(), np.ones((40, 3), np.float32))
    assert np.array_equal(buffer['discount'].numpy(), (GAMMA * (1.0 - done)).astype(np.float32))
    assert (buffer['discount'].numpy()[done] == 0.0).all()

    # Finished episodes, in step then env order: a CartPole episode's return equals its length.
    expected, lengths = [], np.zeros(num_envs, dtype=int)
    for step_done in done:
        lengths += 1
        for i in np.flatnonzero(step_done):
            expected.append((float(lengths[i]), int(lengths[i])))
            lengths[i] = 0
    assert finished == expected

    # The next rollout continues the same episodes.
    second = empty_buffer(env, num_envs, unroll_length)
    actor.collect(second)
    assert np.array_equal(second['observation'][0].numpy(), env.steps[unroll_length - 1].observation)
    assert_close(second['value'][0], buffer['value'][-1])


def test_a_time_limit_adds_the_discounted_value_of_the_final_observation_to_the_last_reward():
    num_envs, unroll_length = 2, 12
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=3, max_episode_steps=5))
    torch.manual_seed(1)
    network = agent.make_network(env, PpoSettings())
    with torch.no_grad():  # a value head far from 0 makes the bootstrap term easy to see
        network.value_head.bias.fill_(10.0)
    actor = OnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=2)
    buffer = empty_buffer(env, num_envs, unroll_length)
    actor.collect(buffer)

    truncated = np.stack([step.truncated & ~step.terminated for step in env.steps])
    done = np.stack([step.terminated | step.truncated for step in env.steps])
    assert truncated.sum() >= 4, 'every 5th step should be a time limit'
    for t, step in enumerate(env.steps):
        for i in range(num_envs):
            if truncated[t, i]:
                final_value = values_of(network, step.final_observation[i : i + 1])[0]
                assert not np.array_equal(step.final_observation[i], step.observation[i])  # autoreset happened
                assert_close(buffer['reward'][t, i], 1.0 + GAMMA * final_value)
                assert buffer['reward'][t, i] > 5.0
            else:
                assert buffer['reward'][t, i] == 1.0
    # The episode still ends for GAE: the bootstrap is in the reward, not in the discount.
    assert np.array_equal(buffer['discount'].numpy(), (GAMMA * (1.0 - done)).astype(np.float32))


def hand_made_buffer(network, unroll_length=6, num_envs=2, seed=0):
    """A rollout with random observations whose log-probs and values come from `network` itself."""
    generator = torch.Generator().manual_seed(seed)
    observation = torch.randn(unroll_length + 1, num_envs, 4, generator=generator)
    with torch.no_grad():
        output = network(observation.flatten(0, 1))
    logits = output.logits.reshape(unroll_length + 1, num_envs, -1)[:-1]
    action = torch.multinomial(torch.softmax(logits.flatten(0, 1), dim=1), 1, generator=generator).reshape(unroll_length, num_envs)
    log_prob = torch.log_softmax(logits, dim=2).gather(2, action.unsqueeze(2)).squeeze(2)
    discount = torch.full((unroll_length, num_envs), GAMMA)
    discount[2, 0] = 0.0  # an episode end inside the rollout
    return {
        'observation': observation[:-1].clone(),
        'action': action,
        'log_prob': log_prob,
        'value': output.value.reshape(unroll_length + 1, num_envs).clone(),
        'reward': torch.randn(unroll_length, num_envs, generator=generator),
        'discount': discount,
    }


def gae(reward, discount, value, lambda_):
    """A_t = delta_t + discount_t * lambda * A_{t+1}, written out step by step in numpy."""
    reward, discount, value = reward.double().numpy(), discount.double().numpy(), value.double().numpy()
    advantages = np.zeros_like(reward)
    next_advantage = np.zeros(reward.shape[1])
    for t in reversed(range(reward.shape[0])):
        delta = reward[t] + discount[t] * value[t + 1] - value[t]
        next_advantage = delta + discount[t] * lambda_ * next_advantage
        advantages[t] = next_advantage
    return torch.from_numpy(advantages).float()


def reference_update(network, buffer, lr=1e-3, clip_epsilon=0.2, entropy_coef=0.01, value_coef=0.5, lambda_=0.8):
    """One full-batch PPO step written out from the paper (eq. 9) with the implementation details the learner
    documents: normalised advantages, unclipped value loss, global gradient-norm clipping 0.5, Adam eps 1e-5."""
    network = copy.deepcopy(network)
    advantage = gae(buffer['reward'], buffer['discount'], buffer['value'], lambda_).flatten()
    returns = advantage + buffer['value'][:-1].flatten()
    output = network(buffer['observation'].flatten(0, 1))
    log_pi = torch.log_softmax(output.logits, dim=1)
    log_prob = log_pi.gather(1, buffer['action'].flatten().unsqueeze(1)).squeeze(1)
    ratio = torch.exp(log_prob - buffer['log_prob'].flatten())
    normalised = (advantage - advantage.mean()) / (advantage.std(correction=0) + 1e-8)
    policy_loss = -torch.minimum(ratio * normalised, ratio.clamp(1 - clip_epsilon, 1 + clip_epsilon) * normalised).mean()
    value_loss = 0.5 * ((output.value - returns) ** 2).mean()
    entropy = -(log_pi.exp() * log_pi).sum(dim=1).mean()
    loss = policy_loss + value_coef * value_loss - entropy_coef * entropy
    optimizer = torch.optim.Adam(network.parameters(), lr=lr, eps=1e-5)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(network.parameters(), 0.5)
    optimizer.step()
    statistics = {'policy_loss': policy_loss.item(), 'value_loss': value_loss.item(), 'entropy': entropy.item()}
    return network, statistics, advantage, returns


def test_update_takes_one_ppo_step_and_records_its_statistics():
    torch.manual_seed(3)
    network = mlp_actor_critic(4, 2)
    with torch.no_grad():  # a far from uniform policy, so that the entropy term has a gradient that counts
        torch.nn.init.normal_(network.policy_head.weight, std=1.0)
    buffer = hand_made_buffer(network)
    expected_network, expected, advantage, returns = reference_update(network, buffer, entropy_coef=0.3)
    learner = make_learner(copy.deepcopy(network), entropy_coef=0.3)
    learner.update([buffer])

    assert learner.learner_steps == 1
    for name, before in network.state_dict().items():
        after = learner.network.state_dict()[name]
        assert not torch.equal(after, before), f'{name} did not change'
        assert_close(after, expected_network.state_dict()[name], atol=1e-6, rtol=1e-5, msg=f'{name} differs from the PPO step')

    statistics = learner.learner_statistics()
    assert set(statistics) == {
        'policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction', 'explained_variance', 'learning_rate', 'clip_epsilon'
    }
    # On the first (only) minibatch the policy is the one that collected the data: ratio 1 everywhere.
    assert abs(statistics['approx_kl']) < 1e-6
    assert statistics['clip_fraction'] == 0.0
    assert abs(statistics['policy_loss']) < 1e-6  # -mean of normalised advantages
    assert statistics['value_loss'] == pytest.approx(0.5 * (advantage**2).mean().item(), rel=1e-5)  # V - R = -A
    assert statistics['value_loss'] == pytest.approx(expected['value_loss'], rel=1e-5)
    assert statistics['entropy'] == pytest.approx(expected['entropy'], rel=1e-5)
    assert 0.05 < statistics['entropy'] < 0.6  # far from uniform (log 2 = 0.69)
    value = buffer['value'][:-1].flatten()
    assert statistics['explained_variance'] == pytest.approx(1 - (returns - value).var().item() / returns.var().item(), rel=1e-4)
    assert statistics['learning_rate'] == pytest.approx(1e-3)
    assert statistics['clip_epsilon'] == pytest.approx(0.2)
    assert learner.learner_statistics() == {}  # statistics are reset once read


def test_learning_rate_and_clip_range_anneal_linearly_to_zero_over_total_updates():
    torch.manual_seed(4)
    network = mlp_actor_critic(4, 2)
    buffer = hand_made_buffer(network)
    learner = make_learner(network, total_updates=4, anneal_clip_epsilon=True)
    learning_rates, clip_epsilons = [], []
    for _ in range(4):
        learner.update([buffer])
        statistics = learner.learner_statistics()
        learning_rates.append(statistics['learning_rate'])
        clip_epsilons.append(statistics['clip_epsilon'])
        assert learner.optimizer.param_groups[0]['lr'] == pytest.approx(statistics['learning_rate'])
    assert learning_rates == pytest.approx([1e-3, 7.5e-4, 5e-4, 2.5e-4])
    assert clip_epsilons == pytest.approx([0.2, 0.15, 0.1, 0.05])
    # Update 5 is past the schedule: learning rate 0, so the parameters no longer move.
    before = copy.deepcopy(learner.network.state_dict())
    learner.update([buffer])
    statistics = learner.learner_statistics()
    assert statistics['learning_rate'] == 0.0 and statistics['clip_epsilon'] == 0.0
    for name, tensor in learner.network.state_dict().items():
        assert torch.equal(tensor, before[name]), name


def test_state_dict_round_trips_through_a_checkpoint(tmp_path):
    torch.manual_seed(5)
    buffer = hand_made_buffer(mlp_actor_critic(4, 2))
    learner = make_learner(mlp_actor_critic(4, 2), total_updates=10)
    for _ in range(2):
        learner.update([buffer])
    path = checkpoint.save_checkpoint(
        str(tmp_path / 'PPO_CartPole-v1_0.ckpt'),
        agent_name='PPO',
        environment_name='CartPole-v1',
        iteration=0,
        state=learner.state_dict(),
        counters={'env_steps': 24},
        flags={},
    )
    restored = make_learner(mlp_actor_critic(4, 2), total_updates=10)  # different initial weights
    restored.load_state_dict(checkpoint.load_checkpoint(path)['state'])
    assert restored.learner_steps == 2
    for name, tensor in learner.network.state_dict().items():
        assert torch.equal(restored.network.state_dict()[name], tensor), name
    original_optimizer, restored_optimizer = learner.optimizer.state_dict(), restored.optimizer.state_dict()
    for index, state in original_optimizer['state'].items():
        for key, value in state.items():
            assert torch.equal(restored_optimizer['state'][index][key], value), (index, key)

    # Both continue identically: same schedule position, same Adam moments.
    learner.learner_statistics(), restored.learner_statistics()
    for each in (learner, restored):
        torch.manual_seed(6)  # minibatch order
        each.update([buffer])
    for name, tensor in learner.network.state_dict().items():
        assert torch.equal(restored.network.state_dict()[name], tensor), name
    assert restored.learner_statistics() == learner.learner_statistics()


def test_gaussian_policy_on_pendulum_clips_actions_for_the_env_but_stores_them_unclipped():
    num_envs, unroll_length = 2, 32
    env = RecordingEnv(gym_env.create_continuous_vector_env('Pendulum-v1', num_envs, seed=7))
    torch.manual_seed(8)
    network = agent.make_network(env, PpoSettings())
    with torch.no_grad():
        network.log_std.fill_(1.0)  # std e: about half the samples fall outside [-2, 2]
    actor = OnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=9)
    buffer = empty_buffer(env, num_envs, unroll_length)
    actor.collect(buffer)

    assert tuple(buffer['action'].shape) == (32, 2, 1) and buffer['action'].dtype == torch.float32
    assert tuple(buffer['observation'].shape) == (32, 2, 3)
    stored = buffer['action'].numpy()
    sent = np.stack(env.actions)
    assert (np.abs(stored) > 2.0).sum() >= 10, 'the test needs out-of-bounds samples'
    assert np.array_equal(sent, np.clip(stored, -2.0, 2.0))  # the env gets the clipped action ...
    assert np.abs(sent).max() <= 2.0

    # ... and the log-prob is that of the unclipped sample under N(mean, exp(log_std)^2).
    with torch.no_grad():
        output = network(buffer['observation'].flatten(0, 1))
    std = math.e
    action = buffer['action'].flatten(0, 1)
    log_density = (-0.5 * ((action - output.mean) / std) ** 2 - math.log(std) - 0.5 * math.log(2 * math.pi)).sum(dim=1)
    assert_close(buffer['log_prob'], log_density.reshape(32, 2))
    assert_close(buffer['value'][-1], values_of(network, env.steps[-1].observation))
    assert np.array_equal(buffer['reward'].numpy(), np.stack([step.reward for step in env.steps]))
    assert (buffer['reward'] <= 0).all()  # Pendulum's cost

    learner = make_learner(network, num_epochs=2, num_minibatches=4)
    log_std_before = network.log_std.detach().clone()
    learner.update([buffer])
    assert not torch.equal(network.log_std.detach(), log_std_before)
    statistics = learner.learner_statistics()
    assert all(math.isfinite(value) for value in statistics.values()), statistics
    assert statistics['entropy'] == pytest.approx(0.5 * math.log(2 * math.pi * math.e) + 1.0, abs=0.01)  # ~ log_std 1


def test_observation_statistics_that_made_the_old_log_probs_score_the_first_minibatch():
    """The ratio pi / pi_old starts at 1 and the value clip is centred on the actors' values: the learner's
    first minibatch sees the observation statistics the actors acted with; the batch is folded in afterwards."""
    unroll_length, num_envs, observation_size = 16, 2, 3
    torch.manual_seed(10)
    network = GaussianActorCritic(observation_size, 1, normalize_observations=True)
    with torch.no_grad():  # a mean that depends on the observation, so that a change of statistics moves it
        torch.nn.init.normal_(network.mean_head.weight, std=1.0)
        network.observation_normalizer.update(torch.randn(64, observation_size))  # statistics near N(0, 1)
    generator = torch.Generator().manual_seed(11)
    # Observations far from the statistics' mean 0 and std 1: folding them in changes every normalised input.
    observation = 50.0 + 10.0 * torch.randn(unroll_length + 1, num_envs, observation_size, generator=generator)
    actor_network = copy.deepcopy(network)  # what the actors hold: the last published parameters
    with torch.no_grad():
        output = actor_network(observation.flatten(0, 1))
        distribution = policy_distribution(output)
        action = distribution.sample()
        log_prob = distribution.log_prob(action)
    buffer = {
        'observation': observation[:-1].clone(),
        'action': action.reshape(unroll_length + 1, num_envs, 1)[:-1].clone(),
        'log_prob': log_prob.reshape(unroll_length + 1, num_envs)[:-1].clone(),
        'value': output.value.reshape(unroll_length + 1, num_envs).clone(),
        'reward': torch.randn(unroll_length, num_envs, generator=generator),
        'discount': torch.full((unroll_length, num_envs), GAMMA),
    }
    learner = make_learner(network, num_epochs=2, num_minibatches=4, clip_value=True)
    seen = []
    minibatch_step = learner._minibatch_step

    def recording_minibatch_step(minibatch, clip_epsilon):
        if not seen:  # the first minibatch, before any gradient step
            with torch.no_grad():
                now = learner.network(minibatch['observation'])
            seen.append((policy_distribution(now).log_prob(minibatch['action']), now.value, minibatch))
        minibatch_step(minibatch, clip_epsilon)

    learner._minibatch_step = recording_minibatch_step
    learner.update([buffer])

    first_log_prob, first_value, minibatch = seen[0]
    # Recomputed on a minibatch of another size than the actor's pass, so equal up to float32 rounding only.
    assert_close(first_log_prob, minibatch['log_prob'], atol=1e-5, rtol=0)  # ratio exp(log pi - log pi_old) = 1
    assert_close(first_value, minibatch['value'], atol=1e-5, rtol=0)  # the value clip's centre is V_old
    # Only after the epochs does the batch join the statistics, which then reach the actors with the parameters.
    normalizer = learner.network.observation_normalizer
    assert normalizer.count.item() == pytest.approx(64 + unroll_length * num_envs)
    assert (normalizer.mean > 10.0).all()


def test_discrete_actions_on_vector_observations_take_the_running_observation_normaliser():
    """rl-baselines3-zoo's `normalize` for classic control (MountainCar's position and velocity differ 10x in scale):
    the MLP actor-critic normalises its input; the learner folds each batch in after its epochs."""
    env = gym_env.create_classic_vector_env('MountainCar-v0', 2, seed=3)
    network = agent.make_network(env, PpoSettings(normalize_observations=True))
    normalizer = network.observation_normalizer
    with torch.no_grad():
        normalizer.update(torch.tensor([[-1.2, -0.07], [0.0, 0.07], [0.6, 0.0]]))
    assert_close(normalizer.mean, torch.tensor([-0.2, 0.0]), atol=1e-6, rtol=0)
    observation = torch.tensor([[-0.5, 0.01]])
    expected = copy.deepcopy(network)
    expected.observation_normalizer = None
    scaled = (observation - normalizer.mean) / torch.sqrt(normalizer.var + 1e-8)
    with torch.no_grad():
        assert_close(network(observation).logits, expected(scaled).logits)
        assert_close(network(observation).value, expected(scaled).value)
    unroll_length, num_envs = 4, 2
    buffer = empty_buffer(env, num_envs, unroll_length)
    actor = OnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=5)
    actor.collect(buffer)
    count_before = normalizer.count.item()
    make_learner(network).update([buffer])
    assert normalizer.count.item() == pytest.approx(count_before + unroll_length * num_envs)
    assert agent.make_network(env, PpoSettings()).observation_normalizer is None  # off by default: checkpoints keep their keys
    env.close()


def test_bf16_learning_runs_the_minibatches_nature_cnn_in_bfloat16_and_moves_the_loss_by_under_2_percent():
    """One update (1 epoch of 1 minibatch: 8 steps x 4 envs of random frames) of run_atari's learner from the same
    network, without and with --bf16_learning: the torso's first convolution computes in float32, then bfloat16; the
    loss moves by 0.1% (seeds 0-2: 0.008-0.1%) and the gradient keeps its direction (cosine 0.999)."""

    bf16_learning.check_the_nature_cnn_update(agent, ATARI.replace(num_epochs=1, num_minibatches=1))
