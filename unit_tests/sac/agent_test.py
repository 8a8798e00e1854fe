"""Tests of the discrete SAC learner and its actor (deep_rl_zoo/sac/agent.py, rollouts.TransitionActor): one
gradient step on a hand-made transition with SGD checked against numbers worked out by hand, the replay filled in
time order with one stream per actor environment and the exact replay ratio, the actor's steps (a time limit's
final observation included) and a checkpoint round trip.
"""

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.testing import assert_close

from deep_rl_zoo import checkpoint, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.networks.policy import CategoricalPolicyOutput
from deep_rl_zoo.replay import Transition
from deep_rl_zoo.rollouts import TransitionActor
from deep_rl_zoo.sac import agent
from deep_rl_zoo.sac.settings import SacSettings
from deep_rl_zoo.soft_actor_critic import soft_policy_loss, soft_q_learning

LN2 = math.log(2.0)


class LinearPolicy(nn.Module):
    """logits = W s with W = 0: the uniform policy."""

    def __init__(self):
        super().__init__()
        self.policy_head = nn.Linear(2, 2, bias=False)
        nn.init.zeros_(self.policy_head.weight)

    def forward(self, observation):
        return CategoricalPolicyOutput(self.policy_head(observation.float()))


def linear_critic(weight):
    """Q(s, .) = U s (row a of U gives Q(s, a))."""
    critic = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        critic.weight.copy_(torch.tensor(weight))
    return critic


class OneTransitionReplay:
    """Replay stand-in that returns one hand-made transition."""

    size = 1

    def sample(self, batch_size):
        assert batch_size == 1
        return Transition(
            s_tm1=np.array([[1.0, 0.0]], np.float32),
            a_tm1=np.array([0]),
            r_t=np.array([1.0], np.float32),
            discount_t=np.array([0.9], np.float32),
            s_t=np.array([[0.0, 1.0]], np.float32),
        )


LEARNER_SETTINGS = dict(
    num_actions=2,
    learning_rate=0.1,
    batch_size=1,
    min_replay_size=1,
    learn_interval=1,
    target_network_update_interval=1,
    target_smoothing_coef=0.5,
    target_entropy_ratio=0.5,
    initial_temperature=1.0,
    optimizer=torch.optim.SGD,
)


def make_learner(replay, **overrides):
    settings = {**LEARNER_SETTINGS, **overrides}
    critics = agent.TwinCritics(linear_critic([[1.0, 0.0], [0.0, 1.0]]), linear_critic([[0.5, 2.0], [0.0, 3.0]]))
    return agent.SacLearner(LinearPolicy(), critics, replay, **settings)


