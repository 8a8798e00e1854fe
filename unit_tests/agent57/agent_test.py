"""Agent57's pieces: the combined values it acts on (exact numbers), each network's Retrace target on its own reward,
the two networks apart (the intrinsic loss reaches no parameter the extrinsic one does), each network's priority
share, and the per-environment meta-controllers choosing each episode's policy on real CartPole."""

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import gym_env, transformed_returns
from deep_rl_zoo.agent57 import agent
from deep_rl_zoo.agent57.settings import of_ngu
from deep_rl_zoo.ngu import replay as ngu_replay
from unit_tests import pong_sequences
from unit_tests.ngu.agent_test import SETTINGS
from unit_tests.r2d2.agent_test import dtypes_seen

AGENT57_SETTINGS = of_ngu(SETTINGS).replace(ucb_window_size=10, ucb_beta=1.0, ucb_epsilon=0.0)


def test_combined_values_by_hand():
    # eps = 0: h^-1(y) = sign(y)((|y| + 1)^2 - 1): h-space 1 -> 3, 2 -> 8, -1 -> -3, 0 -> 0.
    q = torch.tensor([[[1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 2.0]]])  # [B=2, heads, A=2]: Q^e = [3, 0], Q^i = [0, 8]
    combined = agent.combined_values(q, torch.tensor([0.0, 0.5]), eps=0.0)
    assert_close(combined, torch.tensor([[3.0, 0.0], [3.0, 4.0]]))  # beta 0: 3, 0; beta 0.5: 3 + 0, 0 + 4
    assert combined.argmax(dim=-1).tolist() == [0, 1]


def make_actor(num_steps=80, first_stream=0):
    settings = AGENT57_SETTINGS.replace(actor_update_interval=num_steps)
    env = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=first_stream)
    torch.manual_seed(0)
    return agent.build_actor(agent.make_network(env, settings), env, settings, SETTINGS.seed + first_stream, torch.device('cpu'))


def rollout(actor):
    spec = agent.rollout_spec(actor.unroll_length, 'classic')(actor.env, 2, 99)
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
    actor.collect(buffer)
    return buffer


@pytest.mark.slow
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


@pytest.mark.slow
def test_each_head_learns_retrace_on_its_own_reward(monkeypatch):
    settings = AGENT57_SETTINGS.replace(min_replay_size=4)
    buffers = [rollout(make_actor(40, first_stream)) for first_stream in (0, 2)]
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    torch.manual_seed(1)
    learner = agent.build_learner(agent.make_network(env, settings), env, settings, 0, torch.device('cpu'))
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
        copied = np.flatnonzero(extras[:, 0, ngu_replay.POLICY] != 0)  # learned again as policy 0's (NGU's relabelling)
        assert_close(reward_e, torch.from_numpy(np.concatenate([sample.sequences.reward, sample.sequences.reward[copied]]).T))  # r^e alone
        intrinsic = extras[:, :, ngu_replay.INTRINSIC_REWARD]
        assert_close(reward_i, torch.from_numpy(np.concatenate([intrinsic, intrinsic[copied]]).T))  # r^i alone
        assert not torch.equal(target_e, target_i) and torch.equal(selector_e, selector_i)  # own heads, one greedy policy
    assert np.isfinite(learner.learner_statistics()['loss'])


def learner_with_a_batch(**changes):
    settings = AGENT57_SETTINGS.replace(min_replay_size=4, learn_interval=10**6, **changes)  # fills the replay, learns nothing
    buffers = [rollout(make_actor(40, first_stream)) for first_stream in (0, 2)]
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    torch.manual_seed(1)
    learner = agent.build_learner(agent.make_network(env, settings), env, settings, 0, torch.device('cpu'))
    learner.update(buffers)
    assert learner.learner_steps == 0
    return learner, learner.learner_batch(learner.replay.sample_prioritized(4, 0.6))


@pytest.mark.slow
def test_the_intrinsic_loss_reaches_no_parameter_of_the_extrinsic_network():
    learner, batch = learner_with_a_batch()
    q = learner.network.q
    reached = []
    for head in (agent.EXTRINSIC, agent.INTRINSIC):
        q.zero_grad(set_to_none=True)
        losses, *_ = learner.head_losses(batch)
        losses[head].backward()
        reached.append({name for name, parameter in q.named_parameters() if parameter.grad is not None and parameter.grad.abs().sum() > 0})
    extrinsic, intrinsic = reached
    assert extrinsic and intrinsic and not extrinsic & intrinsic  # a shared torso or LSTM would be in both
    assert {name for name, _ in q.named_parameters()} == extrinsic | intrinsic
    # Each network has its own target copy.
    assert set(learner.target_network.state_dict()) == set(q.state_dict()) and any(name.startswith('intrinsic.lstm') for name in q.state_dict())


