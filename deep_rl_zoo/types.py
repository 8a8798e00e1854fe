"""The small interfaces that connect environments, actors, learners and the run loops."""

from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.gym_env import VectorStep


class Actor(Protocol):
    """Chooses actions for a vector of environments with one batched forward pass."""

    def act(self, observation: np.ndarray) -> np.ndarray:
        """[N, *obs_shape] observations -> [N] (or [N, D]) actions."""

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """Sees the outcome of `action` (a learning agent stores it and may learn; a greedy actor ignores it)."""


class Agent(Actor, Protocol):
    """A single-process learning agent: an actor that learns from what it observes, and can be checkpointed."""

    learner_steps: int  # updates applied so far

    def state_dict(self) -> dict[str, Any]:
        """Network, optimizer and counters, for checkpoints."""

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def agent_statistics(self) -> dict[str, float]:
        """Acting statistics (e.g. epsilon), logged against env steps."""

    def learner_statistics(self) -> dict[str, float]:
        """Learning statistics averaged since the last call (e.g. loss), logged against learner steps."""


class Learner(Protocol):
    """The learner side of actors + learner agents: updates `network` from the actors' rollout buffers."""

    agent_name: str
    network: nn.Module  # the parameters actors act with
    learner_steps: int

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """One learning step from one rollout buffer per actor."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def agent_statistics(self) -> dict[str, float]: ...

    def learner_statistics(self) -> dict[str, float]: ...


class OneOptimizerLearner:
    """What the learners with one network and one optimizer share (PPO, A2C, IMPALA): their statistics and their
    checkpoint state. A subclass sets `network`, `optimizer`, `learner_steps` and `statistics` (a
    `trackers.LearnerStatistics`)."""

    network: nn.Module
    optimizer: torch.optim.Optimizer
    learner_steps: int

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def agent_statistics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {'network': self.network.state_dict(), 'optimizer': self.optimizer.state_dict(), 'learner_steps': self.learner_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state['network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.learner_steps = int(state['learner_steps'])


def rmsprop_or_adam(network: nn.Module, optimizer: str, learning_rate: float, rmsprop_alpha: float, eps: float) -> torch.optim.Optimizer:
    """RMSProp (A3C's and IMPALA's optimiser; PyTorch's epsilon sits outside the square root) or Adam."""
    if optimizer == 'rmsprop':
        return torch.optim.RMSprop(network.parameters(), lr=learning_rate, alpha=rmsprop_alpha, eps=eps)
    if optimizer == 'adam':
        return torch.optim.Adam(network.parameters(), lr=learning_rate, eps=eps)
    raise ValueError(f'optimizer must be rmsprop or adam, got {optimizer!r}')