def test_one_gradient_step_moves_critics_policy_temperature_and_targets_as_worked_out_by_hand():
    # s = (1, 0), a = 0, r = 1, gamma' = 0.9, s' = (0, 1); pi uniform (W = 0); alpha = 1 (log alpha = 0).
    # Q1 = [[1, 0], [0, 1]] s, Q2 = [[0.5, 2], [0, 3]] s; targets equal the critics at the start.
    #   Q1(s) = (1, 0), Q2(s) = (0.5, 0); Qbar1(s') = (0, 1), Qbar2(s') = (2, 3): min (0, 1)
    #   V(s') = 0.5 * 0 + 0.5 * 1 + alpha ln 2 = 0.5 + ln 2;  y = 1 + 0.9 V(s')
    #   td1 = y - 1, td2 = y - 0.5; dJ/dU1[0] = -td1 s, dJ/dU2[0] = -td2 s: SGD (lr 0.1) adds 0.1 td_i to U_i[0, 0]
    # Policy: min Q(s) = (0.5, 0); g_a = alpha log pi_a - minQ_a = (-ln2 - 0.5, -ln2); dJ/dlogit_j = pi_j (g_j - E_pi g)
    #   = (0.5 * -0.25, 0.5 * 0.25) = (-0.125, 0.125); logits = W s, so W[:, 0] moves by -0.1 * that = (0.0125, -0.0125).
    # Temperature: J = log alpha (H - 0.5 ln 2), H = ln 2: d/dlog alpha = 0.5 ln 2; log alpha -> -0.05 ln 2.
    # Targets (tau 0.5, every step): halfway between the old and the new critics.
    learner = make_learner(OneTransitionReplay())
    learner.learn()

    y = 1.0 + 0.9 * (0.5 + LN2)
    td1, td2 = y - 1.0, y - 0.5
    assert_close(learner.critics.critic_1.weight, torch.tensor([[1.0 + 0.1 * td1, 0.0], [0.0, 1.0]]))
    assert_close(learner.critics.critic_2.weight, torch.tensor([[0.5 + 0.1 * td2, 2.0], [0.0, 3.0]]))
    assert_close(learner.network.policy_head.weight, torch.tensor([[0.0125, 0.0], [-0.0125, 0.0]]))
    assert_close(learner.log_alpha.detach(), torch.tensor(-0.05 * LN2))
    assert_close(learner.target_critics.critic_1.weight, torch.tensor([[1.0 + 0.05 * td1, 0.0], [0.0, 1.0]]))
    assert_close(learner.target_critics.critic_2.weight, torch.tensor([[0.5 + 0.05 * td2, 2.0], [0.0, 3.0]]))
    assert not learner.target_critics.critic_1.weight.requires_grad

    statistics = learner.learner_statistics()
    assert learner.learner_steps == 1
    assert statistics['q_loss'] == pytest.approx(0.5 * td1**2 + 0.5 * td2**2, rel=1e-6)
    assert statistics['policy_loss'] == pytest.approx(-LN2 - 0.25, rel=1e-6)  # sum pi (alpha log pi - min Q)
    assert statistics['temperature_loss'] == pytest.approx(0.0)  # log alpha was 0
    assert statistics['alpha'] == pytest.approx(1.0)
    assert statistics['entropy'] == pytest.approx(LN2, rel=1e-6)
    assert statistics['mean_q'] == pytest.approx(0.25)  # min(Q1, Q2)(s) = (0.5, 0)
    assert statistics['critic_grad_norm'] == pytest.approx(math.hypot(td1, td2), rel=1e-6)
    assert statistics['policy_grad_norm'] == pytest.approx(math.hypot(0.125, 0.125), rel=1e-6)


def test_a_hard_target_update_copies_the_critics_only_every_interval():
    learner = make_learner(OneTransitionReplay(), target_network_update_interval=2, target_smoothing_coef=1.0)
    start = learner.target_critics.critic_1.weight.clone()
    learner.learn()
    assert torch.equal(learner.target_critics.critic_1.weight, start)
    learner.learn()
    assert torch.equal(learner.target_critics.critic_1.weight, learner.critics.critic_1.weight)
    assert torch.equal(learner.target_critics.critic_2.weight, learner.critics.critic_2.weight)


def actor_buffer(observations, actions, terminal, episode_end=None):
    """One actor's steps for one environment: observations [T + 1] (the last one follows the unroll)."""
    steps = len(actions)
    observations = torch.tensor(observations, dtype=torch.float32)
    return {
        'observation': observations[:-1, None],
        'action': torch.tensor(actions)[:, None],
        'reward': torch.arange(1.0, steps + 1)[:, None],
        'terminal': torch.tensor(terminal)[:, None],
        'episode_end': torch.tensor(episode_end if episode_end is not None else terminal)[:, None],
        'final_observation': observations[1:, None],
    }


