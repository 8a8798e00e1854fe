"""Networks of NGU and Agent57 (Badia et al. 2020): the recurrent Q network conditioned on the policy index and the
previous action and rewards, the embedding network with its inverse-dynamics head, and RND's networks
(`networks.curiosity.rnd_for`), held together in one module so that actors receive all of them as one parameter
vector.

NGU's Q network (appendix F, after R2D2): torso(x_t), one-hot(a_t-1), r^e_t-1, r^i_t-1 and one-hot(j) -> LSTM ->
dueling head; Agent57 has two dueling heads on the same LSTM (extrinsic and intrinsic Q, section 4).
"""

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso
from deep_rl_zoo.networks.curiosity import MiniGridTorso, RandomNetworkDistillation, rnd_for
from deep_rl_zoo.networks.recurrent_value import DuelingHead, lstm_size

EMBEDDING_SIZE = 32  # the paper's controllable-state embedding


class StepInputs(NamedTuple):
    """What the Q network sees beside the observation at each step, each [T, B]."""

    previous_action: torch.Tensor  # int64, 0 at an episode's first step
    previous_extrinsic_reward: torch.Tensor  # float32, 0 at an episode's first step
    previous_intrinsic_reward: torch.Tensor  # float32, 0 at an episode's first step
    policy: torch.Tensor  # int64, j in [0, N)


class NguQNetwork(nn.Module):
    """torso -> [features, one-hot a_t-1, r^e_t-1, r^i_t-1, one-hot j] -> LSTM -> `num_heads` dueling heads.

    `forward(observation [T, B, ...], inputs: StepInputs, state, first [T, B])` returns Q [T, B, A] (one head) or
    [T, B, num_heads, A], and the LSTM state (h, c) after the last step; where `first[t, b]` the state is zeroed
    before step t (as `networks.value.RecurrentQNetwork`)."""

    def __init__(self, torso: nn.Module, num_actions: int, num_policies: int, hidden_size: int, head_hidden_size: int, num_heads: int = 1):
        super().__init__()
        if num_actions < 1 or num_policies < 1 or hidden_size < 1 or num_heads < 1:
            raise ValueError(f'NguQNetwork needs positive sizes, got {num_actions}, {num_policies}, {hidden_size}, {num_heads}')
        self.torso = torso
        self.num_actions = num_actions
        self.num_policies = num_policies
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.lstm = nn.LSTM(torso.output_size + num_actions + 2 + num_policies, hidden_size)
        self.heads = nn.ModuleList(DuelingHead(hidden_size, num_actions, head_hidden_size) for _ in range(num_heads))

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(batch_size, self.hidden_size, device=self.lstm.weight_hh_l0.device)
        return zeros, zeros.clone()

    def forward(
        self,
        observation: torch.Tensor,
        inputs: StepInputs,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        num_steps, batch_size = observation.shape[:2]
        for name, tensor in zip(StepInputs._fields, inputs):
            if tensor.shape != (num_steps, batch_size):
                raise ValueError(f'{name} must have shape [T, B]=({num_steps}, {batch_size}), got {tuple(tensor.shape)}')
        features = self.torso(observation.flatten(0, 1)).view(num_steps, batch_size, -1)
        features = torch.cat(
            [
                features,
                nn.functional.one_hot(inputs.previous_action.long(), self.num_actions).to(features.dtype),
                inputs.previous_extrinsic_reward.to(features.dtype).unsqueeze(-1),
                inputs.previous_intrinsic_reward.to(features.dtype).unsqueeze(-1),
                nn.functional.one_hot(inputs.policy.long(), self.num_policies).to(features.dtype),
            ],
            dim=-1,
        )
        h, c = self.initial_state(batch_size) if state is None else state
        if first is None:
            first = torch.zeros(num_steps, batch_size, dtype=torch.bool, device=features.device)
        resets = (torch.nonzero(first[1:].any(dim=1)).flatten() + 1).tolist()
        outputs = []
        for begin, end in zip([0] + resets, resets + [num_steps]):
            keep = (~first[begin]).to(h.dtype).unsqueeze(1)
            output, (h, c) = self.lstm(features[begin:end], ((h * keep).unsqueeze(0), (c * keep).unsqueeze(0)))
            h, c = h.squeeze(0), c.squeeze(0)
            outputs.append(output)
        output = torch.cat(outputs)
        if self.num_heads == 1:
            return self.heads[0](output), (h, c)
        return torch.stack([head(output) for head in self.heads], dim=2), (h, c)


class EmbeddingNetwork(nn.Module):
    """f(x): the controllable-state embedding, trained through `inverse_model` to predict a_t from f(x_t), f(x_t+1)
    (NGU, section 2: a one-hidden-layer MLP and a softmax over actions)."""

    def __init__(self, torso: nn.Module, num_actions: int, embedding_size: int = EMBEDDING_SIZE, hidden_size: int = 128):
        super().__init__()
        self.torso = torso
        self.embed = nn.Linear(torso.output_size, embedding_size)
        self.inverse_model = nn.Sequential(nn.Linear(2 * embedding_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, num_actions))
        self.embedding_size = embedding_size

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        """Embeddings [B, embedding_size] of observations [B, ...]."""
        return self.embed(self.torso(observation))

    def action_logits(self, embedding: torch.Tensor, next_embedding: torch.Tensor) -> torch.Tensor:
        return self.inverse_model(torch.cat([embedding, next_embedding], dim=-1))


class NguNetworks(nn.Module):
    """The Q network, the embedding network and RND, as one module (the learner publishes all of it to actors)."""

    def __init__(self, q: NguQNetwork, embedding: EmbeddingNetwork, rnd: RandomNetworkDistillation):
        super().__init__()
        self.q = q
        self.embedding = embedding
        self.rnd = rnd

    @property
    def hidden_size(self) -> int:
        return self.q.hidden_size


def _torso(kind: str, observation_shape: tuple[int, ...], size: int) -> nn.Module:
    if kind == 'atari':
        return NatureCnnTorso(observation_shape[0])
    if kind == 'minigrid':
        return MiniGridTorso(observation_shape, size)
    return MlpTorso(int(np.prod(observation_shape)), (size,))


def ngu_networks(kind: str, observation_shape: tuple[int, ...], num_actions: int, num_policies: int, num_heads: int = 1) -> NguNetworks:
    """NGU's (`num_heads` 1) or Agent57's (2) networks for an 'atari', 'minigrid' or 'classic' environment: R2D2's
    Nature CNN, 512-unit LSTM and dueling streams of 512 on Atari; a 128-wide MLP or MiniGrid CNN and LSTM otherwise."""
    hidden = lstm_size(kind)
    q = NguQNetwork(_torso(kind, observation_shape, hidden), num_actions, num_policies, hidden, hidden, num_heads)
    embedding = EmbeddingNetwork(_torso(kind, observation_shape, 64), num_actions)
    return NguNetworks(q, embedding, rnd_for(kind, observation_shape))
