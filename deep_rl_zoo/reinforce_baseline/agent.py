"""REINFORCE with baseline: Monte-Carlo policy gradient with a learned state-value baseline (Williams 1992,
"Simple statistical gradient-following algorithms for connectionist reinforcement learning", eq. 11 with a
reinforcement baseline b(s); Sutton et al. 2000; Sutton & Barto 2018, section 13.4).

Acting and episode collection are REINFORCE's (`deep_rl_zoo.reinforce.agent`): actions sampled on-policy,
complete episodes, one update every `num_episodes_per_update` episodes. Only the loss differs: a value head
V(s; w) (its own MLP torso on classic control, sharing the Nature CNN on Atari) is learned by regression on the
Monte-Carlo return and subtracted from it,

    A_t      = G_t - V(s_t)                                                        (no gradient)
    L(theta) = mean_t( -log pi(a_t|s_t) * A_t + value_coef * 0.5 * (G_t - V(s_t))**2 ) - entropy_coef * mean_t(H)

A time-limit truncation is not a true end: the return of a truncated episode is bootstrapped with
gamma * V(final observation) (Pardo et al. 2018, "Time limits in reinforcement learning"), computed with the
parameters that collected the episode, just before the update.
"""

from typing import Any

import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.policy import actor_critic_for
from deep_rl_zoo.greedy_actors import greedy_policy_actor
from deep_rl_zoo.reinforce.agent import EpisodeBatch, Reinforce, build_agent
from deep_rl_zoo.reinforce_baseline.settings import ReinforceBaselineSettings


class ReinforceBaseline(Reinforce):
    """REINFORCE whose returns are centred by a learned V(s) (the network's `value` output)."""

    agent_name = 'REINFORCE_BASELINE'

    def __init__(self, *args: Any, value_coef: float, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.value_coef = value_coef

    def loss(self, batch: EpisodeBatch) -> torch.Tensor:
        """REINFORCE with baseline averaged over the batch's steps (Sutton & Barto 2018, section 13.4)."""
        reward = batch.reward
        if len(batch.truncated_index):  # the last reward of a truncated episode + gamma * V(final observation)
            with torch.no_grad():
                bootstrap = self.online_network(batch.truncated_observation).value
            reward = reward.index_add(0, batch.truncated_index, self.discount * bootstrap)
        returns = multistep.discounted_returns(reward, batch.discount, 0.0)
        output = self.online_network(batch.observation)
        terms = policy_gradient.policy_gradient_with_baseline_loss(
            output.logits, batch.action, returns, output.value, self.value_coef, normalized_advantage=self.normalize_advantages
        )
        entropy_loss = policy_gradient.entropy_loss(output.logits).mean()
        self.statistics.record(policy_loss=terms.extra.policy_loss.mean().item())
        self.statistics.record(value_loss=terms.extra.value_loss.mean().item())
        self.statistics.record(entropy=-entropy_loss.item())
        return terms.loss.mean() + self.entropy_coef * entropy_loss


def make_network(env: VectorEnvironment, settings: ReinforceBaselineSettings) -> nn.Module:
    """Policy and value: one shared Nature CNN torso for Atari frame stacks, separate tanh MLPs for vectors."""
    return actor_critic_for(env, 'REINFORCE with baseline')


def train(run_settings: ReinforceBaselineSettings) -> None:
    """Entry point of REINFORCE with baseline's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings,
        lambda env, settings, device: build_agent(ReinforceBaseline, make_network(env, settings), env, settings, device, value_coef=settings.value_coef),
        greedy_policy_actor,
    )