def test_update_adds_each_actor_to_its_own_stream_in_time_order_and_keeps_the_replay_ratio():
    # Two actors of one environment each, 3 steps per update; one gradient step per 2 env steps once the replay
    # holds 4 transitions. A transition becomes sampleable when the next step is written (n = 1).
    replay = replay_lib.UniformReplay(capacity=100, observation_shape=(2,), observation_dtype=np.float32, discount=0.9, num_streams=2)
    learner = make_learner(replay, batch_size=2, min_replay_size=4, learn_interval=2)
    first = [actor_buffer([[0, 0], [0, 1], [0, 2], [0, 3]], [0, 1, 0], [False] * 3),
             actor_buffer([[1, 0], [1, 1], [1, 2], [1, 3]], [1, 1, 0], [False, True, False])]
    learner.update(first)
    # Replay sizes after each add: 0 (both first slots wait for the next step), 3 (stream 1's terminal slot is
    # complete at once), 4 (stream 1's new episode waits). Learning starts at the third add: 2 env steps count, 1
    # gradient step.
    assert replay.size == 4
    assert (learner.env_steps, learner.learning_env_steps, learner.learner_steps) == (6, 2, 1)
    stream_0 = replay.transitions_at(np.array([0, 0]), np.array([0, 1]))
    np.testing.assert_array_equal(stream_0.s_tm1, [[0, 0], [0, 1]])
    np.testing.assert_array_equal(stream_0.s_t, [[0, 1], [0, 2]])
    np.testing.assert_array_equal(stream_0.a_tm1, [0, 1])
    np.testing.assert_allclose(stream_0.r_t, [1, 2])
    np.testing.assert_allclose(stream_0.discount_t, [0.9, 0.9])
    stream_1 = replay.transitions_at(np.array([1, 1]), np.array([0, 1]))
    np.testing.assert_array_equal(stream_1.s_tm1, [[1, 0], [1, 1]])
    np.testing.assert_allclose(stream_1.discount_t, [0.9, 0.0])  # the terminal cuts the bootstrap

    learner.update([actor_buffer([[0, 3], [0, 4], [0, 5], [0, 6]], [0, 0, 0], [False] * 3),
                    actor_buffer([[1, 3], [1, 4], [1, 5], [1, 6]], [1, 1, 1], [False] * 3)])
    # 6 more env steps with the replay ready: 8 in all, 4 gradient steps; the streams continue across updates.
    assert (learner.env_steps, learner.learning_env_steps, learner.learner_steps) == (12, 8, 4)
    across = replay.transitions_at(np.array([0]), np.array([2]))
    np.testing.assert_array_equal(across.s_tm1, [[0, 2]])
    np.testing.assert_array_equal(across.s_t, [[0, 3]])


def test_a_truncated_step_bootstraps_from_its_final_observation_in_replay():
    replay = replay_lib.UniformReplay(capacity=100, observation_shape=(2,), observation_dtype=np.float32, discount=0.9, num_streams=1)
    learner = make_learner(replay, batch_size=1, min_replay_size=100)
    buffer = actor_buffer([[0, 0], [0, 1], [9, 9]], [0, 1], [False, False], episode_end=[False, True])
    buffer['final_observation'][1, 0] = torch.tensor([0.0, 2.0])  # the time limit's last observation; [9, 9] is the reset
    learner.update([buffer])
    transition = replay.transitions_at(np.array([0]), np.array([1]))
    np.testing.assert_array_equal(transition.s_t, [[0, 2]])
    np.testing.assert_allclose(transition.discount_t, [0.9])  # no terminal: bootstrapped
    assert learner.learner_steps == 0  # the replay is not yet min_replay_size


class RecordingEnv:
    """A VectorEnvironment that remembers its steps."""

    def __init__(self, env):
        self.env = env
        self.steps = []
        self.observations = []

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self):
        observation = self.env.reset()
        self.observations.append(np.copy(observation))
        return observation

    def step(self, action):
        step = self.env.step(action)
        self.steps.append(gym_env.VectorStep(*(np.copy(field) for field in step)))
        self.observations.append(np.copy(step.observation))
        return step


def empty_buffer(env, num_envs, unroll_length):
    spec = agent.transition_spec(env, num_envs, unroll_length)
    return {name: torch.full(shape, -7, dtype=dtype) if dtype != torch.bool else torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}


def test_the_actor_writes_every_step_and_a_time_limit_s_final_observation():
    num_envs, unroll_length = 2, 7
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=3, max_episode_steps=5))
    network = agent.make_network(env, SacSettings())
    actor = TransitionActor(network, env, unroll_length, terminal_on_life_loss=False, seed=2)
    buffer = empty_buffer(env, num_envs, unroll_length)
    actor.collect(buffer)
    buffer2 = empty_buffer(env, num_envs, unroll_length)
    finished = actor.collect(buffer2)

    steps = env.steps
    truncated = np.stack([step.truncated & ~step.terminated for step in steps])
    assert truncated.sum() >= 2, 'the 5-step limit should truncate'
    for t, step in enumerate(steps):
        chunk, row = (buffer, t) if t < unroll_length else (buffer2, t - unroll_length)
        np.testing.assert_array_equal(chunk['observation'][row].numpy(), env.observations[t])
        np.testing.assert_array_equal(chunk['reward'][row].numpy(), step.reward)
        np.testing.assert_array_equal(chunk['terminal'][row].numpy(), step.terminated)
        np.testing.assert_array_equal(chunk['episode_end'][row].numpy(), step.terminated | step.truncated)
        np.testing.assert_array_equal(chunk['final_observation'][row].numpy(), step.final_observation)
        assert set(chunk['action'][row].tolist()) <= {0, 1}
        for i in np.flatnonzero(truncated[t]):  # the final observation is the episode's, not the reset's
            assert not np.array_equal(chunk['final_observation'][row, i].numpy(), chunk['observation'][row, i].numpy())
    assert all(length <= 5 for _, length in finished)


