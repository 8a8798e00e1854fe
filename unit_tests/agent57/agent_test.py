"""Agent57's pieces: the combined values it acts on (exact numbers), each head's Retrace target on its own reward,
and the per-environment meta-controllers choosing each episode's policy on real CartPole."""

import numpy as np
import torch
from torch.testing import assert_close

from deep_rl_zoo import gym_env, transformed_returns
from deep_rl_zoo.agent57 import agent
from deep_rl_zoo.ngu import replay as ngu_replay
from unit_tests.ngu.agent_test import VALUES

AGENT57_VALUES = {**VALUES, 'ucb_window_size': 10, 'ucb_beta': 1.0, 'ucb_epsilon': 0.0}


def test_combined_values_by_hand():
    # eps = 0: h^-1(y) = sign(y)((|y| + 1)^2 - 1): h-space 1 -> 3, 2 -> 8, -1 -> -3, 0 -> 0.
    q = torch.tensor([[[1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 2.0]]])  # [B=2, heads, A=2]: Q^e = [3, 0], Q^i = [0, 8]
    combined = agent.combined_values(q, torch.tensor([0.0, 0.5]), eps=0.0)
    assert_close(combined, torch.tensor([[3.0, 0.0], [3.0, 4.0]]))  # beta 0: 3, 0; beta 0.5: 3 + 0, 0 + 4
    assert combined.argmax(dim=-1).tolist() == [0, 1]


def make_actor(num_steps=80, first_stream=0):
    values = {**AGENT57_VALUES, 'actor_update_interval': num_steps}
    env = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=first_stream)
    torch.manual_seed(0)
    return agent.build_actor(agent.make_network(env, values), env, values, VALUES['seed'] + first_stream, torch.device('cpu'))


def rollout(actor):
    spec = agent.ngu.rollout_spec(actor.unroll_length, 'classic')(actor.env, 2, 99)
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
    actor.collect(buffer)
    return buffer


def test_each_environments_meta_controller_picks_each_episodes_policy():
    actor = make_actor()
    buffer = rollout(actor)
    policy, ends = buffer['extras'][:, :, ngu_replay.POLICY].long(), buffer['episode_end']
    for env in range(2):
        episode = torch.cat([torch.zeros(1, dtype=torch.long), ends[:-1, env].long().cumsum(0)])
        assert int(episode[-1]) >= 2, 'the test needs three episodes of each environment'
        # Within an episode one policy; the first N = 3 episodes play arms 0, 1, 2 in turn.
        for k in range(int(episode[-1]) + 1):
            arms = policy[episode == k, env].unique().tolist()
            assert arms == [k] if k < 3 else len(arms) == 1
        bandit = actor.policy.bandits[env]
        assert bandit._episodes == int(ends[:, env].sum())


def test_each_head_learns_retrace_on_its_own_reward(monkeypatch):
    values = {**AGENT57_VALUES, 'min_replay_size': 4}
    buffers = [rollout(make_actor(40, first_stream)) for first_stream in (0, 2)]
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    torch.manual_seed(1)
    learner = agent.build_learner(agent.make_network(env, values), values, 0, torch.device('cpu'))
    assert learner.agent_name == 'Agent57'
    calls = []
    original = transformed_returns.transformed_retrace_targets

    def recording(q_selector, q_target, action, reward, discount, mask, retrace_lambda, eps):
        calls.append((q_selector.clone(), q_target.clone(), reward.clone()))
        return original(q_selector, q_target, action, reward, discount, mask, retrace_lambda, eps)

    monkeypatch.setattr(transformed_returns, 'transformed_retrace_targets', recording)
    sampled = []
    sample_prioritized = learner.replay.sample_prioritized
    monkeypatch.setattr(learner.replay, 'sample_prioritized', lambda *args: sampled.append(sample_prioritized(*args)) or sampled[-1])
    learner.update(buffers)
    assert learner.learner_steps > 0 and len(calls) == 2 * learner.learner_steps
    for step, sample in enumerate(sampled):
        (selector_e, target_e, reward_e), (selector_i, target_i, reward_i) = calls[2 * step : 2 * step + 2]
        extras = learner.replay.extras_at(sample.keys[0])
        assert_close(reward_e, torch.from_numpy(sample.sequences.reward.T))  # r^e alone
        assert_close(reward_i, torch.from_numpy(extras[:, :, ngu_replay.INTRINSIC_REWARD].T))  # r^i alone
        assert not torch.equal(target_e, target_i) and torch.equal(selector_e, selector_i)  # own heads, one greedy policy
    assert np.isfinite(learner.learner_statistics()['loss'])
