"""IQN: "Implicit Quantile Networks for Distributional Reinforcement Learning" (Dabney et al. 2018).

The network maps a state and a quantile fraction tau in [0, 1] to the tau-quantile Z_tau(s, a) of the return
(psi(s) * phi(tau) through a head, phi the cosine embedding of eq. 4). Acting is epsilon-greedy on
Q(s, a) = mean over K fresh taus. Each update (the paper's Algorithm 1) draws fresh fractions per sample,
tau_i ~ U[0, 1] (N of them) for the online quantiles at s and tau'_j (N' of them) for the target at s':

    a* = argmax_a mean_k Z_{tau~_k}(s', a; theta^-)      (K more fresh fractions, target network)
    delta_ij = r + gamma^n * Z_{tau'_j}(s', a*; theta^-) - Z_{tau_i}(s, a; theta)

and minimises the quantile Huber loss of eq. 3, L = 1/N' sum_i sum_j rho^kappa_{tau_i}(delta_ij).
a* is chosen by the target network, as in Algorithm 1 (not double-Q style by the online network).
The per-sample loss is also the priority a prioritized replay would use.
"""

from typing import Any

import torch

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.value import ImplicitQuantileNetwork, mlp_iqn_network, nature_cnn_iqn_network
from deep_rl_zoo.iqn.settings import IqnSettings


class Iqn(replay_agent.ReplayAgent):
    """IQN over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'IQN'

    def __init__(
        self,
        network: ImplicitQuantileNetwork,
        *,
        huber_param: float,
        tau_samples_s_tm1: int,
        tau_samples_s_t: int,
        tau_samples_policy: int,
        **replay_agent_options: Any,
    ):
        super().__init__(network, **replay_agent_options)
        self.huber_param = huber_param
        self.tau_samples_s_tm1 = tau_samples_s_tm1
        self.tau_samples_s_t = tau_samples_s_t
        self.tau_samples_policy = tau_samples_policy

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Quantile regression Q-learning with sampled fractions (Algorithm 1, eq. 3)."""
        batch_size = batch.r_t.shape[0]
        tau_tm1 = torch.rand(batch_size, self.tau_samples_s_tm1, device=self.device)
        dist_q_tm1 = self.online_network.quantile_values(batch.s_tm1, tau_tm1)
        with torch.no_grad():
            # One pass of the target network at s': N' fractions for the target, then K for choosing a*.
            tau_t = torch.rand(batch_size, self.tau_samples_s_t + self.tau_samples_policy, device=self.device)
            dist_q_t, dist_q_t_selector = self.target_network.quantile_values(batch.s_t, tau_t).split(
                [self.tau_samples_s_t, self.tau_samples_policy], dim=1
            )
        output = value_learning.quantile_q_learning(
            dist_q_tm1, tau_tm1, batch.a_tm1, batch.r_t, batch.discount_t, dist_q_t_selector, dist_q_t, self.huber_param
        )
        return output.loss, output.loss.detach()


def build_iqn(network: ImplicitQuantileNetwork, env: VectorEnvironment, settings: IqnSettings, device: torch.device) -> Iqn:
    """An IQN agent for `env` from the run's `settings`."""
    return replay_agent.build_agent(
        Iqn,
        network,
        env,
        settings,
        device,
        huber_param=settings.huber_param,
        tau_samples_s_tm1=settings.tau_samples_s_tm1,
        tau_samples_s_t=settings.tau_samples_s_t,
        tau_samples_policy=settings.tau_samples_policy,
    )


def make_network(env: VectorEnvironment, settings: IqnSettings) -> ImplicitQuantileNetwork:
    """Nature DQN's convs and a 512-unit head for Atari frame stacks, a small MLP for vector observations."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    embedding = (settings.tau_embed_dim, settings.tau_samples_policy)
    if len(observation_shape) == 3:
        return nature_cnn_iqn_network(num_actions, *embedding, observation_shape[0])
    return mlp_iqn_network(observation_shape[0], num_actions, *embedding)


def train(run_settings: IqnSettings) -> None:
    """Entry point of IQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(run_settings, lambda env, settings, device: build_iqn(make_network(env, settings), env, settings, device))
