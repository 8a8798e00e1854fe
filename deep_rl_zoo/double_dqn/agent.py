"""Double DQN: "Deep Reinforcement Learning with Double Q-learning" (van Hasselt, Guez & Silver 2016).

DQN's max over the target network both selects and evaluates the next action, so noise in the estimates
biases the target upwards. Double DQN lets the online network select the action and the target network
evaluate it (the paper's eq. 4):

    Y = r + gamma^n * Q(s', argmax_a' Q(s', a'; theta); theta^-)

and minimises huber(Y - Q(s, a; theta)) exactly as DQN does. Everything else (acting, uniform replay, the
update schedule, target refreshes) is DQN's (`deep_rl_zoo.replay_agent`).
"""

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.dqn.agent import make_network
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.double_dqn.settings import DoubleDqnSettings


class DoubleDqn(replay_agent.ReplayAgent):
    """DQN with the double Q-learning target."""

    agent_name = 'DoubleDQN'

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Huber loss of the double Q-learning TD error (van Hasselt et al. 2016, eq. 4); priorities |td|."""
        q_tm1 = self.online_network(batch.s_tm1)
        with torch.no_grad():
            q_t_target = self.target_network(batch.s_t)
            q_t_online = self.online_network(batch.s_t)
        output = value_learning.double_qlearning(
            q_tm1, batch.a_tm1, batch.r_t, batch.discount_t, q_t_value=q_t_target, q_t_selector=q_t_online, loss='huber'
        )
        return output.loss, output.extra.td_error.abs()


def build_double_dqn(network: nn.Module, env: VectorEnvironment, settings: DoubleDqnSettings, device: torch.device) -> DoubleDqn:
    """A Double DQN agent for `env` from the run's `settings`."""
    return replay_agent.build_agent(DoubleDqn, network, env, settings, device)


def train(run_settings: DoubleDqnSettings) -> None:
    """Entry point of Double DQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings, lambda env, settings, device: build_double_dqn(make_network(env, settings), env, settings, device)
    )
