"""DQN: "Human-level control through deep reinforcement learning" (Mnih et al. 2015).

The agent acts epsilon-greedily on its online Q network, stores every step in a uniform replay, and every
`learn_interval` steps does one update on a sampled minibatch, minimising (the paper's Algorithm 1)

    L(theta) = E[ huber( r + gamma^n * max_a' Q(s', a'; theta^-) - Q(s, a; theta) ) ]

where theta^- is a target network copied from theta every `target_network_update_interval` updates.
The Huber loss with delta 1 is the paper's "clip the error term to [-1, 1]". With `n_step > 1` the replay
builds n-step returns instead of the one-step reward (Sutton 1988), a common extension.
"""

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import main_loop
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo import value_learning
from deep_rl_zoo.greedy_actors import as_tensor, epsilon_greedy
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.value import mlp_q_network, nature_cnn_q_network
from deep_rl_zoo.schedule import LinearSchedule


class Dqn:
    """Nature DQN over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'DQN'

    def __init__(
        self,
        network: nn.Module,
        optimizer: torch.optim.Optimizer,
        replay: replay_lib.UniformReplay,
        exploration_epsilon: LinearSchedule,
        min_replay_size: int,
        learn_interval: int,
        target_network_update_interval: int,
        batch_size: int,
        max_grad_norm: float,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        if min_replay_size < batch_size:
            raise ValueError(f'--min_replay_size ({min_replay_size}) must be at least --batch_size ({batch_size})')
        self.online_network = network.to(device)
        self.target_network = _frozen_copy(self.online_network)
        self.optimizer = optimizer
        self.replay = replay
        self.exploration_epsilon = exploration_epsilon
        self.min_replay_size = min_replay_size
        self.learn_interval = learn_interval
        self.target_network_update_interval = target_network_update_interval
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.terminal_on_life_loss = terminal_on_life_loss
        self.device = device
        self._random = np.random.default_rng(seed)
        self._last_observation: np.ndarray | None = None
        self.env_steps = 0
        self.learner_steps = 0
        self._losses: list[float] = []

    @property
    def epsilon(self) -> float:
        return self.exploration_epsilon(self.env_steps)

    def act(self, observation: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions for every environment, from one forward pass."""
        self._last_observation = observation
        return epsilon_greedy(self.online_network, observation, self.epsilon, self._random, self.device)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """Stores the step in replay and learns every `learn_interval` steps once replay holds enough."""
        terminal = step.terminated | (step.life_loss & self.terminal_on_life_loss)
        self.replay.add(
            self._last_observation,
            action,
            step.reward,
            terminal,
            step.terminated | step.truncated,
            step.final_observation,
        )
        self.env_steps += len(action)
        if self.env_steps % self.learn_interval < len(action) and self.replay.size >= self.min_replay_size:
            self.learn()

    def learn(self) -> None:
        """One gradient step on a uniformly sampled minibatch; refreshes the target network on schedule."""
        batch = self.replay.sample(self.batch_size)
        s_tm1, s_t = as_tensor(batch.s_tm1, self.device), as_tensor(batch.s_t, self.device)
        a_tm1 = as_tensor(batch.a_tm1, self.device).long()
        r_t, discount_t = as_tensor(batch.r_t, self.device), as_tensor(batch.discount_t, self.device)
        q_tm1 = self.online_network(s_tm1)
        with torch.no_grad():
            q_t = self.target_network(s_t)
        loss = value_learning.qlearning(q_tm1, a_tm1, r_t, discount_t, q_t, loss='huber').loss.mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.online_network.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.learner_steps += 1
        self._losses.append(loss.item())
        if self.learner_steps % self.target_network_update_interval == 0:
            self.target_network.load_state_dict(self.online_network.state_dict())

    def agent_statistics(self) -> dict[str, float]:
        return {'exploration_epsilon': self.epsilon, 'replay_size': float(self.replay.size)}

    def learner_statistics(self) -> dict[str, float]:
        statistics = {'loss': float(np.mean(self._losses))} if self._losses else {}
        self._losses.clear()
        return statistics

    def state_dict(self) -> dict[str, Any]:
        return {
            'network': self.online_network.state_dict(),
            'target_network': self.target_network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'env_steps': self.env_steps,
            'learner_steps': self.learner_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.online_network.load_state_dict(state['network'])
        self.target_network.load_state_dict(state['target_network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.env_steps = int(state['env_steps'])
        self.learner_steps = int(state['learner_steps'])


def _frozen_copy(network: nn.Module) -> nn.Module:
    target = copy.deepcopy(network)
    target.requires_grad_(False)
    return target


def build_dqn(network: nn.Module, env: VectorEnvironment, values: dict[str, Any], device: torch.device) -> Dqn:
    """A DQN agent for `env` from the run's flag values (see `flags.define_value_learning`)."""
    observation_space = env.single_observation_space
    replay = replay_lib.UniformReplay(
        capacity=values['replay_capacity'],
        observation_shape=observation_space.shape,
        observation_dtype=observation_space.dtype,
        n_step=values['n_step'],
        discount=values['discount'],
        num_streams=env.num_envs,
        frame_stack=values.get('environment_frame_stack', 1),
        compress=values['compress_replay'],
        seed=values['seed'],
    )
    return Dqn(
        network=network,
        optimizer=torch.optim.Adam(network.parameters(), lr=values['learning_rate'], fused=True),
        replay=replay,
        exploration_epsilon=LinearSchedule(
            values['exploration_epsilon_begin_value'],
            values['exploration_epsilon_end_value'],
            values['exploration_epsilon_decay_step'],
        ),
        min_replay_size=values['min_replay_size'],
        learn_interval=values['learn_interval'],
        target_network_update_interval=values['target_network_update_interval'],
        batch_size=values['batch_size'],
        max_grad_norm=values['max_grad_norm'],
        terminal_on_life_loss=values.get('terminal_on_life_loss', False),
        seed=values['seed'],
        device=device,
    )


def make_network(env: VectorEnvironment, values: dict[str, Any]) -> nn.Module:
    """The Nature CNN for Atari frame stacks, an MLP for vector observations (no flag changes the network)."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_q_network(num_actions, observation_shape[0])
    return mlp_q_network(observation_shape[0], num_actions)


def train(kind: str) -> None:
    """Entry point of DQN's run scripts: environments, agent and iterations from the parsed flags."""
    main_loop.train_value_agent(kind, lambda env, values, device: build_dqn(make_network(env, values), env, values, device))
