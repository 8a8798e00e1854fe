"""QR-DQN: "Distributional Reinforcement Learning with Quantile Regression" (Dabney et al. 2017).

The network outputs N quantile values theta_i(s, a) of the return distribution at the fixed fractions
tau_i = (2i + 1) / (2N); Q(s, a) is their mean and drives epsilon-greedy acting as in DQN. Each update
(the paper's Algorithm 1) builds the target quantiles from the target network,

    a* = argmax_a mean_j theta_j(s', a; theta^-),    T theta_j = r + gamma^n * theta_j(s', a*; theta^-),

and minimises the quantile Huber loss (eq. 9-10) of theta_i(s, a) against every T theta_j:

    L = sum_i mean_j rho^kappa_{tau_i}(T theta_j - theta_i(s, a)).

The per-sample loss is also the priority a prioritized replay would use.
"""

from typing import Any

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.value import QuantileQNetwork, mlp_quantile_q_network, nature_cnn_quantile_q_network
from deep_rl_zoo.qr_dqn.settings import QrDqnSettings


class QrDqn(replay_agent.ReplayAgent):
    """QR-DQN over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'QRDQN'

    def __init__(self, network: QuantileQNetwork, *, huber_param: float, **replay_agent_options: Any):
        super().__init__(network, **replay_agent_options)
        self.huber_param = huber_param

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantile regression Q-learning against the target network (Algorithm 1)."""
        dist_q_tm1 = self.online_network.quantiles(batch.s_tm1)
        with torch.no_grad():
            dist_q_t = self.target_network.quantiles(batch.s_t)
        output = value_learning.quantile_q_learning(
            dist_q_tm1, self.online_network.taus, batch.a_tm1, batch.r_t, batch.discount_t, dist_q_t, dist_q_t, self.huber_param
        )
        return output.loss, output.loss.detach()


def build_qr_dqn(network: nn.Module, env: VectorEnvironment, settings: QrDqnSettings, device: torch.device) -> QrDqn:
    """A QR-DQN agent for `env` from the run's `settings`."""
    return replay_agent.build_agent(QrDqn, network, env, settings, device, huber_param=settings.huber_param)


def make_network(env: VectorEnvironment, settings: QrDqnSettings) -> QuantileQNetwork:
    """The Nature CNN for Atari frame stacks, an MLP for vector observations, with --num_quantiles per action."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_quantile_q_network(num_actions, settings.num_quantiles, observation_shape[0])
    return mlp_quantile_q_network(observation_shape[0], num_actions, settings.num_quantiles)


def train(run_settings: QrDqnSettings) -> None:
    """Entry point of QR-DQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(run_settings, lambda env, settings, device: build_qr_dqn(make_network(env, settings), env, settings, device))
