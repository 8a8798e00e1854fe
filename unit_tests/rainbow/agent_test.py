"""Rainbow agent, in process: double-Q categorical update of a hand-built batch worked out by hand, prioritized
replay and noisy acting on CartPole, the networks of make_network."""

import itertools
import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import episodes, gym_env, replay, value_learning
from deep_rl_zoo.networks.value import NoisyLinear, RainbowQNetwork
from deep_rl_zoo.rainbow import settings as rainbow_settings
from deep_rl_zoo.rainbow.agent import Rainbow, build_rainbow, make_network
from deep_rl_zoo.replay_agent import TransitionBatch
from deep_rl_zoo.schedule import LinearSchedule
from unit_tests.value_agents import BATCH, C51_CARTPOLE_VALUES, TableNetwork, table_agent

RAINBOW_CARTPOLE = rainbow_settings.CLASSIC.replace(**C51_CARTPOLE_VALUES).replace(
    n_step=3,
    exploration_epsilon_begin_value=0.0,
    exploration_epsilon_end_value=0.0,
    priority_exponent=0.5,
    priority_eps=1e-6,
    importance_sampling_exponent_begin_value=0.4,
    importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=100,
    noisy_sigma=0.5,
)


def test_losses_of_hand_built_batch_select_with_online_and_evaluate_with_target():
    loss, priorities = table_agent(Rainbow).losses(BATCH)
    # Row 0: at state 2 the online Q-values are [1.4, 0.6], so the online network picks action 0 where the target
    # network's own argmax would be 1 (its Q-values are [0.6, 1.4]); the target's distribution of action 0, [0.6, 0.2, 0.2],
    # on atoms [0.5, 1, 1.5] projects to [0.3, 0.6, 0.1]: cross-entropy with [0.5, 0.25, 0.25] is 1.7 ln 2.
    # Row 1 is terminal: ln 2 as for C51.
    ln2 = math.log(2.0)
    assert_close(loss, torch.tensor([1.7 * ln2, ln2]))
    entropy_0 = -(0.3 * math.log(0.3) + 0.6 * math.log(0.6) + 0.1 * math.log(0.1))
    assert_close(priorities, torch.tensor([1.7 * ln2 - entropy_0, ln2]))


# On the atoms [0, 1, 2] with r = 0 and discount 1 the target is the next state's distribution itself. When the
# online distribution equals it, the KL = cross-entropy - entropy is 0 in exact arithmetic but about -1.2e-7 in float32.
FITTED = [0.02, 0.58, 0.40]


def fitted_rainbow(replay_buffer=None):
    """A Rainbow agent on one state 0 whose online (and so target) distribution is FITTED for both actions."""
    network = TableNetwork([[FITTED, FITTED]])
    return Rainbow(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=0.1),
        replay=replay_buffer,
        exploration_epsilon=LinearSchedule(0.0, 0.0, 1),
        min_replay_size=4,
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=4,
        max_grad_norm=0.0,
        terminal_on_life_loss=False,
        seed=0,
        importance_sampling_exponent=LinearSchedule(0.4, 1.0, 10) if replay_buffer is not None else None,
    )


def test_priorities_of_a_fitted_distribution_are_zero_not_float32_rounding_below_it():
    agent = fitted_rainbow()
    batch = TransitionBatch(
        s_tm1=torch.zeros(2, 1), a_tm1=torch.tensor([0, 1]), r_t=torch.zeros(2), discount_t=torch.ones(2), s_t=torch.zeros(2, 1)
    )
    # The case: the KL the loss function computes comes out below zero.
    raw = value_learning.categorical_q_learning(
        agent.online_network.logits(batch.s_tm1), batch.a_tm1, batch.r_t, batch.discount_t,
        agent.target_network.logits(batch.s_t), agent.online_network.support, agent.online_network(batch.s_t),
    ).extra.kl_divergence
    assert (raw < 0).all() and (raw > -1e-6).all(), raw
    loss, priorities = agent.losses(batch)
    assert torch.equal(priorities, torch.zeros(2))
    assert_close(loss, torch.full((2,), -sum(p * math.log(p) for p in FITTED)))  # the loss is untouched: the entropy

    prioritized = replay.PrioritizedReplay(
        priority_exponent=0.5, priority_eps=1e-6, capacity=8, observation_shape=(1,), observation_dtype=np.float32, discount=1.0
    )
    for _ in range(3):
        prioritized.add(np.zeros((1, 1), np.float32), np.zeros(1, np.int64), np.zeros(1), np.zeros(1, bool), np.zeros(1, bool))
    sample = prioritized.sample_prioritized(2, 0.4)
    prioritized.update_priorities(sample.keys, priorities.numpy())  # accepted


