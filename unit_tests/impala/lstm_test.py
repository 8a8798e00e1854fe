"""IMPALA with its LSTM core (--use_lstm): the recurrent actor's buffers on real CartPole (the core state carried
across rollouts and zeroed at episode ends, the inputs of every step, the time-limit bootstrap), the learner's loss
on-policy against the n-step-return A2C loss with the core unrolled step by step, one update from two rollouts, and
the network choice, and eval_agent's video recorder passing steps on to the recurrent greedy actor."""

import copy
import math
import types

import gymnasium
import numpy as np
import pytest
import torch
from torch import nn
from torch.testing import assert_close

from deep_rl_zoo import evaluation, gym_env, multistep
from deep_rl_zoo.greedy_actors import RecurrentPolicyGreedyActor
from deep_rl_zoo.impala import agent
from deep_rl_zoo.impala.settings import ATARI, CLASSIC
from deep_rl_zoo.networks.common import MlpTorso
from deep_rl_zoo.networks.policy import RecurrentActorCritic
from deep_rl_zoo.rollouts import RecurrentOnPolicyActor, recurrent_rollout_spec
from unit_tests.ppo.agent_test import RecordingEnv

GAMMA = 0.9
CORE = 8


def small_network(observation_size=4, num_actions=2, seed=0):
    torch.manual_seed(seed)
    return RecurrentActorCritic(MlpTorso(observation_size, (16,), nn.Tanh), num_actions, core_size=CORE)


def empty_buffer(env, num_envs, unroll_length, core_size=CORE):
    """A buffer of the recurrent spec filled with NaN / -7 (True for flags) so that unwritten entries show."""
    spec = recurrent_rollout_spec(core_size)(env, num_envs, unroll_length)
    return {name: torch.full(shape, math.nan if dtype.is_floating_point else -7, dtype=dtype) for name, (shape, dtype) in spec.items()}


def unroll(network, buffer, num_steps):
    """The network over the buffer's first `num_steps` steps (T + 1 with the last observation), from its core state."""
    observation = torch.cat([buffer['observation'], buffer['last_observation'][None]])[:num_steps]
    with torch.no_grad():
        return network(
            observation, buffer['prev_action'][:num_steps], buffer['prev_reward'][:num_steps], buffer['episode_start'][:num_steps],
            (buffer['core_h'], buffer['core_c']),
        )  # fmt: skip


def test_collect_writes_the_core_state_and_inputs_and_carries_the_state_to_the_next_rollout():
    num_envs, unroll_length = 3, 40
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=5))
    network = small_network()
    actor = RecurrentOnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=1)
    first = empty_buffer(env, num_envs, unroll_length)
    actor.collect(first)

    assert {name: (tuple(tensor.shape), tensor.dtype) for name, tensor in first.items()} == {
        'observation': ((40, 3, 4), torch.float32),
        'last_observation': ((3, 4), torch.float32),
        'action': ((40, 3), torch.int64),
        'log_prob': ((40, 3), torch.float32),
        'value': ((41, 3), torch.float32),
        'reward': ((40, 3), torch.float32),
        'discount': ((40, 3), torch.float32),
        'core_h': ((3, CORE), torch.float32),
        'core_c': ((3, CORE), torch.float32),
        'prev_action': ((41, 3), torch.int64),
        'prev_reward': ((41, 3), torch.float32),
        'episode_start': ((41, 3), torch.bool),
    }
    for name, tensor in first.items():
        if name != 'episode_start':
            assert not (tensor.isnan().any() if tensor.is_floating_point() else (tensor == -7).any()), f'{name} not filled'

    # The very first rollout starts every episode: zero state, no previous action or reward.
    assert not first['core_h'].any() and not first['core_c'].any()
    assert first['episode_start'][0].all() and not first['prev_action'][0].any() and not first['prev_reward'][0].any()

    # Step t + 1's inputs are step t's action and reward, or nothing where step t ended the episode.
    done = torch.from_numpy(np.stack([step.terminated | step.truncated for step in env.steps]))
    assert done.sum() >= 3, 'the test needs episode ends inside the rollout'
    action = torch.from_numpy(np.stack(env.actions))
    assert torch.equal(first['episode_start'][1:], done)
    assert torch.equal(first['prev_action'][1:], torch.where(done, 0, action))
    assert torch.equal(first['prev_reward'][1:], torch.where(done, 0.0, 1.0))
    assert torch.equal(first['action'], action)

    # The learner's unroll from the stored state reproduces the actor's log-probabilities and values.
    output = unroll(network, first, unroll_length + 1)
    log_pi = torch.log_softmax(output.logits[:-1], dim=-1).gather(-1, action[..., None])[..., 0]
    assert_close(first['log_prob'], log_pi)
    assert_close(first['value'], output.value)

    # The next rollout starts from the state after the last step (not after the bootstrap step): non-zero.
    second = empty_buffer(env, num_envs, unroll_length)
    actor.collect(second)
    carried = unroll(network, first, unroll_length).state
    assert_close((second['core_h'], second['core_c']), carried)
    assert second['core_h'].abs().sum(dim=1).min() > 0 and not second['episode_start'][0].any()
    for name in ('prev_action', 'prev_reward', 'episode_start'):
        assert torch.equal(second[name][0], first[name][-1]), name
    assert torch.equal(second['observation'][0], first['last_observation'])
    output = unroll(network, second, unroll_length + 1)
    assert_close(second['value'], output.value)


