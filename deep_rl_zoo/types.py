"""The small interfaces that connect environments, actors, learners and the run loops."""

from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.gym_env import VectorStep


class Actor(Protocol):
    """Chooses actions for a vector of environments with one batched forward pass.

    Optional: `reset()`, called whenever the loop resets the environments, and `wants_new_episodes`, true after an
    `observe` to have them reset (see `episodes.run_env_loop`)."""

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


class TensorflowRmsprop(torch.optim.Optimizer):
    """RMSProp as TensorFlow 1 computes it (`tf.train.RMSPropOptimizer`, no momentum), the optimiser A2C's published
    Atari settings were tuned with (OpenAI Baselines; rl-baselines3-zoo's `RMSpropTFLike`): the mean square of the
    gradients starts at 1, not 0, and epsilon sits inside the square root,

        ms <- alpha ms + (1 - alpha) g^2,    w <- w - lr g / sqrt(ms + eps).

    PyTorch's RMSprop starts the mean square at 0, so its first steps move every weight by about lr / sqrt(1 - alpha)
    (10 lr at alpha 0.99) whatever the gradient's size; here they are lr g, growing towards RMSProp's as ms forgets its
    start (over about 1 / (1 - alpha) steps)."""

    def __init__(self, params: Any, lr: float, alpha: float = 0.99, eps: float = 1e-5):
        super().__init__(params, {'lr': lr, 'alpha': alpha, 'eps': eps})
        for group in self.param_groups:
            for parameter in group['params']:
                self.state[parameter]['square_avg'] = torch.ones_like(parameter)

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        if closure is not None:
            raise ValueError('TensorflowRmsprop.step takes no closure: compute the loss and its gradients first')
        for group in self.param_groups:
            parameters = [parameter for parameter in group['params'] if parameter.grad is not None]
            if not parameters:
                continue
            gradients = [parameter.grad for parameter in parameters]
            mean_squares = [self.state[parameter]['square_avg'] for parameter in parameters]
            torch._foreach_mul_(mean_squares, group['alpha'])
            torch._foreach_addcmul_(mean_squares, gradients, gradients, value=1.0 - group['alpha'])
            denominators = torch._foreach_add(mean_squares, group['eps'])
            torch._foreach_sqrt_(denominators)
            torch._foreach_addcdiv_(parameters, gradients, denominators, value=-group['lr'])


def rmsprop_or_adam(network: nn.Module, optimizer: str, learning_rate: float, rmsprop_alpha: float, eps: float) -> torch.optim.Optimizer:
    """RMSProp (A3C's and IMPALA's optimiser; PyTorch's: epsilon outside the square root, the mean square from 0),
    RMSProp as TensorFlow 1 computes it (`TensorflowRmsprop`) or Adam."""
    if optimizer == 'rmsprop':
        return torch.optim.RMSprop(network.parameters(), lr=learning_rate, alpha=rmsprop_alpha, eps=eps)
    if optimizer == 'rmsprop_tf':
        return TensorflowRmsprop(network.parameters(), lr=learning_rate, alpha=rmsprop_alpha, eps=eps)
    if optimizer == 'adam':
        return torch.optim.Adam(network.parameters(), lr=learning_rate, eps=eps)
    raise ValueError(f'optimizer must be rmsprop, rmsprop_tf or adam, got {optimizer!r}')
