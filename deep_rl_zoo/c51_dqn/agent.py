"""C51: "A Distributional Perspective on Reinforcement Learning" (Bellemare, Dabney & Munos 2017).

The network outputs, for each action, a distribution over N fixed atoms z_1 < ... < z_N evenly spaced on
[v_min, v_max]: probabilities p_i(s, a) = softmax of N logits. Q(s, a) = sum_i z_i p_i(s, a) drives
epsilon-greedy acting as in DQN. Each update (the paper's Algorithm 1) takes the greedy next action of the
target network, a* = argmax_a Q(s', a; theta^-), moves its atoms through the Bellman update r + gamma^n z_j,
projects them back onto the support (eq. 7, Phi) and minimises the cross-entropy

    L(theta) = - sum_i [Phi T Z(s', a*; theta^-)]_i log p_i(s, a; theta).

Acting, replay and the update schedule are shared with the whole family (`deep_rl_zoo.replay_agent`).
"""

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.value import CategoricalQNetwork, categorical_support, mlp_c51_network, nature_cnn_c51_network
from deep_rl_zoo.c51_dqn.settings import C51Settings
from deep_rl_zoo.settings import Categorical


class C51(replay_agent.ReplayAgent):
    """C51 over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'C51'

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Categorical Q-learning against the target network (Algorithm 1)."""
        logits_tm1 = self.online_network.logits(batch.s_tm1)
        with torch.no_grad():
            logits_t = self.target_network.logits(batch.s_t)
        output = value_learning.categorical_q_learning(
            logits_tm1, batch.a_tm1, batch.r_t, batch.discount_t, logits_t, self.online_network.support
        )
        return output.loss, output.extra.kl_divergence


def build_c51(network: nn.Module, env: VectorEnvironment, settings: C51Settings, device: torch.device) -> C51:
    """A C51 agent for `env` from the run's `settings`."""
    return replay_agent.build_agent(C51, network, env, settings, device)


def support_of(settings: Categorical) -> torch.Tensor:
    """The atoms of --num_atoms, --v_min and --v_max."""
    if not settings.v_min < settings.v_max:
        raise ValueError(f'--v_min ({settings.v_min}) must be below --v_max ({settings.v_max})')
    return categorical_support(settings.v_min, settings.v_max, settings.num_atoms)


def make_network(env: VectorEnvironment, settings: Categorical) -> CategoricalQNetwork:
    """The Nature CNN for Atari frame stacks, an MLP for vector observations, with --num_atoms logits per action."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_c51_network(num_actions, support_of(settings), observation_shape[0])
    return mlp_c51_network(observation_shape[0], num_actions, support_of(settings))


def train(run_settings: C51Settings) -> None:
    """Entry point of C51's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(run_settings, lambda env, settings, device: build_c51(make_network(env, settings), env, settings, device))