def test_an_episode_end_at_the_rollout_boundary_zeroes_the_next_initial_state_and_a_time_limit_bootstraps_with_the_core():
    num_envs, unroll_length = 2, 5
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', num_envs, seed=3, max_episode_steps=5))
    network = small_network(seed=1)
    with torch.no_grad():  # a value head far from 0 makes the bootstrap term easy to see
        network.value_head.bias.fill_(10.0)
    actor = RecurrentOnPolicyActor(network, env, unroll_length, GAMMA, terminal_on_life_loss=False, seed=2)
    buffers = [empty_buffer(env, num_envs, unroll_length) for _ in range(3)]
    for buffer in buffers:
        actor.collect(buffer)
    for k, buffer in enumerate(buffers):
        steps = env.steps[k * unroll_length : (k + 1) * unroll_length]
        assert all(step.truncated.all() == (t == unroll_length - 1) for t, step in enumerate(steps))  # CartPole lasts > 5
        # Every rollout is one whole episode: it starts from zeros, with the episode-start flag.
        assert not buffer['core_h'].any() and not buffer['core_c'].any() and buffer['episode_start'][0].all()
        assert not buffer['episode_start'][1:unroll_length].any() and buffer['episode_start'][unroll_length].all()
        # The truncated last step adds gamma V(final observation), with the state, action and reward that led there.
        final = steps[-1]
        bootstrap = dict(buffer)
        bootstrap['last_observation'] = torch.from_numpy(final.final_observation)
        bootstrap['prev_action'] = torch.cat([buffer['prev_action'][:-1], buffer['action'][-1:]])
        bootstrap['prev_reward'] = torch.cat([buffer['prev_reward'][:-1], torch.ones(1, num_envs)])
        bootstrap['episode_start'] = torch.cat([buffer['episode_start'][:-1], torch.zeros(1, num_envs, dtype=torch.bool)])
        final_value = unroll(network, bootstrap, unroll_length + 1).value[-1]
        assert_close(buffer['reward'][-1], 1.0 + GAMMA * final_value)
        assert (buffer['reward'][-1] > 5.0).all() and (buffer['reward'][:-1] == 1.0).all()
        assert (buffer['discount'][-1] == 0.0).all() and (buffer['discount'][:-1] == GAMMA).all()


T, B, OBSERVATION_SIZE = 4, 2, 3


