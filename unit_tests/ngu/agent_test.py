"""NGU's agent pieces: the actor on real CartPole (each step's previous action and rewards, policy index and
intrinsic reward, the LSTM state zeroed at episode starts) and the learner (Retrace on r^e + beta_j r^i with each
sequence's gamma_j, priorities, the embedding and RND predictor trained, RND's target fixed)."""

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import episodic_novelty, gym_env, transformed_returns
from deep_rl_zoo.ngu import agent
from deep_rl_zoo.ngu import replay as ngu_replay
from deep_rl_zoo.ngu.settings import NguSettings
from unit_tests import pong_sequences
from unit_tests.r2d2.agent_test import dtypes_seen

SETTINGS = NguSettings(
    seed=3, num_actors=2, num_envs_per_actor=2, actor_update_interval=30, environment_name='CartPole-v1', environment_kind='classic',
    exploration_epsilon_base=0.4, exploration_epsilon_alpha=7.0, num_policies=3, intrinsic_reward_beta=0.3, gamma_max=0.99, gamma_min=0.9,
    episodic_memory_capacity=1000, num_neighbours=10, kernel_epsilon=1e-4, pseudo_count_constant=1e-3, cluster_distance=8e-3,
    max_similarity=8.0, max_lifelong_modulation=5.0, value_rescaling_eps=1e-3, terminal_on_life_loss=False,
    replay_capacity=200, min_replay_size=6, priority_exponent=0.9, priority_eps=1e-6, unroll_length=4, burn_in=2,
    compress_replay=False, learning_rate=1e-3, intrinsic_learning_rate=1e-3, adam_eps=1e-8, batch_size=4, learn_interval=16,
    target_network_update_interval=2, retrace_lambda=0.9, intrinsic_train_steps=3, priority_eta=0.9,
    importance_sampling_exponent_begin_value=0.6, importance_sampling_exponent_end_value=0.6, importance_sampling_exponent_decay_step=1,
    max_grad_norm=10.0, eval_exploration_epsilon=0.0,
)  # fmt: skip


def make_actor(first_stream=0, num_steps=60, seed=5):
    settings = SETTINGS.replace(actor_update_interval=num_steps)
    env = gym_env.create_classic_vector_env('CartPole-v1', 2, seed=seed)
    torch.manual_seed(0)
    network = agent.make_network(env, settings)
    return agent.build_actor(network, env, settings, SETTINGS.seed + first_stream, torch.device('cpu'))


def collect(actor):
    buffer = {name: torch.full(shape, float('nan') if dtype.is_floating_point else -7, dtype=dtype) for name, (shape, dtype) in agent.rollout_spec(actor.unroll_length, 'classic')(actor.env, 2, 99).items()}
    actor.collect(buffer)
    for name, tensor in buffer.items():
        assert not (tensor.isnan().any() if tensor.is_floating_point() else (tensor == -7).any()), f'{name} not filled'
    return buffer


