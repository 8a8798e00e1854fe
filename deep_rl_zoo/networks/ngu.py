"""Networks of NGU and Agent57 (Badia et al. 2020): the recurrent Q network conditioned on the policy index and the
previous action and rewards, the embedding network with its inverse-dynamics head, and RND's networks
(`networks.curiosity.rnd_for`), held together in one module so that actors receive all of them as one parameter
vector.

NGU's Q network (appendix F, after R2D2): torso(x_t), one-hot(a_t-1), r^e_t-1, r^i_t-1 and one-hot(j) -> LSTM ->
dueling head. Agent57 (section 4: separate parameters theta_e and theta_i) has two such networks, Q^e and Q^i, each with
its own torso, LSTM and head (`TwoQNetworks`): no parameter is shared, so the intrinsic loss cannot shape the
features the extrinsic values (all that policy 0 and evaluation read) are computed from.
"""

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso
from deep_rl_zoo.networks.curiosity import MiniGridTorso, RandomNetworkDistillation, rnd_for
from deep_rl_zoo.networks.recurrent_value import DuelingHead, lstm_size
from deep_rl_zoo.networks.value import sequence_dims, step_features, unroll_lstm

EMBEDDING_SIZE = 32  # the paper's controllable-state embedding


class StepInputs(NamedTuple):
    """What the Q network sees beside the observation at each step, each [T, B]."""

    previous_action: torch.Tensor  # int64, 0 at an episode's first step
    previous_extrinsic_reward: torch.Tensor  # float32, 0 at an episode's first step
    previous_intrinsic_reward: torch.Tensor  # float32, 0 at an episode's first step
    policy: torch.Tensor  # int64, j in [0, N)


class NguQNetwork(nn.Module):
    """torso -> [features, one-hot a_t-1, r^e_t-1, r^i_t-1, one-hot j] -> LSTM -> dueling head.

    `forward(observation [T, B, ...], inputs: StepInputs, state, first [T, B])` returns Q [T, B, A] and the LSTM state
    (h, c) after the last step; where `first[t, b]` the state is zeroed before step t (`networks.value.unroll_lstm`)."""

    def __init__(self, torso: nn.Module, num_actions: int, num_policies: int, hidden_size: int, head_hidden_size: int):
        super().__init__()
        if num_actions < 1 or num_policies < 1 or hidden_size < 1:
            raise ValueError(f'NguQNetwork needs positive sizes, got {num_actions}, {num_policies}, {hidden_size}')
        self.torso = torso
        self.num_actions = num_actions
        self.num_policies = num_policies
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(torso.output_size + num_actions + 2 + num_policies, hidden_size)
        self.head = DuelingHead(hidden_size, num_actions, head_hidden_size)

    def forward(
        self,
        observation: torch.Tensor,
        inputs: StepInputs,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        sequence_dims(observation, *zip(StepInputs._fields, inputs))
        features = step_features(self.torso, observation)
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
        output, state = unroll_lstm(self.lstm, features, state, first)
        return self.head(output), state


class TwoQNetworks(nn.Module):
    """Agent57's extrinsic and intrinsic Q networks (section 4), two `NguQNetwork`s that share nothing, called as one:
    `forward` returns Q [T, B, 2, A] (index 0: Q^e, 1: Q^i) and the state (h, c) whose h and c each hold Q^e's part
    then Q^i's ([B, 2 * hidden]), so the actors and the replay store it as they store NGU's."""

    def __init__(self, extrinsic: NguQNetwork, intrinsic: NguQNetwork):
        super().__init__()
        self.extrinsic = extrinsic
        self.intrinsic = intrinsic
        self.num_actions = extrinsic.num_actions
        self.num_policies = extrinsic.num_policies
        self.hidden_size = extrinsic.hidden_size + intrinsic.hidden_size

    def forward(
        self,
        observation: torch.Tensor,
        inputs: StepInputs,
        state: tuple[torch.Tensor, torch.Tensor] | None = None,
        first: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        split = self.extrinsic.hidden_size
        state_e = state_i = None
        if state is not None:
            state_e = (state[0][:, :split], state[1][:, :split])
            state_i = (state[0][:, split:], state[1][:, split:])
        q_e, (h_e, c_e) = self.extrinsic(observation, inputs, state_e, first)
        q_i, (h_i, c_i) = self.intrinsic(observation, inputs, state_i, first)
        return torch.stack([q_e, q_i], dim=2), (torch.cat([h_e, h_i], dim=1), torch.cat([c_e, c_i], dim=1))


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

    def __init__(self, q: NguQNetwork | TwoQNetworks, embedding: EmbeddingNetwork, rnd: RandomNetworkDistillation):
        super().__init__()
        self.q = q
        self.embedding = embedding
        self.rnd = rnd

    @property
    def hidden_size(self) -> int:
        return self.q.hidden_size


class Agent57Networks(NguNetworks):
    """`NguNetworks` with the policy Agent57's evaluation plays: `best_arm`, an int64 buffer [] the learner sets
    (`agent57.agent.best_arm`), saved in checkpoints with the weights."""

    def __init__(self, q: TwoQNetworks, embedding: EmbeddingNetwork, rnd: RandomNetworkDistillation):
        super().__init__(q, embedding, rnd)
        self.register_buffer('best_arm', torch.zeros((), dtype=torch.int64))


def _torso(kind: str, observation_shape: tuple[int, ...], size: int) -> nn.Module:
    if kind == 'atari':
        return NatureCnnTorso(observation_shape[0])
    if kind == 'minigrid':
        return MiniGridTorso(observation_shape, size)
    return MlpTorso(int(np.prod(observation_shape)), (size,))


def ngu_networks(kind: str, observation_shape: tuple[int, ...], num_actions: int, num_policies: int, two_q_networks: bool = False) -> NguNetworks:
    """NGU's networks (one Q network) or Agent57's (`two_q_networks`: Q^e and Q^i apart) for an 'atari', 'minigrid' or
    'classic' environment: R2D2's Nature CNN, 512-unit LSTM and dueling streams of 512 on Atari; a 128-wide MLP or
    MiniGrid CNN and LSTM otherwise."""
    hidden = lstm_size(kind)

    def q_network() -> NguQNetwork:
        return NguQNetwork(_torso(kind, observation_shape, hidden), num_actions, num_policies, hidden, hidden)

    embedding = EmbeddingNetwork(_torso(kind, observation_shape, 64), num_actions)
    if two_q_networks:
        return Agent57Networks(TwoQNetworks(q_network(), q_network()), embedding, rnd_for(kind, observation_shape))
    return NguNetworks(q_network(), embedding, rnd_for(kind, observation_shape))