def make_batch(seed=0):
    """A rollout [T, B] sampled from the network's own policy with a non-zero initial core state, whose column 0 ends
    an episode after step 1 (so step 2 starts one)."""
    generator = torch.Generator().manual_seed(seed)
    network = small_network(OBSERVATION_SIZE, 2, seed)
    batch = {
        'observation': torch.randn(T, B, OBSERVATION_SIZE, generator=generator),
        'last_observation': torch.randn(B, OBSERVATION_SIZE, generator=generator),
        'reward': torch.randn(T, B, generator=generator),
        'discount': torch.full((T, B), GAMMA),
        'core_h': torch.randn(B, CORE, generator=generator),
        'core_c': torch.randn(B, CORE, generator=generator),
        'prev_reward': torch.randn(T + 1, B, generator=generator),
        'episode_start': torch.zeros(T + 1, B, dtype=torch.bool),
    }
    batch['discount'][1, 0] = 0.0
    batch['episode_start'][2, 0] = True
    # Step by step as the actor does: sample, then the action is the next step's previous action.
    observations = torch.cat([batch['observation'], batch['last_observation'][None]])
    state, prev_action, actions, log_probs = (batch['core_h'], batch['core_c']), torch.zeros(B, dtype=torch.int64), [], []
    with torch.no_grad():
        for t in range(T + 1):
            output = network(observations[t : t + 1], prev_action[None], batch['prev_reward'][t : t + 1], batch['episode_start'][t : t + 1], state)
            state, distribution = output.state, torch.distributions.Categorical(logits=output.logits[0])
            actions.append(prev_action)
            prev_action = distribution.sample()
            log_probs.append(distribution.log_prob(prev_action))
    batch['prev_action'] = torch.stack(actions)
    batch['action'] = batch['prev_action'][1:].clone()
    batch['log_prob'] = torch.stack(log_probs[:T])
    return network, batch


def stepwise(network, batch):
    """log pi(a_s|x_s) [T, B], V(x_s) [T, B] and V(x_T) [B]: the core stepped one step at a time from the stored state."""
    observations = torch.cat([batch['observation'], batch['last_observation'][None]])
    state, log_probs, values = (batch['core_h'], batch['core_c']), [], []
    with torch.no_grad():
        for t in range(T + 1):
            step = slice(t, t + 1)
            output = network(observations[step], batch['prev_action'][step], batch['prev_reward'][step], batch['episode_start'][step], state)
            state = output.state
            values.append(output.value[0])
            if t < T:
                log_probs.append(torch.log_softmax(output.logits[0], dim=-1).gather(1, batch['action'][t][:, None])[:, 0])
    return torch.stack(log_probs), torch.stack(values[:T]), values[T]


def make_learner(network, **overrides):
    settings = dict(learning_rate=0.01, entropy_coef=0.0, value_coef=1.0, max_grad_norm=0.0, total_updates=10, anneal_learning_rate=True)
    settings.update(overrides)
    return agent.ImpalaLearner(network, **settings)


def test_on_policy_with_the_lstm_the_targets_are_n_step_returns_and_the_loss_is_a2c():
    network, batch = make_batch()
    log_prob, values, bootstrap = stepwise(network, batch)
    assert_close(log_prob, batch['log_prob'])  # on-policy: pi = mu
    _, statistics = make_learner(network).loss(batch)
    returns = multistep.discounted_returns(batch['reward'], batch['discount'], bootstrap)
    assert_close(statistics['policy_loss'], -((returns - values) * log_prob).mean())
    assert_close(statistics['value_loss'], (0.5 * (returns - values) ** 2).mean())
    assert statistics['importance_weight_mean'].item() == pytest.approx(1.0)
    # The stored initial state matters: from zeros the values differ.
    zeroed = dict(batch, core_h=torch.zeros(B, CORE), core_c=torch.zeros(B, CORE))
    assert not torch.allclose(stepwise(network, zeroed)[1][:, 1], values[:, 1])


