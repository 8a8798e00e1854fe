"""DQN agent, in process: learning, target network, epsilon, life-loss terminals, replay warm-up, state round trip,
and the Q-learning update of a hand-built batch worked out by hand."""

import copy
import itertools

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import checkpoint, episodes, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.dqn import settings as dqn_settings
from deep_rl_zoo.dqn.agent import Dqn, build_dqn, make_network
from deep_rl_zoo.gym_env import VectorStep
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.value import QNetwork, nature_cnn_q_network
from deep_rl_zoo.replay import Transition
from deep_rl_zoo.schedule import LinearSchedule
from unit_tests.value_agents import CARTPOLE_VALUES, FixedBatchReplay

CARTPOLE = dqn_settings.CLASSIC.replace(**CARTPOLE_VALUES)

OBSERVATION_SIZE = 3
NUM_ACTIONS = 2


def make_agent(
    *,
    min_replay_size=8,
    batch_size=4,
    learn_interval=1,
    target_network_update_interval=3,
    terminal_on_life_loss=False,
    epsilon=LinearSchedule(1.0, 0.1, 10),
    seed=0,
    network=None,
    optimizer=None,
    replay=None,
):
    torch.manual_seed(seed)
    network = network or nn.Sequential(nn.Linear(OBSERVATION_SIZE, 16), nn.ReLU(), nn.Linear(16, NUM_ACTIONS))
    replay = replay or replay_lib.UniformReplay(100, (OBSERVATION_SIZE,), np.float32, discount=0.9, seed=seed)
    return Dqn(
        network=network,
        optimizer=optimizer or torch.optim.Adam(network.parameters(), lr=1e-2),
        replay=replay,
        exploration_epsilon=epsilon,
        min_replay_size=min_replay_size,
        learn_interval=learn_interval,
        target_network_update_interval=target_network_update_interval,
        batch_size=batch_size,
        max_grad_norm=10.0,
        terminal_on_life_loss=terminal_on_life_loss,
        seed=seed,
    )


def fake_step(observation, reward=1.0, terminated=False, truncated=False, life_loss=False):
    """A one-environment VectorStep."""
    observation = np.asarray(observation, np.float32).reshape(1, OBSERVATION_SIZE)
    return VectorStep(
        observation=observation,
        reward=np.array([reward], np.float32),
        raw_reward=np.array([reward], np.float32),
        terminated=np.array([terminated]),
        truncated=np.array([truncated]),
        life_loss=np.array([life_loss]),
        final_observation=observation.copy(),
    )


def feed(agent, num_steps, start=0, **step_fields):
    """Acts and observes `num_steps` fake steps with observations [t, t+1, t+2] / 10."""
    for t in range(start, start + num_steps):
        observation = np.array([[t, t + 1, t + 2]], np.float32) / 10
        action = agent.act(observation)
        agent.observe(action, fake_step(observation + 0.1, **step_fields))


def parameters_of(network):
    return [parameter.detach().clone() for parameter in network.parameters()]


def same(left, right):
    return all(torch.equal(a, b) for a, b in zip(left, right))


# ----------------------------------------------------------------------------------- target network


def test_learn_changes_online_network_and_refreshes_target_on_schedule():
    agent = make_agent(min_replay_size=10**6, batch_size=4, target_network_update_interval=3)  # never learns by itself
    feed(agent, 12)
    assert agent.learner_steps == 0
    initial = parameters_of(agent.online_network)
    assert same(parameters_of(agent.target_network), initial)

    agent.learn()
    after_one = parameters_of(agent.online_network)
    assert not same(after_one, initial), 'one learn() must change the online network'
    assert same(parameters_of(agent.target_network), initial), 'target must stay frozen before the interval'

    agent.learn()
    assert same(parameters_of(agent.target_network), initial)
    assert not same(parameters_of(agent.online_network), initial)

    agent.learn()  # third update: the target is refreshed from the online network
    assert agent.learner_steps == 3
    assert same(parameters_of(agent.target_network), parameters_of(agent.online_network))
    assert not same(parameters_of(agent.target_network), initial)

    refreshed = parameters_of(agent.target_network)
    agent.learn()
    assert same(parameters_of(agent.target_network), refreshed)
    assert not same(parameters_of(agent.online_network), refreshed)


def test_target_network_gets_no_gradient():
    agent = make_agent(min_replay_size=10**6)
    feed(agent, 12)
    agent.learn()
    assert all(not parameter.requires_grad and parameter.grad is None for parameter in agent.target_network.parameters())


# ----------------------------------------------------------------------------------------- epsilon


