"""Prioritized DQN agent, in process: importance weights applied to each sample's loss before the mean and the new
priorities of a hand-built batch worked out by hand; the agent built from flag values learning on CartPole with
its priorities and beta schedule."""

import itertools

import numpy as np
import pytest
import torch

from deep_rl_zoo import episodes, gym_env
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.prioritized_dqn import settings as prioritized_dqn_settings
from deep_rl_zoo.prioritized_dqn.agent import PrioritizedDqn, build_prioritized_dqn, make_network
from deep_rl_zoo.schedule import LinearSchedule
from unit_tests.value_agents import CARTPOLE_VALUES, HAND_BATCH, HAND_LOSSES, HAND_TD_ERRORS, as_batch, linear_agent


class FixedPrioritizedReplay(replay_lib.PrioritizedReplay):
    """Prioritized replay stand-in: one hand-built batch with fixed weights; records the calls it gets."""

    def __init__(self, batch, weights):  # No storage: the agent only samples and updates priorities.
        self.batch, self.weights = batch, np.asarray(weights, np.float32)
        self.keys = (np.zeros(2, np.int64), np.array([5, 7]))
        self.betas, self.updates = [], []

    @property
    def size(self):
        return len(self.batch.r_t)

    def sample_prioritized(self, batch_size, importance_sampling_exponent):
        assert batch_size == self.size
        self.betas.append(importance_sampling_exponent)
        return replay_lib.PrioritizedSample(self.batch, self.keys, self.weights)

    def update_priorities(self, keys, priorities):
        self.updates.append((keys, priorities))


def hand_agent(weights):
    return linear_agent(
        PrioritizedDqn,
        FixedPrioritizedReplay(HAND_BATCH, weights),
        importance_sampling_exponent=LinearSchedule(0.4, 1.0, 10),
    )


def test_losses_are_double_q_learning_with_td_error_priorities():
    agent = hand_agent([1.0, 1.0])
    loss, priorities = agent.losses(as_batch(HAND_BATCH))
    torch.testing.assert_close(loss, torch.tensor(HAND_LOSSES))
    torch.testing.assert_close(priorities, torch.tensor(HAND_TD_ERRORS).abs())


def test_importance_weights_scale_each_samples_loss_before_the_mean():
    """Per-sample Huber losses 0.08 and 0.02 (TD errors -0.4 and 0.2, see the Double DQN test), weights 1 and 0.5:
    loss = (1 * 0.08 + 0.5 * 0.02) / 2 = 0.045. d loss / d Q(s, a) = -w td / B = 0.2 and -0.05, so one SGD step
    of 0.1 gives W = [[0.48, 0.2], [0.1, 0.305]]. (Averaging before weighting, the original Deep RL Zoo's bug,
    would scale both gradients alike.) The new priorities are |td| = 0.4 and 0.2, for the sampled keys."""
    agent = hand_agent([1.0, 0.5])
    agent.learn()
    torch.testing.assert_close(agent.online_network.weight.detach(), torch.tensor([[0.48, 0.2], [0.1, 0.305]]))
    assert agent.learner_statistics()['loss'] == pytest.approx(0.045, abs=1e-6)
    (keys, priorities), = agent.replay.updates
    assert keys is agent.replay.keys
    np.testing.assert_allclose(priorities, [0.4, 0.2], rtol=1e-6)
    assert agent.replay.betas == [0.4]  # beta at env step 0


def test_beta_follows_its_schedule_of_env_steps():
    agent = hand_agent([1.0, 1.0])
    agent.env_steps = 5
    agent.learn()
    assert agent.replay.betas == [pytest.approx(0.7)]
    assert agent.agent_statistics()['importance_sampling_exponent'] == pytest.approx(0.7)


def test_agent_from_flag_values_learns_on_cartpole_and_updates_priorities():
    env = gym_env.create_classic_vector_env('CartPole-v1', num_envs=2, seed=0)
    settings = prioritized_dqn_settings.CLASSIC.replace(**CARTPOLE_VALUES).replace(
        n_step=2,
        priority_exponent=0.5,
        priority_eps=1e-3,
        importance_sampling_exponent_begin_value=0.4,
        importance_sampling_exponent_end_value=1.0,
        importance_sampling_exponent_decay_step=100,
    )
    agent = build_prioritized_dqn(make_network(env, settings), env, settings, torch.device('cpu'))
    try:
        for _ in itertools.islice(episodes.run_env_loop(agent, env), 25):
            pass
    finally:
        env.close()
    assert agent.agent_name == 'PrioritizedDQN' and agent.prioritized
    replay = agent.replay
    assert isinstance(replay, replay_lib.PrioritizedReplay)
    assert agent.env_steps == 50 and agent.learner_steps > 0
    assert agent.agent_statistics()['importance_sampling_exponent'] == pytest.approx(0.4 + 0.6 * 50 / 100)
    # Sampled slots now hold (|td| + eps) ** 0.5, no longer the starting priority 1; invalid slots hold 0.
    leaves = replay._tree.values(np.arange(replay.capacity)).reshape(replay._valid.shape)
    np.testing.assert_array_equal(leaves > 0, replay._valid)
    assert np.any(leaves[replay._valid] != 1.0)
    assert replay.max_priority >= 1.0
