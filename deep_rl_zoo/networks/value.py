"""Q-value networks: a torso followed by a linear head with one output per action."""

import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso


class QNetwork(nn.Module):
    """Q(s, .) = head(torso(s)): one value per discrete action (Mnih et al. 2015)."""

    def __init__(self, torso: nn.Module, num_actions: int):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.torso = torso
        self.head = nn.Linear(torso.output_size, num_actions)
        self.num_actions = num_actions

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.head(self.torso(observation))


def mlp_q_network(observation_size: int, num_actions: int, hidden_sizes=(128, 128)) -> QNetwork:
    """The Q network for classic control."""
    return QNetwork(MlpTorso(observation_size, hidden_sizes), num_actions)


def nature_cnn_q_network(num_actions: int, frame_stack: int = 4) -> QNetwork:
    """The Nature DQN network for Atari."""
    return QNetwork(NatureCnnTorso(frame_stack), num_actions)