def test_epsilon_follows_linear_schedule_of_env_steps():
    schedule = LinearSchedule(1.0, 0.1, 10)
    agent = make_agent(epsilon=schedule, min_replay_size=10**6)
    for t in range(15):
        assert agent.env_steps == t
        assert agent.epsilon == schedule(t)
        feed(agent, 1, start=t)
    assert agent.agent_statistics()['exploration_epsilon'] == pytest.approx(0.1)


def test_epsilon_zero_acts_greedily_and_epsilon_one_explores():
    greedy = make_agent(epsilon=LinearSchedule(0.0, 0.0, 1), min_replay_size=10**6)
    observation = np.random.default_rng(0).normal(size=(64, OBSERVATION_SIZE)).astype(np.float32)
    with torch.no_grad():
        argmax = greedy.online_network(torch.from_numpy(observation)).argmax(1).numpy()
    np.testing.assert_array_equal(greedy.act(observation), argmax)
    explorer = make_agent(epsilon=LinearSchedule(1.0, 1.0, 1), min_replay_size=10**6)
    explorer.online_network.load_state_dict(greedy.online_network.state_dict())
    big = np.repeat(observation, 50, axis=0)
    actions = explorer.act(big)
    # Uniform actions agree with the argmax half of the time (2 actions), not always.
    agreement = np.mean(actions == np.repeat(argmax, 50))
    assert 0.4 < agreement < 0.6


def test_env_steps_count_every_environment():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=3, seed=0)
    agent = build_dqn(
        make_network(env, CARTPOLE),
        env,
        CARTPOLE,
        torch.device('cpu'),
    )
    try:
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 10):
            pass
    finally:
        env.close()
    assert agent.env_steps == 30
    assert agent.epsilon == 0.0
    assert agent.terminal_on_life_loss is False  # classic control has no lives
    assert agent.learner_steps > 0


# ---------------------------------------------------------------------------------- life-loss terminal


def stored_discounts(agent):
    """discount_t of the replay's first two slots: 0 where the slot was stored as terminal."""
    return agent.replay.transitions_at(np.array([0, 0]), np.array([0, 1])).discount_t


@pytest.mark.parametrize('terminal_on_life_loss, expected', [(True, [0.0, 0.9]), (False, [0.9, 0.9])])
def test_life_loss_is_terminal_only_when_asked(terminal_on_life_loss, expected):
    agent = make_agent(terminal_on_life_loss=terminal_on_life_loss, min_replay_size=10**6)
    feed(agent, 1, start=0, life_loss=True)  # slot 0: a life was lost, the game goes on
    feed(agent, 2, start=1)  # slot 1: an ordinary step; slot 2 gives it its s_t
    np.testing.assert_allclose(stored_discounts(agent), expected)


def test_game_over_is_always_terminal():
    agent = make_agent(terminal_on_life_loss=False, min_replay_size=10**6)
    feed(agent, 1, start=0, terminated=True)
    feed(agent, 2, start=1)
    np.testing.assert_allclose(stored_discounts(agent), [0.0, 0.9])


# -------------------------------------------------------------------------------------- warm-up


@pytest.mark.parametrize('learn_interval', [1, 3])
def test_learning_starts_only_when_replay_holds_min_replay_size(learn_interval):
    agent = make_agent(min_replay_size=8, batch_size=4, learn_interval=learn_interval)
    expected_learner_steps = 0
    for t in range(30):
        feed(agent, 1, start=t)
        if agent.replay.size >= 8 and agent.env_steps % learn_interval == 0:
            expected_learner_steps += 1
        assert agent.learner_steps == expected_learner_steps, f'after {agent.env_steps} env steps'
    # With one-step transitions the slot of step t becomes sampleable at step t + 1: 9 steps fill 8 slots.
    # Learning starts at env step 9 (a multiple of both intervals), then every `learn_interval` steps up to 30.
    assert agent.learner_steps == (30 - 9) // learn_interval + 1


def test_min_replay_size_below_batch_size_is_refused():
    with pytest.raises(ValueError, match=r'--min_replay_size \(4\) must be at least --batch_size \(8\)'):
        make_agent(min_replay_size=4, batch_size=8)


# ------------------------------------------------------------------------------ state_dict round trip


