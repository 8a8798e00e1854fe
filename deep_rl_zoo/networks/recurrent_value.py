"""Recurrent dueling Q networks: R2D2's torso and previous action and reward -> LSTM -> dueling head (Kapturowski et
al. 2019, section 2 and appendix; the dueling head of Wang et al. 2016). They unroll like DRQN's
`networks.value.RecurrentQNetwork` (same state, same episode-start resets, `networks.value.unroll_lstm`)."""

from typing import NamedTuple

import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso
from deep_rl_zoo.networks.curiosity import MiniGridTorso
from deep_rl_zoo.networks.value import dueling_aggregate, sequence_dims, step_features, unroll_lstm


class PreviousStep(NamedTuple):
    """What R2D2's LSTM sees beside the observation at each step, each [T, B]; both 0 at an episode's first step."""

    action: torch.Tensor  # int64: a_t-1
    reward: torch.Tensor  # float32: r_t-1


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


class RecurrentDuelingQNetwork(nn.Module):
    """R2D2's network: [torso(x_t), one-hot a_t-1, r_t-1] -> LSTM of `hidden_size` units -> dueling head (the paper's
    appendix and acme's R2D2 network feed the previous action and reward to the LSTM). `forward(observation [T, B,
    ...], previous: PreviousStep, state, first [T, B])` returns Q-values [T, B, A] and the state (h, c) after the last
    step; `state` None is zeros and the state is zeroed before step t where `first[t, b]`."""

    def __init__(self, torso: nn.Module, num_actions: int, hidden_size: int, head_hidden_size: int):
        super().__init__()
        if num_actions < 1 or hidden_size < 1:
            raise ValueError(f'num_actions and hidden_size must be >= 1, got {num_actions} and {hidden_size}')
        self.torso = torso
        self.num_actions = num_actions
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(torso.output_size + num_actions + 1, hidden_size)
        self.head = DuelingHead(hidden_size, num_actions, head_hidden_size)

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(batch_size, self.hidden_size, device=self.lstm.weight_hh_l0.device)
        return zeros, zeros.clone()

    def forward(
        self,
        observation: torch.Tensor,
        previous: PreviousStep,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        sequence_dims(observation, ('first', first), *zip(('previous action', 'previous reward'), previous))
        features = step_features(self.torso, observation)
        features = torch.cat(
            [features, nn.functional.one_hot(previous.action.long(), self.num_actions).to(features.dtype), previous.reward.to(features.dtype).unsqueeze(-1)],
            dim=-1,
        )
        output, state = unroll_lstm(self.lstm, features, state, first)
        return self.head(output), state


def mlp_recurrent_dueling_q_network(observation_size: int, num_actions: int, hidden_size: int = 128) -> RecurrentDuelingQNetwork:
    """For vector observations: one fully connected ReLU layer, an LSTM and dueling streams, all `hidden_size` wide."""
    return RecurrentDuelingQNetwork(MlpTorso(observation_size, (hidden_size,)), num_actions, hidden_size, hidden_size)


def minigrid_recurrent_dueling_q_network(observation_shape: tuple[int, ...], num_actions: int, hidden_size: int = 128) -> RecurrentDuelingQNetwork:
    """For MiniGrid's grids [3, H, W]: the MiniGrid CNN (`networks.curiosity.MiniGridTorso`), an LSTM and dueling
    streams, all `hidden_size` wide (NGU's Q network on MiniGrid without its policy and intrinsic reward inputs)."""
    return RecurrentDuelingQNetwork(MiniGridTorso(observation_shape, hidden_size), num_actions, hidden_size, hidden_size)


def lstm_size(kind: str) -> int:
    """The LSTM units of R2D2's (and NGU's) network for an environment kind: 512 on Atari (the paper's), 128 otherwise."""
    return 512 if kind == 'atari' else 128


def nature_cnn_recurrent_dueling_q_network(num_actions: int, frame_stack: int = 4) -> RecurrentDuelingQNetwork:
    """For Atari (the paper's): Nature DQN's convolutions and 512-unit layer, a 512-unit LSTM, dueling streams of 512."""
    return RecurrentDuelingQNetwork(NatureCnnTorso(frame_stack), num_actions, 512, 512)
