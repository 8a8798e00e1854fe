"""R2D2's agent pieces: the actor's buffers on real CartPole (the LSTM state before every
step, zeroed at episode starts, and greedy actions from the unrolled network), each actor's replay streams and
rungs, the learner's update (steps into the right streams, gradient steps owed, priorities written back, target
copies, checkpoint state, Montezuma's rooms) and its loss against the targets computed from the pure functions."""

import copy

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from deep_rl_zoo import gym_env, main_loop, transformed_returns
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.networks.recurrent_value import PreviousStep, mlp_recurrent_dueling_q_network
from deep_rl_zoo.r2d2 import agent
from deep_rl_zoo.r2d2.settings import R2d2Settings
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.sequence_learning import apex_epsilons
from unit_tests import pong_sequences
from unit_tests.ppo.agent_test import RecordingEnv

HIDDEN = 8


def empty_buffer(env, num_envs, steps):
    spec = agent.rollout_spec(steps, 'classic')(env, num_envs, 99)
    assert spec['recurrent_state'] == ((steps, num_envs, 2 * 128 + 2), torch.float32)  # make_network's LSTM for CartPole, a_t-1, r_t-1
    spec['recurrent_state'] = ((steps, num_envs, 2 * HIDDEN + 2), torch.float32)  # the small test network's
    return {name: torch.full(shape, float('nan') if dtype.is_floating_point else -7, dtype=dtype) for name, (shape, dtype) in spec.items()}


def small_network(seed=0):
    torch.manual_seed(seed)
    return mlp_recurrent_dueling_q_network(4, 2, HIDDEN)


def make_actor(num_steps, epsilons, first_stream=0, seed=5):
    env = RecordingEnv(gym_env.create_classic_vector_env('CartPole-v1', len(epsilons), seed=seed))
    return agent.R2d2Actor(small_network(), env, num_steps, np.array(epsilons), first_stream, False, seed), env


def test_the_actor_writes_steps_and_the_lstm_state_before_each_and_acts_greedily_at_epsilon_zero():
    num_steps = 60
    actor, env = make_actor(num_steps, [1.0, 0.0], first_stream=6)
    buffer = empty_buffer(env, 2, num_steps)
    actor.collect(buffer)
    for name, tensor in buffer.items():
        assert not (tensor.isnan().any() if tensor.is_floating_point() else (tensor == -7).any()), f'{name} not filled'
    assert buffer['first_stream'].tolist() == [6]
    assert buffer['recurrent_state'].shape == (num_steps, 2, 2 * HIDDEN + 2)
    ends = torch.from_numpy(np.stack([step.terminated | step.truncated for step in env.steps]))
    assert ends[:, 1].sum() >= 2, 'the test needs episode ends of the greedy environment'
    assert torch.equal(buffer['episode_end'], ends)
    assert torch.equal(buffer['action'], torch.from_numpy(np.stack(env.actions)))
    # Zero state, previous action and reward at the first step and after every episode end; elsewhere the LSTM state
    # and the step before's action and reward.
    starts = torch.cat([torch.ones(1, 2, dtype=torch.bool), ends[:-1]])
    assert not buffer['recurrent_state'][starts].any()
    assert buffer['recurrent_state'][~starts][:, : 2 * HIDDEN].abs().sum(dim=-1).gt(0).all()
    carried_previous = buffer['recurrent_state'][1:, :, 2 * HIDDEN :]
    assert torch.equal(carried_previous[..., 0], torch.where(starts[1:], 0, buffer['action'][:-1]).float())
    assert torch.equal(carried_previous[..., 1], torch.where(starts[1:], 0.0, buffer['reward'][:-1]))
    # Environment 1 (epsilon 0): the network unrolled over its steps from zeros reproduces its actions and states.
    previous = agent.sequence_inputs(PreviousStep(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1)), buffer['action'][:-1, 1:2], buffer['reward'][:-1, 1:2], starts[:, 1:2])
    with torch.no_grad():
        q, _ = actor.network(buffer['observation'][:, 1:2], previous, None, starts[:, 1:2])
        state = None
        for t in range(num_steps):
            if starts[t, 1]:
                state = None
            if state is not None:
                assert_close(buffer['recurrent_state'][t, 1, : 2 * HIDDEN], torch.cat(state, dim=1)[0])
            _, state = actor.network(buffer['observation'][t : t + 1, 1:2], PreviousStep(*(part[t : t + 1] for part in previous)), state)
    assert torch.equal(buffer['action'][:, 1], q[:, 0].argmax(dim=-1))
    # Environment 0 (epsilon 1) plays uniformly random actions: both of them.
    assert set(buffer['action'][:, 0].tolist()) == {0, 1}


