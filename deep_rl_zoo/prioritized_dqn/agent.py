"""Prioritized DQN: "Prioritized Experience Replay" (Schaul, Quan, Antonoglou & Silver 2016), proportional variant.

The paper's Algorithm 1 is Double DQN (van Hasselt et al. 2016) with a replay that draws transition i with
probability P(i) = p_i^alpha / sum_k p_k^alpha (eq. 1), where p_i = |delta_i| + eps is its latest TD error
(new transitions get the largest priority seen so far). The non-uniform draws are corrected by the
importance-sampling weights w_i = (N * P(i))^-beta / max_j w_j (line 10), beta annealed from beta_0 to 1, and
each update (lines 11 and 13, with the Huber loss of Double DQN in place of the squared TD error) minimises

    mean_i( w_i * huber(delta_i) ),   delta_i = r + gamma^n * Q(s', argmax_a' Q(s', a'; theta); theta^-) - Q(s, a; theta)

then stores the new |delta_i| as the sampled transitions' priorities (line 12). The weights multiply
each sample's loss before the mean (`deep_rl_zoo.replay_agent`); the sum tree is `replay.PrioritizedReplay`.
"""

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.dqn.agent import make_network
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.prioritized_dqn.settings import PrioritizedDqnSettings


class PrioritizedDqn(replay_agent.ReplayAgent):
    """Double DQN learning from a proportional prioritized replay (build it with `prioritized=True`)."""

    agent_name = 'PrioritizedDQN'

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample Huber loss of the double Q-learning TD error, and |TD error| as the new priorities."""
        q_tm1 = self.online_network(batch.s_tm1)
        with torch.no_grad():
            q_t_target = self.target_network(batch.s_t)
            q_t_online = self.online_network(batch.s_t)
        output = value_learning.double_qlearning(
            q_tm1, batch.a_tm1, batch.r_t, batch.discount_t, q_t_value=q_t_target, q_t_selector=q_t_online, loss='huber'
        )
        return output.loss, output.extra.td_error.abs()


def build_prioritized_dqn(
    network: nn.Module, env: VectorEnvironment, settings: PrioritizedDqnSettings, device: torch.device
) -> PrioritizedDqn:
    """A prioritized DQN agent from the run's `settings`."""
    return replay_agent.build_agent(PrioritizedDqn, network, env, settings, device, prioritized=True)


def train(run_settings: PrioritizedDqnSettings) -> None:
    """Entry point of prioritized DQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings, lambda env, settings, device: build_prioritized_dqn(make_network(env, settings), env, settings, device)
    )
