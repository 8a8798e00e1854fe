"""DRQN agent, in process: the LSTM state advances on random steps and restarts at episode ends, the evaluation
actor's state across evaluations, the masked sequence Q-learning update worked out by hand, burn-in (masked, no
gradient into the warm-up), learning on CartPole, and the checkpoint state."""

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.drqn import settings as drqn_settings
from deep_rl_zoo.drqn.agent import Drqn, SequenceBatch, build_drqn, make_network
from deep_rl_zoo.greedy_actors import RecurrentEpsilonGreedyActor
from deep_rl_zoo.gym_env import VectorStep
from deep_rl_zoo.networks.value import RecurrentQNetwork, mlp_recurrent_q_network
from deep_rl_zoo.schedule import LinearSchedule

OBSERVATION_SIZE = 3


def make_agent(*, network=None, optimizer=None, replay=None, epsilon=1.0, burn_in=0, min_replay_size=10**6, batch_size=2, seed=0):
    torch.manual_seed(seed)
    network = network or mlp_recurrent_q_network(OBSERVATION_SIZE, 2, hidden_size=8)
    replay = replay or replay_lib.SequenceReplay(
        100, 4, 2, (OBSERVATION_SIZE,), np.float32, discount=0.9, num_streams=2, state_size=2 * network.hidden_size
    )
    return Drqn(
        network=network,
        optimizer=optimizer or torch.optim.Adam(network.parameters(), lr=1e-2),
        replay=replay,
        exploration_epsilon=LinearSchedule(epsilon, epsilon, 1),
        min_replay_size=min_replay_size,
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=batch_size,
        max_grad_norm=10.0,
        terminal_on_life_loss=False,
        seed=seed,
        burn_in=burn_in,
    )


def fake_step(observation, terminated=(False, False), truncated=(False, False), life_loss=(False, False)):
    """A two-environment VectorStep."""
    return VectorStep(
        observation=observation,
        reward=np.ones(2, np.float32),
        raw_reward=np.ones(2, np.float32),
        terminated=np.array(terminated),
        truncated=np.array(truncated),
        life_loss=np.array(life_loss),
        final_observation=observation,
    )


def observations(num_steps, seed=0):
    return np.random.default_rng(seed).normal(size=(num_steps, 2, OBSERVATION_SIZE)).astype(np.float32)


def unrolled_state(network, observation_sequence):
    """The LSTM state after the network reads `observation_sequence` [T, B, ...] from zeros."""
    with torch.no_grad():
        return network(torch.from_numpy(observation_sequence))[1]


# ----------------------------------------------------------------------------------------- acting state


def test_state_advances_on_every_step_random_ones_included():
    agent = make_agent(epsilon=1.0)  # every action random
    sequence = observations(5)
    for t in range(5):
        agent.act(sequence[t])
        torch.testing.assert_close(agent.actor.state, unrolled_state(agent.online_network, sequence[: t + 1]))
        agent.observe(np.zeros(2, np.int64), fake_step(sequence[t]))
    assert agent.env_steps == 10


@pytest.mark.parametrize('ending', ['terminated', 'truncated'])
def test_state_restarts_where_an_episode_ended_and_only_there(ending):
    agent = make_agent(epsilon=0.5)
    sequence = observations(6)
    for t in range(3):
        agent.act(sequence[t])
        agent.observe(np.zeros(2, np.int64), fake_step(sequence[t], **({ending: (False, True)} if t == 2 else {})))
    agent.act(sequence[3])  # env 1 starts a new episode here
    h, c = agent.actor.state
    fresh_h, fresh_c = unrolled_state(agent.online_network, sequence[3:4])
    continued_h, continued_c = unrolled_state(agent.online_network, sequence[:4])
    torch.testing.assert_close(h[1], fresh_h[1])
    torch.testing.assert_close(c[1], fresh_c[1])
    torch.testing.assert_close(h[0], continued_h[0])
    torch.testing.assert_close(c[0], continued_c[0])


def test_a_lost_life_does_not_restart_the_state():
    agent = make_agent()
    sequence = observations(3)
    agent.act(sequence[0])
    agent.observe(np.zeros(2, np.int64), fake_step(sequence[0], life_loss=(True, True)))
    agent.act(sequence[1])
    torch.testing.assert_close(agent.actor.state, unrolled_state(agent.online_network, sequence[:2]))


def test_greedy_actions_come_from_the_recurrent_q_values():
    agent = make_agent(epsilon=0.0)
    sequence = observations(4)
    with torch.no_grad():
        q_values = agent.online_network(torch.from_numpy(sequence))[0]
    for t in range(4):
        np.testing.assert_array_equal(agent.act(sequence[t]), q_values[t].argmax(1).numpy())
        agent.observe(np.zeros(2, np.int64), fake_step(sequence[t]))


class RememberedReset:
    """Passes an environment through and keeps the observation of its last reset."""

    def __init__(self, env):
        self.env, self.num_envs = env, env.num_envs

    def reset(self):
        self.observation = self.env.reset()
        return self.observation

    def step(self, actions):
        return self.env.step(actions)