def test_each_actor_gets_its_own_streams_and_rungs_of_the_ladder():
    settings = R2d2Settings(
        seed=3, num_actors=2, num_envs_per_actor=2, actor_update_interval=5, environment_name='CartPole-v1', environment_kind='classic',
        exploration_epsilon_base=0.4, exploration_epsilon_alpha=7.0,
    )  # fmt: skip
    factory = main_loop._ActorFactory(settings, agent.make_network, agent.build_actor)
    actors = [factory(actor_id, torch.device('cpu')) for actor_id in range(2)]
    assert [actor.first_stream for actor in actors] == [0, 2]
    ladder = apex_epsilons(4)
    assert actors[0].policy.epsilon.tolist() == ladder[:2].tolist() and actors[1].policy.epsilon.tolist() == ladder[2:].tolist()
    for actor in actors:
        actor.env.close()


def make_learner(num_streams=4, **overrides):
    network = small_network(seed=1)
    replay = replay_lib.PrioritizedSequenceReplay(
        priority_exponent=0.9, priority_eps=1e-6, capacity=200, sequence_length=6, overlap=4, observation_shape=(4,), observation_dtype=np.float32,
        discount=0.9, num_streams=num_streams, seed=0, state_size=2 * HIDDEN + 2,
    )  # fmt: skip
    settings = dict(
        learning_rate=1e-3, adam_eps=1e-3, batch_size=4, min_replay_size=10, learn_interval=8, target_network_update_interval=3, burn_in=2,
        n_step=3, priority_eta=0.9, value_rescaling_eps=1e-3, importance_sampling_exponent=LinearSchedule(0.6, 0.6, 1), max_grad_norm=10.0,
    )  # fmt: skip
    settings.update(overrides)
    return agent.R2d2Learner(network, replay, **settings)


def rollouts(num_steps=40):
    """Two actors' rollouts of two CartPoles each (streams 0-1 and 2-3)."""
    buffers = []
    for first_stream in (0, 2):
        actor, env = make_actor(num_steps, [0.5, 0.5], first_stream, seed=first_stream)
        buffer = empty_buffer(env, 2, num_steps)
        actor.collect(buffer)
        buffers.append(buffer)
    return buffers


def sorted_sequences(replay):
    sequences = replay.sequences_at(np.arange(replay.num_sequences))
    fields = (sequences.observation, sequences.action, sequences.reward, sequences.discount, sequences.first, sequences.mask, sequences.initial_state)
    return sorted(tuple(np.concatenate([np.ravel(field[b]).astype(np.float64) for field in fields])) for b in range(len(sequences.mask)))


