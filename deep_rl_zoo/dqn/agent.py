"""DQN: "Human-level control through deep reinforcement learning" (Mnih et al. 2015).

The agent acts epsilon-greedily on its online Q network, stores every step in a uniform replay, and every
`learn_interval` steps does one update on a sampled minibatch, minimising (the paper's Algorithm 1)

    L(theta) = E[ huber( r + gamma^n * max_a' Q(s', a'; theta^-) - Q(s, a; theta) ) ]

where theta^- is a target network copied from theta every `target_network_update_interval` updates.
The Huber loss with delta 1 is the paper's "clip the error term to [-1, 1]". With `n_step > 1` the replay
builds n-step returns instead of the one-step reward (Sutton 1988), a common extension.
Acting, replay and the update schedule are shared with the whole family (`deep_rl_zoo.replay_agent`).
"""

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.value import mlp_q_network, nature_cnn_q_network
from deep_rl_zoo.dqn.settings import DqnSettings
from deep_rl_zoo.settings import ValueLearning


class Dqn(replay_agent.ReplayAgent):
    """Nature DQN over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'DQN'

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Q-learning against the target network's max (Mnih et al. 2015, eq. 2)."""
        q_tm1 = self.online_network(batch.s_tm1)
        with torch.no_grad():
            q_t = self.target_network(batch.s_t)
        output = value_learning.qlearning(q_tm1, batch.a_tm1, batch.r_t, batch.discount_t, q_t, loss='huber')
        return output.loss, output.extra.td_error.abs()


def build_dqn(network: nn.Module, env: VectorEnvironment, settings: DqnSettings, device: torch.device) -> Dqn:
    """A DQN agent for `env` from the run's `settings`."""
    return replay_agent.build_agent(Dqn, network, env, settings, device)


def make_network(env: VectorEnvironment, settings: ValueLearning) -> nn.Module:
    """The Nature CNN for Atari frame stacks, an MLP for vector observations (no setting changes the network; Double and
    prioritized DQN's too)."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_q_network(num_actions, observation_shape[0])
    return mlp_q_network(observation_shape[0], num_actions)


def train(run_settings: DqnSettings) -> None:
    """Entry point of DQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(run_settings, lambda env, settings, device: build_dqn(make_network(env, settings), env, settings, device))
