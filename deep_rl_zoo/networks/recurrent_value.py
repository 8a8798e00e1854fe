"""Recurrent dueling Q networks: R2D2's torso -> LSTM -> dueling head (Kapturowski et al. 2019, section 2 and
appendix; the dueling head of Wang et al. 2016). They unroll like DRQN's `networks.value.RecurrentQNetwork` (same
call, same state, same episode-start resets), so the same actors and learner code drive both."""

import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso
from deep_rl_zoo.networks.curiosity import MiniGridTorso
from deep_rl_zoo.networks.value import RecurrentQNetwork, dueling_aggregate


class DuelingHead(nn.Module):
    """Q = V + A - mean_a A (Wang et al. 2016, eq. 9) from features [..., F]: a value stream and an advantage stream,
    each a hidden ReLU layer of `hidden_size` units and a linear output; returns [..., A]."""

    def __init__(self, input_size: int, num_actions: int, hidden_size: int):
        super().__init__()
        if input_size < 1 or num_actions < 1 or hidden_size < 1:
            raise ValueError(f'DuelingHead needs positive sizes, got {input_size}, {num_actions}, {hidden_size}')
        self.value = nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 1))
        self.advantage = nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, num_actions))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        flat = features.flatten(0, -2)
        return dueling_aggregate(self.value(flat), self.advantage(flat)).view(*features.shape[:-1], -1)


class RecurrentDuelingQNetwork(RecurrentQNetwork):
    """R2D2's network: torso -> LSTM of `hidden_size` units -> dueling head. `forward(observation [T, B, ...], state,
    first [T, B])` returns Q-values [T, B, A] and the state after the last step, as `RecurrentQNetwork`."""

    def __init__(self, torso: nn.Module, num_actions: int, hidden_size: int, head_hidden_size: int):
        super().__init__(torso, num_actions, hidden_size)
        self.head = DuelingHead(hidden_size, num_actions, head_hidden_size)

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(batch_size, self.hidden_size, device=self.lstm.weight_hh_l0.device)
        return zeros, zeros.clone()


def mlp_recurrent_dueling_q_network(observation_size: int, num_actions: int, hidden_size: int = 128) -> RecurrentDuelingQNetwork:
    """For vector observations: one fully connected ReLU layer, an LSTM and dueling streams, all `hidden_size` wide."""
    return RecurrentDuelingQNetwork(MlpTorso(observation_size, (hidden_size,)), num_actions, hidden_size, hidden_size)


def minigrid_recurrent_dueling_q_network(observation_shape: tuple[int, ...], num_actions: int, hidden_size: int = 128) -> RecurrentDuelingQNetwork:
    """For MiniGrid's grids [3, H, W]: the MiniGrid CNN (`networks.curiosity.MiniGridTorso`), an LSTM and dueling
    streams, all `hidden_size` wide (NGU's Q network on MiniGrid without its policy, action and reward inputs)."""
    return RecurrentDuelingQNetwork(MiniGridTorso(observation_shape, hidden_size), num_actions, hidden_size, hidden_size)


def lstm_size(kind: str) -> int:
    """The LSTM units of R2D2's (and NGU's) network for an environment kind: 512 on Atari (the paper's), 128 otherwise."""
    return 512 if kind == 'atari' else 128


def nature_cnn_recurrent_dueling_q_network(num_actions: int, frame_stack: int = 4) -> RecurrentDuelingQNetwork:
    """For Atari (the paper's): Nature DQN's convolutions and 512-unit layer, a 512-unit LSTM, dueling streams of 512."""
    return RecurrentDuelingQNetwork(NatureCnnTorso(frame_stack), num_actions, 512, 512)