def test_the_actor_writes_each_steps_inputs_policy_and_intrinsic_reward():
    actor = make_actor(first_stream=2)
    buffer = collect(actor)
    extras, ends = buffer['extras'], buffer['episode_end']
    assert ends.any(), 'the test needs episode ends'
    starts = torch.cat([torch.ones(1, 2, dtype=torch.bool), ends[:-1]])
    # The previous action and rewards of each step are the step before's, zero at episode starts.
    expected_action = torch.where(starts[1:], 0, buffer['action'][:-1])
    assert torch.equal(extras[1:, :, ngu_replay.PREVIOUS_ACTION].long(), expected_action)
    assert torch.equal(extras[1:, :, ngu_replay.PREVIOUS_REWARD], torch.where(starts[1:], 0.0, buffer['reward'][:-1]))
    assert torch.equal(extras[1:, :, ngu_replay.PREVIOUS_INTRINSIC_REWARD], torch.where(starts[1:], 0.0, extras[:-1, :, ngu_replay.INTRINSIC_REWARD]))
    assert not extras[0, :, ngu_replay.PREVIOUS_ACTION : ngu_replay.POLICY].any()  # the first step starts an episode
    # Environments 2 and 3 of the run's 4 play policies 2 mod 3 and 3 mod 3, always.
    assert extras[:, 0, ngu_replay.POLICY].eq(2).all() and extras[:, 1, ngu_replay.POLICY].eq(0).all()
    # Intrinsic rewards: episodic bonus (at most 1 / c) times a factor in [1, 5]; the stream's first step is 1 / sqrt(K + c)
    # against the single first embedding, so positive.
    intrinsic = extras[:, :, ngu_replay.INTRINSIC_REWARD]
    assert (intrinsic >= 0).all() and (intrinsic <= 5 / 1e-3).all() and (intrinsic[0] > 0).all()
    assert not buffer['recurrent_state'][starts].any() and buffer['recurrent_state'][~starts].abs().sum(dim=-1).gt(0).all()
    assert buffer['first_stream'].tolist() == [2] and not buffer['visited_rooms'].any()


def test_the_intrinsic_reward_is_the_episodic_bonus_times_the_lifelong_factor():
    actor = make_actor(num_steps=1)
    policy = actor.policy
    observation = actor._observation
    embeddings = policy._embed(observation)
    buffer = collect(actor)
    reached = buffer['final_observation'][0].numpy()
    # Recompute by hand: the memory held the first observation's embedding; the RND error's moments are this batch's.
    with torch.no_grad():
        prediction, target = policy.networks.rnd(torch.from_numpy(reached))
    errors = ((prediction - target) ** 2).mean(dim=-1).double().numpy()
    moments = episodic_novelty.RunningMoments()
    moments.update(errors)
    expected = []
    for env in range(2):
        memory = agent.episodic_memory(SETTINGS, 1, 32)
        memory.reset(0, embeddings[env])
        episodic = memory.reward(0, policy._embed(reached)[env])
        expected.append(episodic * episodic_novelty.lifelong_modulator(errors[env], moments.mean, moments.std, 5.0))
    np.testing.assert_allclose(buffer['extras'][0, :, ngu_replay.INTRINSIC_REWARD].numpy(), expected, rtol=1e-5)