def test_eval_actor_restarts_its_state_with_every_evaluation():
    """episodes.run_env_loop resets a recurrent actor with the environments: a second evaluation does not start
    from the state where the first one stopped mid-episode."""
    torch.manual_seed(0)
    network = mlp_recurrent_q_network(4, 2, hidden_size=8)
    actor = RecurrentEpsilonGreedyActor(network, epsilon=0.0)
    env = RememberedReset(gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0))
    try:
        episodes.play_episodes(actor, env, num_steps=5)  # stops mid-episode
        next(episodes.run_env_loop(actor, env))  # reset, then one step
    finally:
        env.env.close()
    torch.testing.assert_close(actor.state, unrolled_state(network, env.observation[None]))


# ------------------------------------------------------------------------------- stored state (R2D2)


def test_sequences_keep_the_acting_state_and_the_learner_unrolls_from_it():
    """Sequences of 4 steps overlapping by 2. Env 0 plays steps 0-5 of one episode: its second sequence (steps
    2-5) keeps the state after steps 0-1, and the learner's Q-values on it are those of one unroll over steps 0-5.
    Env 1's episode ends after step 1: its next sequence (steps 2-5) starts an episode and keeps a zero state."""
    agent = make_agent(epsilon=1.0)
    sequence = observations(6)
    for t in range(6):
        agent.act(sequence[t])
        agent.observe(np.zeros(2, np.int64), fake_step(sequence[t], truncated=(False, t == 1)))
    stored = agent.replay.sequences_at(np.arange(agent.replay.num_sequences))  # env 1 0-1, env 0 0-3, 2-5, env 1 2-5
    first_observations = [sequence[0, 1], sequence[0, 0], sequence[2, 0], sequence[2, 1]]
    np.testing.assert_array_equal(stored.observation[:, 0], first_observations)
    expected_state = torch.cat(unrolled_state(agent.online_network, sequence[:2, :1]), dim=1)[0].numpy()
    np.testing.assert_allclose(stored.initial_state[2], expected_state, rtol=1e-6)
    assert not stored.initial_state[[0, 1, 3]].any()

    q_values = agent._online_q(agent.batch_tensors(agent.replay.sequences_at(np.array([2]))))
    with torch.no_grad():
        episode_q_values = agent.online_network(torch.from_numpy(sequence[:, :1]))[0]
    torch.testing.assert_close(q_values, episode_q_values[2:6])


# ------------------------------------------------------------------------------- the update by hand


class LinearQ(nn.Module):
    """A stand-in 'recurrent' network without memory: Q(o) = W o, the state passed through."""

    hidden_size = 1

    def __init__(self, weight):
        super().__init__()
        self.linear = nn.Linear(2, 2, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor(weight))

    def forward(self, observation, state=None, first=None):
        if state is None:
            state = (torch.zeros(observation.shape[1], 1), torch.zeros(observation.shape[1], 1))
        return self.linear(observation), state


def hand_batch():
    """Two sequences of T=3 steps (batch-first, as the replay returns them); see the test below."""
    return replay_lib.Sequences(
        observation=np.array(
            [[[0.5, 0], [0, 1], [1, 1], [1, 0]], [[0, 0.5], [1, 0], [0.2, 0.4], [0, 0]]], np.float32
        ),
        action=np.array([[0, 1, 0], [1, 0, 0]]),
        reward=np.array([[1, 0, 2], [0, 1, 0]], np.float32),
        discount=np.array([[0.9, 0.9, 0], [0.9, 0.9, 0]], np.float32),  # terminal at t=2; padding at t=2
        first=np.array([[True, False, False], [False, False, False]]),
        mask=np.array([[True, True, True], [True, True, False]]),
        initial_state=np.zeros((2, 2), np.float32),  # (h, c) of LinearQ's 1-unit state, each [B, 1]
    )


class FixedBatchReplay:
    def __init__(self, batch):
        self.batch, self.size = batch, 2

    def sample(self, batch_size):
        return self.batch