def test_update_adds_each_rollout_to_its_streams_and_takes_the_gradient_steps_owed():
    learner = make_learner()
    buffers = rollouts()
    learner.update(buffers)
    assert learner.env_steps == 160
    # The replay holds what one replay fed all four environments' steps side by side holds.
    reference = replay_lib.SequenceReplay(200, 6, 4, (4,), np.float32, discount=0.9, num_streams=4, state_size=2 * HIDDEN + 2)
    joined = {name: torch.cat([buffer[name] for buffer in buffers], dim=1).numpy() for name in buffers[0] if name != 'first_stream'}
    for t in range(40):
        reference.add(*(joined[name][t] for name in ('observation', 'action', 'reward', 'terminal', 'episode_end', 'final_observation')), recurrent_state=joined['recurrent_state'][t])
    num_sequences = learner.replay.num_sequences
    assert num_sequences == reference.num_sequences > 4 * 4
    assert sorted_sequences(learner.replay) == sorted_sequences(reference)
    assert learner.learning_env_steps > 0
    assert learner.learner_steps == learner.learning_env_steps // 8 > 3
    assert learner.replay.max_priority != 1.0  # priorities were written back
    # The target network is a copy of the online one as of the last multiple of 3 gradient steps.
    statistics = learner.learner_statistics()
    assert {'loss', 'mean_q', 'priority_mean', 'importance_weight_min', 'grad_norm'} <= set(statistics)
    assert learner.agent_statistics()['replay_sequences'] == num_sequences
    restored = make_learner()
    restored.load_state_dict(learner.state_dict())
    assert restored.learner_steps == learner.learner_steps and restored.env_steps == learner.env_steps
    for mine, theirs in zip(restored.target_network.parameters(), learner.target_network.parameters()):
        assert torch.equal(mine, theirs)


def test_the_learner_reports_the_rooms_of_the_episodes_that_ended_when_it_counts_them():
    buffers = rollouts(10)
    buffers[0]['visited_rooms'][3, 1] = 3.0  # Montezuma's actors write an episode's rooms at its last step, else 0
    buffers[1]['visited_rooms'][7, 0] = 2.0
    counting, other = make_learner(count_rooms=True), make_learner()
    counting.update(buffers)
    other.update(buffers)
    statistics = counting.agent_statistics()
    assert (statistics['visited_rooms_mean'], statistics['visited_rooms_max']) == (2.5, 3.0)
    assert np.isnan(counting.agent_statistics()['visited_rooms_mean'])  # no episode ended since the last call
    assert not [name for name in other.agent_statistics() if 'rooms' in name]


def test_target_network_is_copied_every_interval():
    learner = make_learner(min_replay_size=1, learn_interval=1000)
    learner.update(rollouts(20))
    initial = copy.deepcopy(learner.target_network.state_dict())
    learner.learn()
    learner.learn()
    assert all(torch.equal(initial[name], value) for name, value in learner.target_network.state_dict().items())
    learner.learn()  # the third gradient step copies
    assert all(torch.equal(learner.network.state_dict()[name], value) for name, value in learner.target_network.state_dict().items())
    assert not all(torch.equal(initial[name], value) for name, value in learner.target_network.state_dict().items())


def test_loss_is_the_weighted_squared_error_to_the_transformed_targets_on_the_learned_steps():
    learner = make_learner(min_replay_size=1, learn_interval=1000)
    learner.update(rollouts(30))
    replay_copy = copy.deepcopy(learner.replay)
    learner.learn()
    loss = learner.learner_statistics()['loss']
    sample = replay_copy.sample_prioritized(4, 0.6)  # the same draw: the copy's random generator is in the same state
    network, target_network = small_network(seed=1), learner.target_network
    expected = 0.0
    for b in range(4):
        sequence = {name: torch.from_numpy(np.asarray(field[b])) for name, field in sample.sequences._asdict().items()}
        carried = sequence['initial_state']
        state = (carried[None, :HIDDEN], carried[None, HIDDEN : 2 * HIDDEN])
        first = torch.cat([sequence['first'], torch.zeros(1, dtype=torch.bool)])[:, None]
        # The LSTM's previous action and reward: the stored ones, then the sequence's own (zeros where an episode starts).
        previous_action = torch.cat([carried[2 * HIDDEN].long().view(1), sequence['action'].long()])
        previous_reward = torch.cat([carried[2 * HIDDEN + 1].view(1), sequence['reward']])
        previous = PreviousStep(torch.where(first[:, 0], 0, previous_action)[:, None], torch.where(first[:, 0], 0.0, previous_reward)[:, None])
        with torch.no_grad():
            q, _ = network(sequence['observation'][:, None], previous, state, first)
            q_target, _ = target_network(sequence['observation'][:, None], previous, state, first)
        targets = transformed_returns.transformed_n_step_q_targets(
            q, q_target, sequence['reward'][:, None], sequence['discount'][:, None], sequence['mask'][:, None], 3, 1e-3
        )[:, 0]
        q_taken = q[:-1, 0].gather(1, sequence['action'][:, None].long())[:, 0]
        # Burn-in steps (the first 2) are learned only in a sequence that starts an episode.
        learned = [t for t in range(6) if sequence['mask'][t] and (t >= 2 or sequence['first'][0])]
        errors = [(targets[t] - q_taken[t]) ** 2 / 2 for t in learned]
        expected += sample.weights[b] * float(sum(errors)) / 4  # summed over time, averaged over the batch (acme)
    assert loss == pytest.approx(expected, rel=1e-5)