def test_state_dict_round_trips_through_a_checkpoint(tmp_path):
    learner = make_learner(OneTransitionReplay(), optimizer=torch.optim.Adam)
    for _ in range(3):
        learner.learn()
    learner.env_steps, learner.learning_env_steps = 30, 12
    path = str(tmp_path / 'SAC_test_0.ckpt')
    checkpoint.save_checkpoint(path, agent_name='SAC', environment_name='test', iteration=0, state=learner.state_dict(), counters={}, flags={})
    loaded = checkpoint.load_checkpoint(path, agent_name='SAC', environment_name='test')

    restored = make_learner(OneTransitionReplay(), optimizer=torch.optim.Adam)
    restored.load_state_dict(loaded['state'])
    for name in ('network', 'critics', 'target_critics'):
        for key, value in getattr(learner, name).state_dict().items():
            assert torch.equal(getattr(restored, name).state_dict()[key], value), (name, key)
    assert torch.equal(restored.log_alpha, learner.log_alpha) and restored.log_alpha.requires_grad
    assert (restored.env_steps, restored.learning_env_steps, restored.learner_steps) == (30, 12, 3)
    # Same optimizer states: the next step is the same in both.
    learner.learn()
    restored.learn()
    assert torch.equal(restored.critics.critic_1.weight, learner.critics.critic_1.weight)
    assert torch.equal(restored.network.policy_head.weight, learner.network.policy_head.weight)
    assert torch.equal(restored.log_alpha, learner.log_alpha)


def test_bad_settings_and_continuous_actions_are_refused_with_clear_messages():
    with pytest.raises(ValueError, match='min_replay_size'):
        make_learner(OneTransitionReplay(), batch_size=8, min_replay_size=4)
    with pytest.raises(ValueError, match='initial_temperature'):
        make_learner(OneTransitionReplay(), initial_temperature=0.0)
    env = gym_env.create_vector_env('continuous', 'Pendulum-v1', 1, 0)
    try:
        with pytest.raises(ValueError, match='discrete actions only'):
            agent.make_network(env, SacSettings())
    finally:
        env.close()


def test_a_fixed_temperature_stays_while_critics_and_policy_learn():
    # --nolearn_temperature: the same step as the hand-worked one above, with log alpha left at log 1 = 0.
    learner = make_learner(OneTransitionReplay(), learn_temperature=False)
    learner.learn()

    assert_close(learner.log_alpha.detach(), torch.tensor(0.0))
    assert_close(learner.network.policy_head.weight, torch.tensor([[0.0125, 0.0], [-0.0125, 0.0]]))


class FixedBatchReplay:
    """Replay stand-in that returns the same minibatch every time."""

    def __init__(self, transition):
        self.transition = transition
        self.size = len(transition.a_tm1)

    def sample(self, batch_size):
        assert batch_size == self.size
        return self.transition


def cartpole_batch(batch_size=4, seed=0):
    generator = np.random.default_rng(seed)
    return Transition(
        s_tm1=generator.normal(size=(batch_size, 4)).astype(np.float32),
        a_tm1=generator.integers(0, 2, size=batch_size),
        r_t=np.ones(batch_size, np.float32),
        discount_t=np.full(batch_size, 0.99, np.float32),
        s_t=generator.normal(size=(batch_size, 4)).astype(np.float32),
    )


