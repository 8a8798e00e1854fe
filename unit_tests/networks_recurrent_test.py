"""RecurrentQNetwork (DRQN): shapes, unrolling equals stepping, episode-start resets per environment, the Atari
network on single uint8 frames, and bad input; R2D2's network: the previous action and reward reach its LSTM; the
Atari networks of DRQN, R2D2 and NGU: a learner's T x B frames as one channels-last batch, with the same numbers."""

import pytest
import torch

from deep_rl_zoo.networks import common
from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH, MlpTorso
from deep_rl_zoo.networks.ngu import StepInputs, ngu_networks
from deep_rl_zoo.networks.recurrent_value import PreviousStep, mlp_recurrent_dueling_q_network, nature_cnn_recurrent_dueling_q_network
from deep_rl_zoo.networks.value import RecurrentQNetwork, mlp_recurrent_q_network, nature_cnn_recurrent_q_network


def network(seed=0):
    torch.manual_seed(seed)
    return mlp_recurrent_q_network(observation_size=3, num_actions=2, hidden_size=8)


def test_shapes_and_zero_initial_state():
    net = network()
    h, c = net.initial_state(5)
    assert h.shape == c.shape == (5, 8) and not h.any() and not c.any()
    q, (h, c) = net(torch.randn(7, 5, 3))
    assert q.shape == (7, 5, 2) and h.shape == c.shape == (5, 8)
    # No state means the zero state.
    observation = torch.randn(4, 5, 3)
    torch.testing.assert_close(net(observation)[0], net(observation, net.initial_state(5))[0])


def test_unrolling_a_sequence_equals_stepping_with_the_carried_state():
    net = network()
    observation = torch.randn(6, 3, 3)
    q_unrolled, final_state = net(observation)
    state, q_steps = None, []
    for t in range(6):
        q, state = net(observation[t : t + 1], state)
        q_steps.append(q)
    torch.testing.assert_close(torch.cat(q_steps), q_unrolled)
    torch.testing.assert_close(state, final_state)


def test_first_mask_zeroes_the_state_of_that_environment_only_at_that_step():
    """Env 1 starts an episode at step 3: from there its Q-values are those of a fresh unroll from step 3;
    env 0 (no reset) and env 1's earlier steps are unchanged."""
    net = network()
    observation = torch.randn(6, 2, 3)
    first = torch.zeros(6, 2, dtype=torch.bool)
    first[3, 1] = True
    q, _ = net(observation, None, first)
    q_plain, _ = net(observation)
    torch.testing.assert_close(q[:, 0], q_plain[:, 0])
    torch.testing.assert_close(q[:3, 1], q_plain[:3, 1])
    q_fresh, _ = net(observation[3:, 1:2])
    torch.testing.assert_close(q[3:, 1], q_fresh[:, 0])
    assert not torch.allclose(q[3:, 1], q_plain[3:, 1])


def test_first_at_the_first_step_discards_the_given_state():
    net = network()
    observation = torch.randn(2, 2, 3)
    some_state = (torch.randn(2, 8), torch.randn(2, 8))
    first = torch.tensor([[True, False], [False, False]])
    q, _ = net(observation, some_state, first)
    torch.testing.assert_close(q[:, 0], net(observation[:, :1])[0][:, 0])
    torch.testing.assert_close(q[:, 1], net(observation[:, 1:], tuple(part[1:] for part in some_state))[0][:, 0])


def test_gradient_flows_through_time():
    net = network()
    observation = torch.randn(4, 2, 3, requires_grad=True)
    q, _ = net(observation)
    q[-1].sum().backward()
    assert observation.grad[0].abs().sum() > 0  # the last step's Q depends on the first observation


def test_atari_network_on_single_uint8_frames():
    torch.manual_seed(0)
    net = nature_cnn_recurrent_q_network(num_actions=6, frame_stack=1)
    assert net.lstm.input_size == 3136 and net.hidden_size == 512  # conv features straight into a 512-unit LSTM
    frames = torch.randint(0, 256, (3, 2, 1, 84, 84), dtype=torch.uint8)
    q, (h, c) = net(frames)
    assert q.shape == (3, 2, 6) and h.shape == (2, 512)