@pytest.mark.slow
def test_the_learner_learns_retrace_on_the_mixed_reward_with_each_policys_discount(monkeypatch):
    buffers = [collect(make_actor(first_stream=first_stream, num_steps=40, seed=first_stream)) for first_stream in (0, 2)]
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    torch.manual_seed(1)
    learner = agent.build_learner(agent.make_network(env, SETTINGS), env, SETTINGS, 0, torch.device('cpu'))
    before = {name: parameter.clone() for name, parameter in learner.network.named_parameters()}
    calls = []
    original = transformed_returns.transformed_retrace_targets

    def recording(q_selector, q_target, action, reward, discount, mask, retrace_lambda, eps):
        calls.append((reward.clone(), discount.clone(), mask.clone(), retrace_lambda))
        return original(q_selector, q_target, action, reward, discount, mask, retrace_lambda, eps)

    monkeypatch.setattr(transformed_returns, 'transformed_retrace_targets', recording)
    sampled = []
    sample_prioritized = learner.replay.sample_prioritized
    monkeypatch.setattr(learner.replay, 'sample_prioritized', lambda *args: sampled.append(sample_prioritized(*args)) or sampled[-1])
    learner.update(buffers)
    assert learner.env_steps == 160 and learner.learner_steps == learner.learning_env_steps // 16 > 0
    assert len(calls) == learner.learner_steps
    betas, gammas = episodic_novelty.policy_family(3, 0.3, 0.99, 0.9)
    relabelled = 0
    for (reward, discount, mask, retrace_lambda), sample in zip(calls, sampled):
        extras = learner.replay.extras_at(sample.keys[0])  # [B, T, 5]
        policy = extras[:, 0, ngu_replay.POLICY].astype(int)
        sequences = sample.sequences
        # The B sampled rows, each learned for its own policy j, then each row of j != 0 again, learned for policy 0:
        # r^e alone (beta_0 = 0) and gamma_0.
        copied = np.flatnonzero(policy != 0)
        relabelled += len(copied)
        expected_reward = np.concatenate([sequences.reward + betas[policy][:, None] * extras[:, :, ngu_replay.INTRINSIC_REWARD], sequences.reward[copied]])
        assert_close(reward, torch.from_numpy(expected_reward.T).float())
        # The replay's discount is 1 - terminal.
        expected_discount = np.concatenate([sequences.discount * gammas[policy][:, None], sequences.discount[copied] * gammas[0]])
        assert_close(discount, torch.from_numpy(expected_discount.T).float())
        assert torch.equal(mask, torch.from_numpy(np.concatenate([sequences.mask, sequences.mask[copied]]).T))
        assert retrace_lambda == 0.9
    assert relabelled > 0, 'the test needs sequences of policies other than 0'
    changed = {name for name, parameter in learner.network.named_parameters() if not torch.equal(parameter, before[name])}
    assert any(name.startswith('q.') for name in changed) and any(name.startswith('embedding.') for name in changed)
    assert any(name.startswith('rnd.predictor') for name in changed) and not any(name.startswith('rnd.target') for name in changed)
    assert 'rnd.observation_normalizer.count' in changed  # folded in every step the actors sent
    statistics = learner.learner_statistics()
    assert {'loss', 'inverse_dynamics_loss', 'rnd_loss', 'intrinsic_reward_mean', 'priority_mean'} <= set(statistics)
    assert statistics['policy_zero_rows'] == pytest.approx(relabelled / len(calls))
    assert set(learner.state_dict()) == {'network', 'target_network', 'optimizer', 'intrinsic_optimizer', 'env_steps', 'learning_env_steps', 'learner_steps'}


def test_the_policy_ladder_spreads_each_policy_over_the_epsilon_rungs():
    assert agent.policy_ladder(np.arange(16), 8).tolist() == [0, 1, 2, 3, 4, 5, 6, 7] * 2  # policy 0 on rungs 0 and 8
    assert agent.policy_ladder(np.array([2, 3]), 3).tolist() == [2, 0]


def test_each_sequence_of_a_policy_other_than_0_is_copied_relabelled_for_policy_0():
    env = gym_env.create_classic_vector_env('CartPole-v1', 1, seed=0)
    learner = agent.build_learner(agent.make_network(env, SETTINGS), env, SETTINGS, 0, torch.device('cpu'))
    num_steps, rows = 3, 3

    def grid(offset):  # [T, B] with distinct numbers per row and step
        return torch.arange(num_steps * rows, dtype=torch.float32).view(num_steps, rows) + offset

    batch = agent.LearnerBatch(
        observation=torch.arange((num_steps + 1) * rows * 4, dtype=torch.float32).view(num_steps + 1, rows, 4), action=grid(0).long() % 2,
        reward=grid(100), intrinsic_reward=grid(200), not_terminal=torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]),
        first=torch.tensor([[True, False, False], [False, False, False], [False, False, False]]),
        mask=torch.tensor([[True, True, True], [True, True, True], [True, False, True]]),
        inputs=agent.StepInputs(grid(300)[[0, 0, 1, 2]].long(), grid(400)[[0, 0, 1, 2]], grid(500)[[0, 0, 1, 2]], torch.tensor([2, 0, 1]).expand(4, 3)),
        state=(torch.tensor([[1.0], [2.0], [3.0]]), torch.tensor([[4.0], [5.0], [6.0]])), importance_weights=torch.tensor([0.5, 1.0, 0.25]),
        source=torch.arange(3),
    )  # fmt: skip
    relabelled = learner.with_policy_zero_copies(batch)
    # Rows 0 and 2 (policies 2 and 1) are copied after the three; row 1 (policy 0) is not.
    for name in ('observation', 'action', 'reward', 'intrinsic_reward', 'not_terminal', 'first', 'mask'):
        assert torch.equal(getattr(relabelled, name), torch.cat([getattr(batch, name), getattr(batch, name)[:, [0, 2]]], dim=1)), name
    for name in ('previous_action', 'previous_extrinsic_reward', 'previous_intrinsic_reward'):
        assert torch.equal(getattr(relabelled.inputs, name), torch.cat([getattr(batch.inputs, name), getattr(batch.inputs, name)[:, [0, 2]]], dim=1))
    assert relabelled.inputs.policy.tolist() == [[2, 0, 1, 0, 0]] * 4
    assert relabelled.state[0].flatten().tolist() == [1.0, 2.0, 3.0, 1.0, 3.0] and relabelled.state[1].flatten().tolist() == [4.0, 5.0, 6.0, 4.0, 6.0]
    assert relabelled.importance_weights.tolist() == [0.5, 1.0, 0.25, 0.5, 0.25] and relabelled.source.tolist() == [0, 1, 2, 0, 2]