def test_a_shared_torso_is_trained_by_the_critics_loss_only_and_the_policy_loss_trains_its_head():
    # --shared_torso: one torso under the policy and both critics. One SGD step must move the torso by the critics'
    # gradient alone and the policy's head by the policy loss's gradient on the features of the torso after that step.
    env = gym_env.create_vector_env('classic', 'CartPole-v1', 1, 0)
    try:
        settings = SacSettings(shared_torso=True)
        torch.manual_seed(0)
        policy = agent.make_network(env, settings)
        critics = agent.make_critics(policy, env, settings)
    finally:
        env.close()
    assert policy.torso.torso is critics.torso  # one torso, in both
    batch = FixedBatchReplay(cartpole_batch())
    learner = agent.SacLearner(policy, critics, batch, **{**LEARNER_SETTINGS, 'batch_size': 4, 'min_replay_size': 4, 'target_smoothing_coef': 1.0, 'learn_temperature': False})
    assert {id(p) for p in learner.policy_parameters} == {id(learner.network.policy_head.weight), id(learner.network.policy_head.bias)}
    assert learner.target_critics.torso is not critics.torso  # the target critics have a torso of their own

    # The expected step, worked out with autograd on copies.
    reference_policy, reference_critics = copy.deepcopy(policy), copy.deepcopy(critics)
    reference_policy.torso.torso = reference_critics.torso
    target_critics = copy.deepcopy(critics)
    s_tm1, s_t = torch.from_numpy(batch.transition.s_tm1), torch.from_numpy(batch.transition.s_t)
    a_tm1, r_t, discount_t = (torch.from_numpy(batch.transition.a_tm1), torch.from_numpy(batch.transition.r_t), torch.from_numpy(batch.transition.discount_t))
    alpha = torch.tensor(1.0)
    q1_tm1, q2_tm1 = reference_critics(s_tm1)
    with torch.no_grad():
        logits_t, (q1_t, q2_t) = reference_policy(s_t).logits, target_critics(s_t)
    q_loss = soft_q_learning(q1_tm1, q2_tm1, a_tm1, r_t, discount_t, logits_t, q1_t, q2_t, alpha).loss.mean()
    critic_gradients = torch.autograd.grad(q_loss, list(reference_critics.parameters()))
    with torch.no_grad():
        for parameter, gradient in zip(reference_critics.parameters(), critic_gradients):
            parameter -= 0.1 * gradient
    policy_loss = soft_policy_loss(reference_policy(s_tm1).logits, q1_tm1.detach(), q2_tm1.detach(), alpha).loss.mean()
    head = list(reference_policy.policy_head.parameters())
    head_gradients = torch.autograd.grad(policy_loss, head)

    learner.learn()
    for parameter, expected in zip(critics.parameters(), reference_critics.parameters()):
        assert_close(parameter, expected)
    for parameter, expected, gradient in zip(policy.policy_head.parameters(), head, head_gradients):
        assert_close(parameter, expected - 0.1 * gradient)
    for target, online in zip(learner.target_critics.parameters(), critics.parameters()):  # tau 1: a copy
        assert torch.equal(target, online)


def test_a_shared_torso_checkpoint_keeps_one_torso_in_policy_and_critics(tmp_path):
    env = gym_env.create_vector_env('classic', 'CartPole-v1', 1, 0)
    try:
        settings = SacSettings(shared_torso=True)
        policy = agent.make_network(env, settings)
        learner = agent.SacLearner(policy, agent.make_critics(policy, env, settings), FixedBatchReplay(cartpole_batch()), **{**LEARNER_SETTINGS, 'batch_size': 4, 'min_replay_size': 4})
        fresh = agent.make_network(env, settings)
        restored = agent.SacLearner(fresh, agent.make_critics(fresh, env, settings), FixedBatchReplay(cartpole_batch()), **{**LEARNER_SETTINGS, 'batch_size': 4, 'min_replay_size': 4})
    finally:
        env.close()
    learner.learn()
    restored.load_state_dict(learner.state_dict())
    assert restored.network.torso.torso is restored.critics.torso  # loading keeps the sharing
    assert torch.equal(restored.critics.torso.body[0].weight, learner.critics.torso.body[0].weight)
    learner.learn()
    restored.learn()
    assert torch.equal(restored.network.policy_head.weight, learner.network.policy_head.weight)
    assert torch.equal(restored.critics.head_2.weight, learner.critics.head_2.weight)
