"""Rainbow: "Rainbow: Combining Improvements in Deep Reinforcement Learning" (Hessel et al. 2018).

C51's distributional loss (`deep_rl_zoo.c51_dqn`) with five more of DQN's extensions:
- multi-step targets: a replayed transition (s_tm1, a_tm1, r_t, discount_t, s_t) spans n = 3 steps, r_t the
  discounted sum of their rewards and discount_t = gamma^3 (0 if the episode ended);
- double Q-learning: the online network picks the next action, the target network gives its distribution,

      a* = argmax_a Q(s_t, a; theta),   target = Phi( r_t + discount_t z, p(s_t, a*; theta^-) ),

  and the loss is its cross-entropy with p(s_tm1, a_tm1; theta), as in C51;
- prioritized replay: transitions are drawn in proportion to their last KL loss ** alpha, with importance weights;
- a dueling network: value and advantage streams combined per atom before the softmax;
- noisy networks: noisy linear layers in both streams, and no epsilon: the agent acts greedily on its noisy
  network (epsilon-greedy with the epsilon flags, which Rainbow's run scripts set to 0).

The noise is drawn afresh on every forward pass: the online network's pass at s_t that picks a* sees other
noise than its pass at s_tm1, and the target network its own.
"""

import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo.c51_dqn.agent import support_of
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.value import NoisyLinear, RainbowQNetwork, mlp_rainbow_network, nature_cnn_rainbow_network
from deep_rl_zoo.rainbow.settings import RainbowSettings


class Rainbow(replay_agent.ReplayAgent):
    """Rainbow over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'Rainbow'

    def losses(self, batch: replay_agent.TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Double categorical Q-learning on n-step transitions; the priorities are the KL loss, as in the paper."""
        logits_tm1 = self.online_network.logits(batch.s_tm1)
        with torch.no_grad():
            logits_t = self.target_network.logits(batch.s_t)
            q_t_selector = self.online_network(batch.s_t)
        output = value_learning.categorical_q_learning(
            logits_tm1, batch.a_tm1, batch.r_t, batch.discount_t, logits_t, self.online_network.support, q_t_selector
        )
        # KL >= 0, but as cross-entropy - entropy in float32 it rounds to about -1e-7 when the online distribution
        # fits the target; the replay rejects negative priorities, so clamp at 0.
        return output.loss, output.extra.kl_divergence.clamp(min=0.0)

    def agent_statistics(self) -> dict[str, float]:
        """Adds the mean |sigma| of the noisy weights, how much noise is left (Fortunato et al. 2018 plot it too)."""
        sigmas = [layer.weight_sigma.detach().abs().flatten() for layer in self.online_network.modules() if isinstance(layer, NoisyLinear)]
        return {**super().agent_statistics(), 'noisy_weight_sigma': torch.cat(sigmas).mean().item()}


def build_rainbow(network: nn.Module, env: VectorEnvironment, settings: RainbowSettings, device: torch.device) -> Rainbow:
    """A Rainbow agent for `env` from the run's `settings` (value learning, prioritized replay, categorical)."""
    return replay_agent.build_agent(Rainbow, network, env, settings, device, prioritized=True)


def make_network(env: VectorEnvironment, settings: RainbowSettings) -> RainbowQNetwork:
    """Noisy dueling categorical streams on the Nature CNN's convolutions for Atari, on one hidden layer otherwise."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_rainbow_network(num_actions, support_of(settings), observation_shape[0], settings.noisy_sigma)
    return mlp_rainbow_network(observation_shape[0], num_actions, support_of(settings), settings.noisy_sigma)


def train(run_settings: RainbowSettings) -> None:
    """Entry point of Rainbow's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(run_settings, lambda env, settings, device: build_rainbow(make_network(env, settings), env, settings, device))
