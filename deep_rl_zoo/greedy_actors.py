"""Evaluation actors: epsilon-greedy (0.01) for Q agents, the most likely action (or the mean) for policies.

They only act; `observe` ignores what they see.
"""

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.gym_env import VectorStep


def as_tensor(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A numpy batch as a tensor on `device`, without copying on the CPU."""
    return torch.from_numpy(np.asarray(array)).to(device)


def epsilon_greedy(
    network: nn.Module, observation: np.ndarray, epsilon: float, random: np.random.Generator, device: torch.device
) -> np.ndarray:
    """argmax_a Q(s, a) for each row, replaced by a uniformly random action with probability epsilon."""
    with torch.no_grad():
        q_values = network(as_tensor(observation, device))
    actions = q_values.argmax(dim=1).cpu().numpy()
    explore = random.random(len(actions)) < epsilon
    actions[explore] = random.integers(q_values.shape[1], size=int(explore.sum()))
    return actions


class EpsilonGreedyActor:
    """Evaluates a Q network with a small exploration epsilon (0.01 in DQN's evaluation protocol)."""

    def __init__(self, network: nn.Module, epsilon: float = 0.01, seed: int = 0, device: torch.device = torch.device('cpu')):
        self.network = network
        self.epsilon = epsilon
        self.device = device
        self._random = np.random.default_rng(seed)

    def act(self, observation: np.ndarray) -> np.ndarray:
        return epsilon_greedy(self.network, observation, self.epsilon, self._random, self.device)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        pass


class PolicyGreedyActor:
    """Plays the most likely action of a categorical policy, or the mean of a Gaussian one (clipped to bounds).

    `network(observation)` returns `logits` (categorical) or `mean` (Gaussian) as its first field.
    """

    def __init__(
        self,
        network: nn.Module,
        device: torch.device = torch.device('cpu'),
        action_low: np.ndarray | None = None,
        action_high: np.ndarray | None = None,
    ):
        self.network = network
        self.device = device
        self.action_low = action_low
        self.action_high = action_high

    def act(self, observation: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            output = self.network(as_tensor(observation, self.device))
        if hasattr(output, 'logits'):
            return output.logits.argmax(dim=1).cpu().numpy()
        return np.clip(output.mean.cpu().numpy(), self.action_low, self.action_high)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        pass



class RecurrentPolicyGreedyActor:
    """Plays the most likely action of a recurrent categorical policy (`networks.policy.RecurrentActorCritic`), one
    core state per environment.

    Each `act` runs one step of the core with the previous action and reward (the learning reward) of every
    environment; where an episode ended, the next step starts from the zero state with no previous action or
    reward, and so does every environment after `reset()` (the environments restart).
    """

    def __init__(self, network: nn.Module, device: torch.device = torch.device('cpu')):
        self.network = network
        self.device = device
        self.state: tuple[torch.Tensor, torch.Tensor] | None = None
        self._prev_action: torch.Tensor | None = None  # [N]
        self._prev_reward: torch.Tensor | None = None  # [N]
        self._episode_start: torch.Tensor | None = None  # [N] bool: the env starts an episode at the next act

    def reset(self) -> None:
        """Forgets every environment's state: the next `act` starts every episode afresh."""
        self.state = None

    def act(self, observation: np.ndarray) -> np.ndarray:
        num_envs = len(observation)
        if self.state is None:
            self.state = self.network.initial_state(num_envs)
            self._prev_action = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
            self._prev_reward = torch.zeros(num_envs, device=self.device)
            self._episode_start = torch.ones(num_envs, dtype=torch.bool, device=self.device)
        with torch.no_grad():
            output = self.network(
                as_tensor(observation, self.device)[None], self._prev_action[None], self._prev_reward[None], self._episode_start[None], self.state
            )
        self.state = output.state
        return output.logits[0].argmax(dim=1).cpu().numpy()

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        ended = as_tensor(step.terminated | step.truncated, self.device)
        self._prev_action = torch.where(ended, 0, as_tensor(np.asarray(action, np.int64), self.device))
        self._prev_reward = torch.where(ended, 0.0, as_tensor(step.reward.astype(np.float32), self.device))
        self._episode_start = ended


class SteppedRecurrentGreedyActor:
    """Plays the most likely action of a recurrent categorical policy stepped one observation at a time, as Sample
    Factory's network is (`networks.sample_factory.PolicySet`): `network.step(observation [N, ...], state [N, S])`
    returns (output with logits [N, A], next state) and `network.initial_state(N)` the zero state. Each environment's
    state is zeroed where an episode starts, and every environment's after `reset()` (the environments restart)."""

    def __init__(self, network: nn.Module, device: torch.device = torch.device('cpu')):
        self.network = network
        self.device = device
        self.state: torch.Tensor | None = None
        self._episode_start: torch.Tensor | None = None

    def reset(self) -> None:
        self.state = None

    def act(self, observation: np.ndarray) -> np.ndarray:
        if self.state is None:
            self.state = self.network.initial_state(len(observation)).to(self.device)
            self._episode_start = torch.zeros(len(observation), dtype=torch.bool, device=self.device)
        state = self.state * (~self._episode_start).to(self.state.dtype).unsqueeze(-1)
        with torch.no_grad():
            output, self.state = self.network.step(as_tensor(observation, self.device), state)
        return output.logits.argmax(dim=1).cpu().numpy()

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        self._episode_start = as_tensor(step.terminated | step.truncated, self.device)


def greedy_policy_actor(network: nn.Module, epsilon: float, seed: int, device: torch.device) -> PolicyGreedyActor:
    """The evaluation actor of single-process policy agents (`main_loop.train_value_agent`'s `make_eval_actor`):
    the policy's most likely action; `epsilon` and `seed` are unused."""
    return PolicyGreedyActor(network, device)


class RecurrentEpsilonGreedyActor:
    """Epsilon-greedy acting with a recurrent Q network (DRQN), one LSTM state per environment.

    `network(observation [T, B, ...], state, first [T, B])` returns (Q [T, B, A], state). The state advances on
    every step, random (epsilon) ones included, and restarts from zeros where an environment's episode ended
    and when `reset()` is called (the environments restart). `epsilon` may be changed between steps.
    """

    def __init__(self, network: nn.Module, epsilon: float = 0.01, seed: int = 0, device: torch.device = torch.device('cpu')):
        self.network = network
        self.epsilon = epsilon
        self.device = device
        self._random = np.random.default_rng(seed)
        self.state: tuple[torch.Tensor, torch.Tensor] | None = None
        self._first: np.ndarray | None = None  # [N] bool: the env starts an episode at the next act

    def reset(self) -> None:
        """Forgets every environment's state: the next `act` starts from zeros."""
        self.state = None

    def act(self, observation: np.ndarray) -> np.ndarray:
        if self.state is None:
            self._first = np.ones(len(observation), bool)
        with torch.no_grad():
            observation, first = as_tensor(observation, self.device), as_tensor(self._first, self.device)
            q_values, self.state = self.network(observation.unsqueeze(0), self.state, first.unsqueeze(0))
        q_values = q_values.squeeze(0)
        actions = q_values.argmax(dim=1).cpu().numpy()
        explore = self._random.random(len(actions)) < self.epsilon
        actions[explore] = self._random.integers(q_values.shape[1], size=int(explore.sum()))
        self._first = np.zeros(len(actions), bool)
        return actions

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        self._first = step.terminated | step.truncated