# ------------------------------------------------------------------------------------ bf16 learning


@pytest.mark.slow
def test_bf16_learning_runs_the_q_networks_torsos_in_bfloat16_and_the_embedding_and_rnd_in_float32():
    """Only the Q network's unrolls take bfloat16 torsos; the embedding network and RND learn in float32, as the actors
    run them: RND's prediction error, the lifelong novelty, is a small difference of two networks' outputs."""
    (learner,) = pong_sequences.pong_learners(agent, True)
    network = learner.network
    q_convs, q_lstm = dtypes_seen(network.q.torso.convs), dtypes_seen(network.q.lstm)
    target_convs = dtypes_seen(learner.target_network.torso.convs)
    embedding_convs, rnd_predictor, rnd_target = (dtypes_seen(module) for module in (network.embedding.torso.convs, network.rnd.predictor, network.rnd.target))
    learner.learn()
    assert q_convs == [(torch.bfloat16, torch.bfloat16)] * 2 and target_convs == [(torch.bfloat16, torch.bfloat16)]  # frames scaled to bfloat16
    assert q_lstm == [(torch.float32, torch.float32)] * 2
    assert embedding_convs == [(torch.float32, torch.float32)] * 2  # f(x_t) and f(x_t+1)
    assert rnd_predictor == [(torch.float32, torch.float32)] and rnd_target == [(torch.float32, torch.float32)]
    assert all(parameter.dtype == torch.float32 for parameter in network.parameters())


@pytest.mark.slow
def test_bf16_learning_agrees_with_float32_on_a_fixed_batch():
    """As R2D2's: the Q loss within 1% of float32's and the Q network's gradient pointing the same way (cosine >
    0.999); the embedding's and RND's losses, learned in float32, the same."""
    learners = pong_sequences.pong_learners(agent, False, True)
    for learner in learners:
        learner.learn()
    float32_statistics, bf16_statistics = (learner.learner_statistics() for learner in learners)
    assert bf16_statistics['loss'] == pytest.approx(float32_statistics['loss'], rel=0.01) and bf16_statistics['loss'] != float32_statistics['loss']
    for name in ('inverse_dynamics_loss', 'rnd_loss'):
        assert bf16_statistics[name] == float32_statistics[name]
    float32_gradient, bf16_gradient = (pong_sequences.gradient(learner.network.q) for learner in learners)
    assert torch.nn.functional.cosine_similarity(bf16_gradient, float32_gradient, dim=0).item() > 0.999
    assert [learner.bf16_learning for learner in learners] == [False, True]  # the flag's value reaches the learner