def test_masked_sequence_q_learning_update_matches_hand_math():
    """Online Q(o) = o (W = I), target Q-(o) = [[1, 2], [3, -1]] o; Huber (delta 1); SGD, lr 0.1.

    Sequence 0 (starts its episode, terminal at t=2):
      t=0: Q(o0)[0] = 0.5, target 1 + 0.9 max(Q-([0,1]) = [2, -1]) = 2.8, td 2.3 -> huber 1.8
      t=1: Q(o1)[1] = 1,   target 0 + 0.9 max(Q-([1,1]) = [3, 2])  = 2.7, td 1.7 -> huber 1.2
      t=2: Q(o2)[0] = 1,   target 2 (terminal),                          td 1   -> huber 0.5
    Sequence 1 (truncated after t=1, which bootstraps from its final observation [0.2, 0.4]; t=2 is padding):
      t=0: Q(o0)[1] = 0.5, target 0 + 0.9 max(Q-([1,0]) = [1, 3]) = 2.7,        td 2.2 -> huber 1.7
      t=1: Q(o1)[0] = 1,   target 1 + 0.9 max(Q-([0.2,0.4]) = [1, 0.2]) = 1.9, td 0.9 -> huber 0.405
    Per-sequence losses (mean over T=3 positions, padding 0): 3.5/3 and 2.105/3; loss (1.16667 + 0.70167)/2.
    Gradient: dL/dQ = -clip(td, -1, 1)/6 at each step, dW[a] += dL/dQ * o:
      dW[0] = -(1/6)[0.5, 0] - (1/6)[1, 1] - (0.9/6)[1, 0] = [-0.4, -1/6];  dW[1] = -(1/6)[0, 1] - (1/6)[0, 0.5] = [0, -0.25]
    W <- I - 0.1 dW = [[1.04, 1/60], [0, 1.025]].
    """
    network = LinearQ([[1.0, 0.0], [0.0, 1.0]])
    agent = make_agent(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=0.1),
        replay=FixedBatchReplay(hand_batch()),
        min_replay_size=2,
    )
    with torch.no_grad():
        agent.target_network.linear.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, -1.0]]))
    per_sequence, priorities = agent.losses(agent.batch_tensors(hand_batch()))
    torch.testing.assert_close(per_sequence, torch.tensor([3.5 / 3, 2.105 / 3]))
    torch.testing.assert_close(priorities, torch.tensor([2.3, 2.2]))  # the largest |td| of each sequence

    agent.learn()

    torch.testing.assert_close(agent.online_network.linear.weight.detach(), torch.tensor([[1.04, 1 / 60], [0.0, 1.025]]))
    assert agent.learner_statistics()['loss'] == pytest.approx((3.5 / 3 + 2.105 / 3) / 2, abs=1e-6)


def test_burn_in_steps_learn_only_in_sequences_that_start_an_episode():
    """burn_in=1: sequence 0 starts its episode (zero is its true state) and learns at every step; sequence 1
    starts mid-episode, so its t=0 only warms up the state: its loss is huber 0.405 / 3."""
    network = LinearQ([[1.0, 0.0], [0.0, 1.0]])
    agent = make_agent(network=network, burn_in=1)
    with torch.no_grad():
        agent.target_network.linear.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, -1.0]]))
    per_sequence, _ = agent.losses(agent.batch_tensors(hand_batch()))
    torch.testing.assert_close(per_sequence, torch.tensor([3.5 / 3, 0.405 / 3]))


def test_no_gradient_reaches_the_burn_in_of_a_mid_episode_sequence():
    agent = make_agent(burn_in=2)
    num_steps = 5
    observation = torch.randn(num_steps + 1, 2, OBSERVATION_SIZE, requires_grad=True)
    first = torch.zeros(num_steps, 2, dtype=torch.bool)
    first[0, 0] = True  # sequence 0 starts its episode, sequence 1 does not
    batch = SequenceBatch(
        observation=observation,
        action=torch.zeros(num_steps, 2, dtype=torch.long),
        reward=torch.ones(num_steps, 2),
        discount=torch.full((num_steps, 2), 0.9),
        first=first,
        mask=torch.ones(num_steps, 2, dtype=torch.bool),
        initial_state=agent.online_network.initial_state(2),
    )
    per_sequence, _ = agent.losses(batch)
    per_sequence.sum().backward()
    gradient = observation.grad.abs().sum(dim=2)
    assert (gradient[:2, 1] == 0).all()  # the warm-up of sequence 1: no gradient
    assert (gradient[2:num_steps, 1] > 0).all() and (gradient[:num_steps, 0] > 0).all()


# ------------------------------------------------------------------------------------ on CartPole


CARTPOLE = drqn_settings.CLASSIC.replace(
    replay_capacity=2_000, discount=0.99, compress_replay=False, seed=0, learning_rate=1e-3,
    adam_eps=1e-8, exploration_epsilon_begin_value=1.0, exploration_epsilon_end_value=0.1,
    exploration_epsilon_decay_step=100, min_replay_size=40, learn_interval=4,
    target_network_update_interval=5, batch_size=8, max_grad_norm=10.0, unroll_length=6, burn_in=2,
)  # fmt: skip


@pytest.mark.slow
def test_learns_on_a_vector_of_cartpoles_and_checkpoints_its_state():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    agent = build_drqn(make_network(env, CARTPOLE), env, CARTPOLE, torch.device('cpu'))
    try:
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 100):
            pass
    finally:
        env.close()
    assert isinstance(agent.online_network, RecurrentQNetwork)
    assert agent.env_steps == 200 and agent.agent_name == 'DRQN'
    # Sequences of burn_in + unroll_length = 8 steps starting 3 apart: capacity 2,000 steps is 666 sequences.
    assert agent.replay.capacity == 666 and agent.replay.num_sequences > 0
    assert agent.learner_steps > 0 and 'loss' in agent.learner_statistics()
    assert 0 < agent.replay.size <= 200
    state = agent.state_dict()
    assert set(state) == {'network', 'target_network', 'optimizer', 'env_steps', 'learner_steps'}
    assert 'lstm.weight_hh_l0' in state['network']