def test_state_dict_round_trip_through_a_checkpoint_restores_counters_and_optimizer(tmp_path):
    agent = make_agent(min_replay_size=8, target_network_update_interval=5)
    feed(agent, 20)
    assert agent.learner_steps == 12 and agent.env_steps == 20
    path = checkpoint.save_checkpoint(
        str(tmp_path / 'dqn.ckpt'),
        agent_name=agent.agent_name,
        environment_name='Fake-v0',
        iteration=0,
        state=agent.state_dict(),
        counters={'env_steps': agent.env_steps},
        flags={},
    )
    restored = make_agent(min_replay_size=8, target_network_update_interval=5, seed=123)
    restored.load_state_dict(checkpoint.load_checkpoint(path, agent_name='DQN')['state'])
    assert restored.env_steps == 20 and restored.learner_steps == 12
    assert restored.epsilon == agent.epsilon
    assert same(parameters_of(restored.online_network), parameters_of(agent.online_network))
    assert same(parameters_of(restored.target_network), parameters_of(agent.target_network))
    assert not same(parameters_of(restored.target_network), parameters_of(restored.online_network))
    saved_optimizer, loaded_optimizer = agent.optimizer.state_dict(), restored.optimizer.state_dict()
    assert loaded_optimizer['param_groups'] == saved_optimizer['param_groups']
    for index, state in saved_optimizer['state'].items():
        for key in ('step', 'exp_avg', 'exp_avg_sq'):
            assert torch.equal(loaded_optimizer['state'][index][key], state[key])

    # The restored agent continues exactly as the original: same batch, same update, same target refresh.
    restored.replay = copy.deepcopy(agent.replay)
    for _ in range(3):
        agent.learn()
        restored.learn()
        assert same(parameters_of(restored.online_network), parameters_of(agent.online_network))
    assert restored.learner_steps == agent.learner_steps == 15
    assert same(parameters_of(restored.target_network), parameters_of(agent.online_network))  # refreshed at 15

    # Without the optimizer state (fresh Adam moments) the same update differs: the optimizer really matters.
    fresh = make_agent(min_replay_size=8, target_network_update_interval=5, seed=5)
    state = agent.state_dict()
    fresh.online_network.load_state_dict(state['network'])
    fresh.target_network.load_state_dict(state['target_network'])
    fresh.replay, agent.replay = copy.deepcopy(agent.replay), copy.deepcopy(agent.replay)
    agent.learn()
    fresh.learn()
    assert not same(parameters_of(fresh.online_network), parameters_of(agent.online_network))


# --------------------------------------------------------------------------- Q-learning by hand


def test_q_learning_update_of_hand_built_batch_matches_hand_math():
    """Linear Q(s) = W s, no bias; Huber loss (delta 1) averaged over the batch; one SGD step of lr 0.1.

    Online W = [[0.5, 0.2], [0.1, 0.3]], target W- = [[1, 2], [3, -1]].
      sample 0: s=[1,0], a=0, r=1,  discount=0.9, s'=[0,1]: Q(s,a)=0.5; W- s' = [2,-1] -> target 1+0.9*2 = 2.8
      sample 1: s=[0,1], a=1, r=-1, discount=0,   s'=[1,1]: Q(s,a)=0.3; target -1 (no bootstrap)
    TD errors 2.3 and -1.3: Huber 2.3-0.5 = 1.8 and 1.3-0.5 = 0.8, mean loss 1.3.
    d loss / d Q(s,a) = -clip(td, -1, 1) / 2 = -0.5 and +0.5, so dW[0,0] = -0.5 and dW[1,1] = 0.5;
    W <- W - 0.1 dW = [[0.55, 0.2], [0.1, 0.25]]. (Bootstrapping from the online net would give target 1.27.)
    """
    network = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        network.weight.copy_(torch.tensor([[0.5, 0.2], [0.1, 0.3]]))
    batch = Transition(
        s_tm1=np.array([[1, 0], [0, 1]], np.float32),
        a_tm1=np.array([0, 1], np.int64),
        r_t=np.array([1, -1], np.float32),
        discount_t=np.array([0.9, 0.0], np.float32),
        s_t=np.array([[0, 1], [1, 1]], np.float32),
    )
    agent = make_agent(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=0.1),
        replay=FixedBatchReplay(batch),
        min_replay_size=2,
        batch_size=2,
        target_network_update_interval=100,
    )
    with torch.no_grad():
        agent.target_network.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, -1.0]]))

    agent.learn()

    torch.testing.assert_close(agent.online_network.weight.detach(), torch.tensor([[0.55, 0.2], [0.1, 0.25]]))
    torch.testing.assert_close(agent.target_network.weight.detach(), torch.tensor([[1.0, 2.0], [3.0, -1.0]]))
    statistics = agent.learner_statistics()
    assert statistics['loss'] == pytest.approx(1.3, abs=1e-6)
    assert agent.learner_statistics() == {}  # statistics are averaged since the last call, then cleared


def test_q_network_of_make_network_matches_env():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        network = make_network(env, CARTPOLE)
    finally:
        env.close()
    assert isinstance(network, QNetwork) and network.num_actions == 2
    assert network(torch.zeros(5, 4)).shape == (5, 2)