def test_each_network_decides_half_of_the_priority_mass():
    learner, _ = learner_with_a_batch(priority_eta=0.5)
    learned = torch.tensor([[True, True], [True, False]])
    td_extrinsic = torch.tensor([[0.01, 0.03], [0.03, 9.0]])  # R2D2's priority 0.5 max + 0.5 mean: 0.025, 0.03
    td_intrinsic = torch.tensor([[4.0, -1.0], [-2.0, 5.0]])  # 3.5, 1.0
    priorities = learner.row_priorities([td_extrinsic, td_intrinsic], learned)
    # Each divided by its batch mean (0.0275 and 2.25), then averaged: (0.025 / 0.0275 + 3.5 / 2.25) / 2, (0.03 / 0.0275 + 1 / 2.25) / 2.
    assert_close(priorities, torch.tensor([(0.025 / 0.0275 + 3.5 / 2.25) / 2, (0.03 / 0.0275 + 1.0 / 2.25) / 2]))


def test_best_arm_by_hand():
    assert agent.best_arm([], 3) == 0
    # Means: arm 0: (0 + 1) / 2 = 0.5; arm 2: 0.75; arm 1 absent.
    assert agent.best_arm([(0, 0.0), (2, 0.75), (0, 1.0)], 3) == 2
    assert agent.best_arm([(2, 0.5), (1, 0.5)], 3) == 1  # a tie goes to the lowest arm
    assert agent.best_arm([(1, -2.0)], 3) == 1  # only the arms played count


@pytest.mark.slow
def test_the_learner_keeps_the_best_arm_of_the_window_and_evaluation_plays_it():
    learner, _ = learner_with_a_batch(ucb_window_size=1)  # a window of 1 x 4 environments' episodes
    network = learner.network

    def rollout_ending(arms_and_returns):
        buffer = rollout(make_actor(3))
        buffer['episode_end'].zero_()
        for t, (arm, episode_return) in enumerate(arms_and_returns):
            buffer['episode_end'][t, 1] = True
            buffer['extras'][t, 1, ngu_replay.POLICY] = arm
            buffer['episode_return'][t, 1] = episode_return
        return buffer

    learner.arm_returns.clear()
    learner.update([rollout_ending([(2, 0.5), (1, 0.25), (1, 0.0)])])
    assert int(network.best_arm) == 2
    learner.update([rollout_ending([(1, 0.75), (0, 0.0)])])  # the window keeps the last 4: (1, 0.25), (1, 0), (1, 0.75), (0, 0)
    assert list(learner.arm_returns) == [(1, 0.25), (1, 0.0), (1, 0.75), (0, 0.0)] and int(network.best_arm) == 1
    restored, _ = learner_with_a_batch(ucb_window_size=1)
    restored.load_state_dict(learner.state_dict())
    assert list(restored.arm_returns) == list(learner.arm_returns)
    # The evaluation's policy plays the best arm at each episode start.
    evaluation = agent.eval_policy(network, AGENT57_SETTINGS, 0.0, seed=0)
    assert evaluation.policy.tolist() == [1]
    network.best_arm.fill_(2)
    evaluation.reset()
    assert evaluation.policy.tolist() == [2]


@pytest.mark.slow
def test_bf16_learning_runs_both_q_networks_torsos_in_bfloat16_and_agrees_with_float32_on_a_fixed_batch():
    """As NGU's: each Q network's torso in bfloat16 (the LSTMs float32), each network's loss within 1% of float32's
    and the gradient of both pointing the same way (cosine > 0.999)."""
    learners = pong_sequences.pong_learners(agent, False, True)
    q = learners[1].network.q
    convs = [dtypes_seen(network.torso.convs) for network in (q.extrinsic, q.intrinsic)]
    lstms = [dtypes_seen(network.lstm) for network in (q.extrinsic, q.intrinsic)]
    for learner in learners:
        learner.learn()
    assert all([output for _, output in seen] == [torch.bfloat16] * 2 for seen in convs)
    assert all(seen == [(torch.float32, torch.float32)] * 2 for seen in lstms)
    float32_statistics, bf16_statistics = (learner.learner_statistics() for learner in learners)
    for name in ('loss_extrinsic', 'loss_intrinsic'):
        assert bf16_statistics[name] == pytest.approx(float32_statistics[name], rel=0.01)
    float32_gradient, bf16_gradient = (pong_sequences.gradient(learner.network.q) for learner in learners)
    assert torch.nn.functional.cosine_similarity(bf16_gradient, float32_gradient, dim=0).item() > 0.999
    assert [learner.bf16_learning for learner in learners] == [False, True]