def test_bad_input_is_refused():
    net = network()
    with pytest.raises(ValueError, match=r'observation must be \[T, B, \*observation_shape\]'):
        net(torch.randn(5, 3))
    with pytest.raises(ValueError, match=r'first must have shape \[T, B\]=\(4, 2\)'):
        net(torch.randn(4, 2, 3), None, torch.zeros(4, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match='num_actions and hidden_size must be >= 1'):
        RecurrentQNetwork(MlpTorso(3, (4,)), 0, 8)


def test_r2d2_network_feeds_the_previous_action_and_reward_to_its_lstm():
    torch.manual_seed(0)
    net = mlp_recurrent_dueling_q_network(observation_size=3, num_actions=4, hidden_size=8)
    assert net.lstm.input_size == 8 + 4 + 1  # torso features, one-hot a_t-1, r_t-1
    observation = torch.randn(5, 2, 3)
    previous = PreviousStep(torch.tensor([[0, 1], [2, 3], [1, 1], [0, 2], [3, 0]]), torch.zeros(5, 2, requires_grad=True))
    q, (h, c) = net(observation, previous)
    assert q.shape == (5, 2, 4) and h.shape == c.shape == (2, 8)
    # The reward reaches every later output through the LSTM: a gradient at step 1 from the last step's Q.
    q[-1].sum().backward()
    assert previous.reward.grad[1].abs().gt(0).all() and previous.reward.grad.abs().sum() > 0
    # Another previous action at step 2 changes Q from step 2 on, not before.
    other_action = previous.action.clone()
    other_action[2] = (other_action[2] + 1) % 4
    q_other, _ = net(observation, PreviousStep(other_action, previous.reward.detach()))
    assert torch.equal(q_other[:2], q[:2].detach()) and not torch.allclose(q_other[2:], q[2:].detach())
    with pytest.raises(ValueError, match=r'previous reward must have shape \[T, B\]=\(5, 2\)'):
        net(observation, PreviousStep(previous.action, torch.zeros(5, 1)))


def r2d2_atari(num_steps, batch_size):
    return nature_cnn_recurrent_dueling_q_network(6, 4), (PreviousStep(torch.zeros(num_steps, batch_size, dtype=torch.long), torch.zeros(num_steps, batch_size)),)


def ngu_atari(num_steps, batch_size):
    zeros = torch.zeros(num_steps, batch_size)
    return ngu_networks('atari', (4, 84, 84), 6, 4).q, (StepInputs(zeros.long(), zeros, zeros, zeros.long() + 2),)


def drqn_atari(num_steps, batch_size):
    return nature_cnn_recurrent_q_network(6, frame_stack=4), ()


@pytest.mark.parametrize('make', [r2d2_atari, ngu_atari, drqn_atari], ids=['r2d2', 'ngu', 'drqn'])
def test_atari_recurrent_q_networks_fold_time_into_one_channels_last_batch_with_the_same_numbers(make, monkeypatch):
    """A learner's T x B frames (a time-major view of a batch-major replay batch) reach the Nature CNN as one batch of
    T * B frames, channels-last from CHANNELS_LAST_MIN_BATCH frames on, with the Q-values of the plain layout to 1e-5;
    an actor's few frames stay in the plain layout."""
    num_steps, batch_size = 8, CHANNELS_LAST_MIN_BATCH // 8
    torch.manual_seed(0)
    net, inputs = make(num_steps, batch_size)
    layouts = []
    net.torso.convs.register_forward_pre_hook(lambda module, args: layouts.append((args[0].shape[0], args[0].is_contiguous(memory_format=torch.channels_last))))
    frames = torch.randint(0, 256, (batch_size, num_steps, 4, 84, 84), dtype=torch.uint8).transpose(0, 1)
    state = tuple(0.1 * torch.randn(batch_size, net.hidden_size) for _ in range(2))
    with torch.no_grad():
        q, (h, c) = net(frames, *inputs, state)
        monkeypatch.setattr(common, 'CHANNELS_LAST_MIN_BATCH', 10**6)  # the plain layout for every batch
        q_plain, (h_plain, c_plain) = net(frames, *inputs, state)
        monkeypatch.undo()
        net(frames[:1], *(type(part)(*(x[:1] for x in part)) for part in inputs), state)  # an actor's step: B frames
    assert layouts == [(num_steps * batch_size, True), (num_steps * batch_size, False), (batch_size, False)]
    for mine, plain in ((q, q_plain), (h, h_plain), (c, c_plain)):
        torch.testing.assert_close(mine, plain, rtol=1e-5, atol=1e-5)