# ------------------------------------------------------------------------------------ bf16 learning


def nature_cnn_agent(bf16_learning, batch):
    """A DQN on the Nature CNN (seed 0) that learns from `batch` at every learn(), in float32 or bf16."""
    torch.manual_seed(0)
    network = nature_cnn_q_network(4, 4)
    return Dqn(
        network=network,
        optimizer=torch.optim.Adam(network.parameters(), lr=1e-4),
        replay=FixedBatchReplay(batch),
        exploration_epsilon=LinearSchedule(0.0, 0.0, 1),
        min_replay_size=len(batch.r_t),
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=len(batch.r_t),
        max_grad_norm=10.0,
        terminal_on_life_loss=False,
        seed=0,
        bf16_learning=bf16_learning,
    )


def atari_batch(size=32, seed=0):
    random = np.random.default_rng(seed)
    return Transition(
        s_tm1=random.integers(0, 256, (size, 4, 84, 84), dtype=np.uint8),
        a_tm1=random.integers(0, 4, size),
        r_t=random.choice(np.array([-1.0, 0.0, 1.0], np.float32), size),
        discount_t=np.full(size, 0.99, np.float32),
        s_t=random.integers(0, 256, (size, 4, 84, 84), dtype=np.uint8),
    )


def test_bf16_learning_runs_only_the_update_s_torsos_in_bfloat16_and_hands_float32_to_heads_and_losses():
    batch = atari_batch()
    agent = nature_cnn_agent(True, batch)
    torso_outputs = []
    agent.online_network.torso.convs.register_forward_hook(lambda module, inputs, output: torso_outputs.append(output.dtype))
    head_inputs = []
    agent.online_network.head.register_forward_hook(lambda module, inputs, output: head_inputs.append((inputs[0].dtype, output.dtype)))
    agent.act(batch.s_tm1[:1])
    assert torso_outputs == [torch.float32] and head_inputs == [(torch.float32, torch.float32)]  # acting is float32
    agent.learn()
    assert torso_outputs[1:] == [torch.bfloat16] and head_inputs[1:] == [(torch.float32, torch.float32)]
    assert not torch.is_autocast_enabled('cpu')
    assert all(parameter.dtype == torch.float32 for parameter in agent.online_network.parameters())
    assert all(state['exp_avg'].dtype == torch.float32 for state in agent.optimizer.state.values())
    float32_agent = nature_cnn_agent(False, batch)
    float32_agent.online_network.torso.convs.register_forward_hook(lambda module, inputs, output: torso_outputs.append(output.dtype))
    float32_agent.learn()
    assert torso_outputs[-1] == torch.float32


def test_bf16_learning_agrees_with_float32_on_a_fixed_batch():
    """The same batch, network and step: the loss within 5% and the gradient within 10% (relative L2) of float32's,
    pointing the same way (cosine > 0.99); bf16 keeps 8 bits of mantissa in the torso's convolutions and products."""
    batch = atari_batch()
    gradients, losses = [], []
    for bf16 in (False, True):
        agent = nature_cnn_agent(bf16, batch)
        with bf16_torsos(bf16):
            loss, _ = agent.losses(agent.batch_tensors(batch))
        loss.mean().backward()
        losses.append(loss.mean().item())
        gradients.append(torch.cat([parameter.grad.flatten() for parameter in agent.online_network.parameters()]))
    float32_gradient, bf16_gradient = gradients
    assert losses[1] == pytest.approx(losses[0], rel=0.05)
    assert ((bf16_gradient - float32_gradient).norm() / float32_gradient.norm()).item() < 0.1
    assert torch.nn.functional.cosine_similarity(bf16_gradient, float32_gradient, dim=0).item() > 0.99


def test_bf16_learning_flag_reaches_the_agent():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        agents = [build_dqn(make_network(env, CARTPOLE), env, CARTPOLE.replace(bf16_learning=bf16), torch.device('cpu')) for bf16 in (False, True)]
    finally:
        env.close()
    assert [agent.bf16_learning for agent in agents] == [False, True]


def test_a_replay_larger_than_the_free_memory_is_refused_naming_the_flag_before_allocating():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        with pytest.raises(ValueError, match=r'^--replay_capacity=1,000,000,000,000,000: the replay would need [\d,.]+ GiB of memory but [\d,.]+ GiB is available: lower it or pass --compress_replay$'):
            build_dqn(make_network(env, CARTPOLE), env, CARTPOLE.replace(replay_capacity=10**15), torch.device('cpu'))
    finally:
        env.close()
