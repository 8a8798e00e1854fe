"""The sequence learning R2D2, NGU and Agent57 share (deep_rl_zoo/sequence_learning.py): the Ape-X epsilon ladder,
the sequence layout, the masks and the loss, by hand; the burn-in's detached state."""

import numpy as np
import pytest
import torch

from deep_rl_zoo import sequence_learning
from deep_rl_zoo.networks.recurrent_value import PreviousStep


def test_apex_epsilons_by_hand():
    assert sequence_learning.apex_epsilons(1).tolist() == [0.4]
    # 0.4^1, 0.4^(1 + 7/2) = 0.4^4 sqrt(0.4) = 0.0256 x 0.6324555, 0.4^8
    np.testing.assert_allclose(sequence_learning.apex_epsilons(3), [0.4, 0.0256 * 0.63245553, 0.00065536], rtol=1e-7)
    np.testing.assert_allclose(sequence_learning.apex_epsilons(2, base=0.5, alpha=1.0), [0.5, 0.25])
    with pytest.raises(ValueError, match='num_actors must be >= 1'):
        sequence_learning.apex_epsilons(0)


def test_sequence_layout_by_hand():
    assert sequence_learning.sequence_layout(40, 80) == (120, 80)  # the paper's: 80 learned steps, sequences 40 apart
    assert sequence_learning.sequence_layout(4, 9) == (13, 8)  # ceil(9 / 2) = 5 apart


def test_pad_first_and_learned_steps_by_hand():
    first = torch.tensor([[True, False], [False, False], [False, True]])  # [T=3, B=2]
    assert sequence_learning.pad_first(first).tolist() == [[True, False], [False, False], [False, True], [False, False]]
    mask = torch.tensor([[True, True], [True, True], [False, True]])
    # burn-in 1: sequence 0 starts an episode and learns its real steps 0 and 1; sequence 1 learns its steps 1 and 2.
    assert sequence_learning.learned_steps(mask, first, 1).tolist() == [[True, False], [True, True], [False, True]]


def test_sequence_loss_sums_over_time_and_averages_over_the_batch_by_hand():
    td_error = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]])  # [T=3, B=2]
    learned = torch.tensor([[True, False], [True, True], [False, True]])
    # Sequence 0: 0.5 (1 + 9) = 5; sequence 1: 0.5 (1 + 16) = 8.5, weighted 0.5: 4.25; mean over the batch 4.625 (a mean
    # over time would give (2.5 + 2.125) / 2 = 2.3125).
    assert sequence_learning.sequence_loss(td_error, learned, torch.tensor([1.0, 0.5])).item() == 4.625


class Accumulator(torch.nn.Module):
    """q_t = h_t = h_t-1 + x_t (inputs unused), from the stored state h; its state is (h, h)."""

    def forward(self, observation, inputs, state, first):
        h, outputs = state[0], []
        for x in observation:
            h = h + x
            outputs.append(h)
        return torch.stack(outputs), (h, h)


def test_the_burn_in_detaches_the_stored_state_of_sequences_that_start_mid_episode():
    observation = torch.ones(3, 2, 1)  # [T=3, B=2, 1]
    stored = torch.zeros(2, 1, requires_grad=True)
    first = torch.tensor([[True, False], [False, False], [False, False]])  # sequence 0 starts an episode
    inputs = PreviousStep(torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, 2))
    q = sequence_learning.unroll_with_burn_in(Accumulator(), observation, inputs, (stored, stored), first, burn_in=2)
    assert q[:, :, 0].tolist() == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    q[2:].sum().backward()  # the learned step after the burn-in
    assert stored.grad[:, 0].tolist() == [1.0, 0.0]  # only the sequence that starts an episode reaches its state