# ------------------------------------------------------------------------------------ bf16 learning


def dtypes_seen(module):
    """Records (input dtype, output dtype) of each call of `module` in the returned list."""
    seen = []
    module.register_forward_hook(lambda module, inputs, output: seen.append((inputs[0].dtype, (output[0] if isinstance(output, tuple) else output).dtype)))
    return seen


@pytest.mark.slow
def test_bf16_learning_runs_only_the_unrolls_torsos_in_bfloat16_and_hands_the_lstm_float32_features():
    float32_learner, learner = pong_sequences.pong_learners(agent, False, True)
    convs, lstm, head = (dtypes_seen(module) for module in (learner.network.torso.convs, learner.network.lstm, learner.network.head))
    target_convs, target_lstm = dtypes_seen(learner.target_network.torso.convs), dtypes_seen(learner.target_network.lstm)
    float32_convs = dtypes_seen(float32_learner.network.torso.convs)
    learner.learn()
    float32_learner.learn()
    # The online network unrolls the burn-in, then the rest; the target network the whole sequence.
    assert [output for _, output in convs] == [torch.bfloat16] * 2 and [output for _, output in target_convs] == [torch.bfloat16]
    assert lstm == [(torch.float32, torch.float32)] * 2 and target_lstm == [(torch.float32, torch.float32)]
    assert head == [(torch.float32, torch.float32)] * 2
    assert [output for _, output in float32_convs] == [torch.float32] * 2
    assert not torch.is_autocast_enabled('cpu')
    assert all(parameter.dtype == torch.float32 for parameter in learner.network.parameters())
    assert all(state['exp_avg'].dtype == torch.float32 for state in learner.optimizer.state.values())
    actor = agent.R2d2Policy(learner.network, 0.0)
    actor.act(pong_sequences.pong_like_frames(1, 2, seed=1)[0])
    assert convs[-1][1] == torch.float32  # acting stays float32


@pytest.mark.slow
def test_bf16_learning_agrees_with_float32_on_a_fixed_batch():
    """The same Pong-like batch, network and step: the loss within 1% and the gradient pointing the same way as
    float32's (cosine > 0.999); the LSTM, heads and losses are float32, only the torsos keep 8 bits of mantissa."""
    learners = pong_sequences.pong_learners(agent, False, True)
    for learner in learners:
        learner.learn()
    (float32_loss, bf16_loss) = (learner.learner_statistics()['loss'] for learner in learners)
    float32_gradient, bf16_gradient = (pong_sequences.gradient(learner.network) for learner in learners)
    assert bf16_loss == pytest.approx(float32_loss, rel=0.01) and bf16_loss != float32_loss
    assert torch.nn.functional.cosine_similarity(bf16_gradient, float32_gradient, dim=0).item() > 0.999


def test_bf16_learning_flag_reaches_the_learner():
    assert [learner.bf16_learning for learner in pong_sequences.pong_learners(agent, False, True)] == [False, True]