def test_update_from_two_rollouts_equals_one_step_on_the_whole_batch():
    network, batch = make_batch(seed=1)
    reference = copy.deepcopy(network)
    learner = make_learner(network, optimizer='rmsprop', optimizer_eps=0.01)
    per_environment = ('last_observation', 'core_h', 'core_c')
    halves = [{name: value[i : i + 1] if name in per_environment else value[:, i : i + 1] for name, value in batch.items()} for i in range(B)]
    learner.update(halves)  # two rollouts of one environment each, as two actors would send them
    assert learner.learner_steps == 1

    other = make_learner(reference, optimizer='rmsprop', optimizer_eps=0.01)
    loss, _ = other.loss(batch)
    other.optimizer.zero_grad()
    loss.backward()
    other.optimizer.step()
    for mine, theirs in zip(network.parameters(), reference.parameters()):
        assert_close(mine, theirs)
    assert any(not torch.equal(a, b) for a, b in zip(network.parameters(), small_network(OBSERVATION_SIZE, 2, 1).parameters()))


def fake_env(observation_shape, num_actions=4):
    observation_space = gymnasium.spaces.Box(0, 255, observation_shape, np.uint8)
    return types.SimpleNamespace(single_observation_space=observation_space, single_action_space=gymnasium.spaces.Discrete(num_actions))


def test_make_network_with_use_lstm_puts_the_256_unit_core_on_the_chosen_torso():
    classic = agent.make_network(fake_env((4,)), CLASSIC.replace(use_lstm=True))
    assert isinstance(classic, RecurrentActorCritic) and type(classic.torso).__name__ == 'MlpTorso' and classic.core_size == 256
    nature = agent.make_network(fake_env((4, 84, 84)), ATARI.replace(use_lstm=True, torso='nature'))
    assert type(nature.torso).__name__ == 'NatureCnnTorso' and nature.core.input_size == 512 + 4 + 1
    resnet = agent.make_network(fake_env((4, 84, 84)), ATARI.replace(use_lstm=True, torso='impala_resnet'))
    assert type(resnet.torso).__name__ == 'ImpalaResNetTorso' and resnet.core.input_size == 256 + 4 + 1
    assert not isinstance(agent.make_network(fake_env((4,)), CLASSIC.replace(use_lstm=False)), RecurrentActorCritic)
    with pytest.raises(ValueError, match='--torso applies to Atari frames only'):
        agent.make_network(fake_env((4,)), ATARI.replace(torso='impala_resnet', use_lstm=True))


def test_build_actor_carries_the_core_for_the_recurrent_network_only():
    env = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=0)
    recurrent, feed_forward = (CLASSIC.replace(unroll_length=3, discount=GAMMA, use_lstm=use_lstm) for use_lstm in (True, False))
    assert type(agent.build_actor(agent.make_network(env, recurrent), env, recurrent, 0, torch.device('cpu'))) is RecurrentOnPolicyActor
    assert type(agent.build_actor(agent.make_network(env, feed_forward), env, feed_forward, 0, torch.device('cpu'))).__name__ == 'OnPolicyActor'
    env.close()


def test_eval_agents_video_recorder_passes_every_step_on_to_the_recurrent_actor():
    """eval_agent wraps its actor to record a video: the recurrent actor must still see each step (episode ends)."""
    network = small_network()
    actor = RecurrentPolicyGreedyActor(network)
    recorder = evaluation._RecordingActor(actor, types.SimpleNamespace(render=lambda: np.zeros((2, 2, 3), np.uint8)))
    observation = np.zeros((1, 4), np.float32)
    action = recorder.act(observation)
    reward, no = np.ones(1, np.float32), np.array([False])
    ended = gym_env.VectorStep(observation, reward, reward, np.array([True]), no, no, observation)
    recorder.observe(action, ended)
    assert actor._episode_start.tolist() == [True] and recorder.recording is False
    going_on = ended._replace(terminated=np.array([False]))
    recorder.observe(action, going_on)
    assert actor._episode_start.tolist() == [False] and actor._prev_reward.tolist() == [1.0]