def test_learning_on_a_fitted_distribution_updates_the_priorities():
    prioritized = replay.PrioritizedReplay(
        priority_exponent=0.5, priority_eps=1e-6, capacity=16, observation_shape=(1,), observation_dtype=np.float32, discount=1.0
    )
    agent = fitted_rainbow(prioritized)
    observation = np.zeros((1, 1), np.float32)
    no = np.zeros(1, bool)
    step = gym_env.VectorStep(observation, np.zeros(1, np.float32), np.zeros(1, np.float32), no, no, no, observation)
    for _ in range(5):  # state 0 -> state 0 with reward 0: every replayed transition is fitted
        agent.act(observation)
        agent.observe(np.zeros(1, np.int64), step)
    assert agent.learner_steps >= 1  # learn() handed priorities >= 0 to the replay without raising
    assert prioritized.max_priority == 1.0  # a zero priority (plus eps) does not raise the maximum


def run_on_cartpole(num_steps, settings=RAINBOW_CARTPOLE):
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        torch.manual_seed(0)
        agent = build_rainbow(make_network(env, settings), env, settings, torch.device('cpu'))
        for _ in itertools.islice(episodes.run_env_loop(agent, env), num_steps):
            pass
    finally:
        env.close()
    return agent


def test_rainbow_learns_from_prioritized_n_step_replay():
    agent = run_on_cartpole(40)
    assert isinstance(agent.replay, replay.PrioritizedReplay) and agent.prioritized
    # 3-step transitions: slot t is sampleable once step t + 3 is in; 16 of them after 19 steps.
    assert agent.env_steps == 40 and agent.learner_steps == 40 - 19 + 1
    # Priorities came back from the updates: the largest one given so far is the KL of some transition, not 1.
    assert agent.replay.max_priority != 1.0
    statistics = agent.agent_statistics()
    assert statistics['exploration_epsilon'] == 0.0
    assert statistics['importance_sampling_exponent'] == 0.4 + 0.6 * 40 / 100
    # Mean |sigma| starts at 0.5 / sqrt(fan in) for every noisy weight and moves as sigma learns.
    assert statistics['noisy_weight_sigma'] > 0 and statistics['noisy_weight_sigma'] != pytest.approx(0.5 / math.sqrt(128), abs=1e-9)
    assert np.isfinite(agent.learner_statistics()['loss'])


def test_rainbow_explores_only_with_its_noise():
    settings = RAINBOW_CARTPOLE.replace(noisy_sigma=5.0, min_replay_size=10**6)  # loud noise, no learning
    agent = run_on_cartpole(1, settings)
    assert agent.epsilon == 0.0
    observation = np.zeros((1, 4), np.float32)
    actions = {int(agent.act(observation)[0]) for _ in range(50)}
    assert actions == {0, 1}  # the same observation gets both actions: the noise explores
    quiet = run_on_cartpole(1, settings.replace(noisy_sigma=0.0))
    assert len({int(quiet.act(observation)[0]) for _ in range(20)}) == 1  # no noise, no epsilon: always greedy


def test_make_network_classic_and_atari():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=1, seed=0)
    try:
        network = make_network(env, RAINBOW_CARTPOLE)
    finally:
        env.close()
    assert isinstance(network, RainbowQNetwork) and network.logits(torch.zeros(3, 4)).shape == (3, 2, 11)
    assert network.value_stream[0].weight_sigma[0, 0].item() == pytest.approx(0.5 / math.sqrt(128))  # sigma_0 / sqrt(p)
    atari = gym_env.create_vector_env('atari', 'Pong', 1, 0, frame_skip=4, frame_stack=4, frame_size=84)
    try:
        network = make_network(atari, RAINBOW_CARTPOLE.replace(num_atoms=51))
    finally:
        atari.close()
    assert tuple(network.advantage_stream[2].weight_mu.shape) == (6 * 51, 512)
    assert sum(isinstance(module, NoisyLinear) for module in network.modules()) == 4
