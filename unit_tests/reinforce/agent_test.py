"""REINFORCE's agent in process: episode collection (on-policy, every environment its share) and one update on a
tiny hand-built episode, with the numbers worked out by hand in the comments. The stand-ins here also serve
unit_tests/reinforce_baseline/agent_test.py."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from deep_rl_zoo.gym_env import VectorStep
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput, CategoricalPolicyOutput
from deep_rl_zoo.reinforce.agent import Reinforce


class LinearPolicy(nn.Module):
    """logits = W s (and V(s) = v . s when `with_value`), no biases."""

    def __init__(self, weight, value_weight=None):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(weight, dtype=torch.float32))
        self.value_weight = None if value_weight is None else nn.Parameter(torch.tensor(value_weight, dtype=torch.float32))

    def forward(self, observation):
        logits = observation.float() @ self.weight.T
        if self.value_weight is None:
            return CategoricalPolicyOutput(logits)
        return CategoricalActorCriticOutput(logits, observation.float() @ self.value_weight)


def make_agent(agent_class=Reinforce, num_envs=1, num_episodes_per_update=1, value_weight=None, lr=1.2, **options):
    network = LinearPolicy([[0.0, 0.0], [0.0, 0.0]], value_weight)
    return agent_class(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=lr),
        num_envs=num_envs,
        num_episodes_per_update=num_episodes_per_update,
        discount=0.5,
        entropy_coef=options.pop('entropy_coef', 0.0),
        normalize_advantages=options.pop('normalize_advantages', False),
        max_grad_norm=0.0,
        terminal_on_life_loss=False,
        seed=0,
        **options,
    )


def vector_step(observation, reward, terminated=None, truncated=None, final_observation=None):
    observation = np.asarray(observation, np.float32)
    reward = np.asarray(reward, np.float32)
    n = len(reward)
    terminated = np.zeros(n, bool) if terminated is None else np.asarray(terminated)
    truncated = np.zeros(n, bool) if truncated is None else np.asarray(truncated)
    return VectorStep(
        observation=observation,
        reward=reward,
        raw_reward=reward,
        terminated=terminated,
        truncated=truncated,
        life_loss=np.zeros(n, bool),
        final_observation=observation if final_observation is None else np.asarray(final_observation, np.float32),
    )


def spy_on_batches(agent):
    """Keeps every batch the agent learns from in the returned list."""
    batches, loss = [], agent.loss

    def recording_loss(batch):
        batches.append(batch)
        return loss(batch)

    agent.loss = recording_loss
    return batches


# The hand-built episode: states s0 = [1, 0], s1 = [0, 1], s2 = [1, 1], actions 1, 0, 1, rewards 1, 0, 2, gamma 0.5.
STATES = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
ACTIONS = [1, 0, 1]
REWARDS = [1.0, 0.0, 2.0]
NEXT_OF_LAST = [2.0, 0.0]  # s3, the observation after the last step


def play_episode(agent, truncated=False):
    """Feeds the hand-built episode to a one-environment agent; the last step terminates or is truncated."""
    for t in range(3):
        agent.act(np.array([STATES[t]], np.float32))
        last = t == 2
        following = [NEXT_OF_LAST] if last else [STATES[t + 1]]
        agent.observe(
            np.array([ACTIONS[t]]),
            vector_step(
                [[9.0, 9.0]] if last else following,  # after the last step: the next episode's first observation
                [REWARDS[t]],
                terminated=[last and not truncated],
                truncated=[last and truncated],
                final_observation=following,
            ),
        )


@pytest.mark.parametrize('truncated', [False, True])
def test_reinforce_update_by_hand(truncated):
    # W = 0: pi = [0.5, 0.5] in every state. Returns G = [1 + 0.5 * 1, 0 + 0.5 * 2, 2] = [1.5, 1, 2]; a truncated
    # episode is not bootstrapped by plain REINFORCE, so the same.
    # Loss = mean_t(-log 0.5 * G_t) = log 2 * 4.5 / 3 = 1.5 log 2.
    # d loss / d logits_t = -G_t (onehot(a_t) - pi) / 3: [0.25, -0.25], [-1/6, 1/6], [1/3, -1/3];
    # d loss / d W[0] = sum_t (d logits_t)[0] s_t = [0.25 + 1/3, -1/6 + 1/3] = [7/12, 1/6], and W[1] the opposite.
    # SGD with lr 1.2: W = -1.2 * grad = [[-0.7, -0.2], [0.7, 0.2]].
    agent = make_agent()
    batches = spy_on_batches(agent)
    play_episode(agent, truncated)
    assert agent.learner_steps == 1 and agent.env_steps == 3
    (batch,) = batches
    assert batch.observation.tolist() == STATES and batch.action.tolist() == ACTIONS and batch.reward.tolist() == REWARDS
    assert batch.discount.tolist() == [0.5, 0.5, 0.0]
    assert batch.truncated_index.tolist() == ([2] if truncated else [])
    assert batch.truncated_observation.tolist() == ([NEXT_OF_LAST] if truncated else [])
    torch.testing.assert_close(agent.online_network.weight.detach(), torch.tensor([[-0.7, -0.2], [0.7, 0.2]]))
    statistics = agent.learner_statistics()
    assert statistics['loss'] == pytest.approx(1.5 * math.log(2.0), rel=1e-6)
    assert statistics['entropy'] == pytest.approx(math.log(2.0), rel=1e-6)
    assert statistics['update_steps'] == 3


def test_reinforce_entropy_bonus_and_normalized_returns():
    # Normalised returns: [1.5, 1, 2] has mean 1.5 and std sqrt(1/6), so A = [0, -sqrt(1.5), sqrt(1.5)]; the loss
    # at pi = 0.5 is log 2 * mean(A) = 0, and the entropy bonus -0.1 * log 2 (the entropy of a uniform policy is
    # at its maximum, so it adds no gradient). d loss / d logits: 0 for step 0, sqrt(1.5) [0.5, -0.5] / 3 for
    # step 1 (a = 0, A < 0) and step 2 (a = 1, A > 0) alike, so d W[0] = sqrt(1.5)/6 * (s1 + s2) = sqrt(1.5)/6 * [1, 2].
    agent = make_agent(entropy_coef=0.1, normalize_advantages=True, lr=1.0)
    play_episode(agent)
    expected = math.sqrt(1.5) / 6 * torch.tensor([[-1.0, -2.0], [1.0, 2.0]])
    torch.testing.assert_close(agent.online_network.weight.detach(), expected)
    assert agent.learner_statistics()['loss'] == pytest.approx(-0.1 * math.log(2.0), abs=1e-6)


def test_every_environment_gives_its_share_then_the_running_games_are_restarted():
    agent = make_agent(num_envs=2, num_episodes_per_update=2)
    batches = spy_on_batches(agent)
    obs = [[0.0, 1.0], [0.0, 2.0]]

    def step(observation, terminated):
        agent.act(np.array(observation, np.float32))
        agent.observe(np.array([0, 1]), vector_step(observation, [1.0, 2.0], terminated=terminated))

    step(obs, [True, False])  # env 0 ends a one-step episode: its share; env 1 goes on
    step([[1.0, 1.0], [1.0, 2.0]], [False, False])  # env 0 waits (not learned from)
    assert agent.learner_steps == 0 and agent.discarded_steps == 1 and not agent.wants_new_episodes
    step([[2.0, 1.0], [2.0, 2.0]], [False, True])  # env 1 ends its episode: update on both
    assert agent.learner_steps == 1 and agent.discarded_steps == 2
    (batch,) = batches
    assert batch.observation.tolist() == [[0.0, 1.0], [0.0, 2.0], [1.0, 2.0], [2.0, 2.0]]
    assert batch.action.tolist() == [0, 1, 1, 1]
    assert batch.reward.tolist() == [1.0, 2.0, 2.0, 2.0]
    assert batch.discount.tolist() == [0.0, 0.5, 0.5, 0.0]
    # Env 0's running game began with the old parameters: the agent asks for new games everywhere.
    assert agent.wants_new_episodes
    agent.reset()  # what the env loop does after resetting the environments
    assert not agent.wants_new_episodes
    step([[3.0, 1.0], [3.0, 2.0]], [True, False])  # both collect at once: env 0 ends a new one-step episode
    assert agent.discarded_steps == 2
    step([[4.0, 1.0], [4.0, 2.0]], [True, True])  # env 0 has given its share (discarded); env 1 ends: update
    assert agent.learner_steps == 2 and agent.discarded_steps == 3
    assert batches[1].observation.tolist() == [[3.0, 1.0], [3.0, 2.0], [4.0, 2.0]]
    assert not agent.wants_new_episodes  # every game ended at the update's step: nothing to restart
    assert agent.env_steps == 10


def test_a_loop_that_does_not_restart_the_games_gets_only_episodes_begun_after_the_update():
    agent = make_agent(num_envs=2, num_episodes_per_update=2)
    batches = spy_on_batches(agent)

    def step(observation, terminated):
        agent.act(np.array(observation, np.float32))
        agent.observe(np.array([0, 1]), vector_step(observation, [1.0, 2.0], terminated=terminated))

    step([[0.0, 1.0], [0.0, 2.0]], [False, True])  # env 1 ends its share; env 0 goes on
    step([[1.0, 1.0], [1.0, 2.0]], [True, False])  # env 0 ends: update; env 1's running game is stale
    assert agent.learner_steps == 1 and agent.wants_new_episodes
    step([[2.0, 1.0], [2.0, 2.0]], [True, False])  # env 0 collects its next episode; env 1's stale step is discarded
    step([[3.0, 1.0], [3.0, 2.0]], [False, True])  # the stale game ends: env 1 collects again from the next one
    assert agent.discarded_steps == 4  # env 1: waiting at step 2, stale at steps 3 and 4; env 0: waiting at step 4
    step([[4.0, 1.0], [4.0, 2.0]], [False, True])
    assert agent.learner_steps == 2
    assert batches[1].observation.tolist() == [[2.0, 1.0], [4.0, 2.0]]


def test_num_episodes_per_update_must_be_a_multiple_of_num_envs():
    with pytest.raises(ValueError, match=r'--num_episodes_per_update \(3\) must be a multiple of --num_envs \(2\)'):
        make_agent(num_envs=2, num_episodes_per_update=3)


def test_actions_are_sampled_from_the_policy_and_state_round_trips():
    agent = make_agent()
    with torch.no_grad():
        agent.online_network.weight.copy_(torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)]]))  # pi = [0.25, 0.75] at [0, 1]
    actions = np.concatenate([agent.act(np.array([[0.0, 1.0]] * 100, np.float32)) for _ in range(40)])
    assert abs(actions.mean() - 0.75) < 0.03
    play_episode(agent)
    state = agent.state_dict()
    assert set(state) == {'network', 'optimizer', 'env_steps', 'learner_steps', 'discarded_steps'}
    other = make_agent()
    other.load_state_dict(state)
    assert other.env_steps == 3 and other.learner_steps == 1
    torch.testing.assert_close(other.online_network.weight, agent.online_network.weight)
