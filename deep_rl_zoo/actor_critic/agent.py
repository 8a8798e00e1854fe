"""Actor-critic: n-step TD actor-critic (Konda & Tsitsiklis 2000, "Actor-Critic Algorithms"; Sutton & Barto 2018,
"Reinforcement Learning: An Introduction", section 13.5), learning online in the acting process.

The agent samples actions from its policy pi(.|s) for a vector of environments. After every `unroll_length`
steps of each environment (n = unroll_length) it makes one update from those n x num_envs steps and then
forgets them, so every step is used exactly once, by the policy that collected it (on-policy):

    G_t = r_t + gamma r_{t+1} + ... + gamma^(k-1) r_{t+k-1} + gamma^k V(s_{t+k}),   t + k = end of the unroll
    delta_t = G_t - V(s_t)                                                             (the TD advantage)
    L = mean_t [ -log pi(a_t|s_t) delta_t + c_v 0.5 (G_t - V(s_t))^2 - c_e H(pi(.|s_t)) ]

(`multistep.n_step_bootstrapped_returns`, `policy_gradient.policy_gradient_with_baseline_loss`,
`policy_gradient.entropy_loss`). Each step's return looks as far ahead as the unroll allows, so with n = 1
it is the one-step actor-critic of Sutton & Barto (2018, section 13.5), delta = r + gamma V(s') - V(s), and
with n > 1 the forward view of A3C's n-step returns (Mnih et al. 2016, Algorithm S3). The targets G and the
advantage are constants: the policy term trains only the policy and the value term only the critic. With
--normalize_advantages the policy term weighs log pi by delta standardised over the update's n x num_envs steps.

A true termination (or a lost life, with `terminal_on_life_loss`) stops the return: nothing is bootstrapped
past it. A time-limit truncation is not an end of the task: its reward gets gamma * V(final observation)
added, so the return is bootstrapped from the state the time limit cut off (Pardo et al. 2018).
"""

from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.actor_critic.settings import ActorCriticSettings
from deep_rl_zoo.greedy_actors import as_tensor, greedy_policy_actor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.policy import actor_critic_for


class ActorCritic:
    """n-step actor-critic over a vector of environments, one update per `unroll_length` steps of each."""

    agent_name = 'ActorCritic'

    def __init__(
        self,
        network: nn.Module,
        optimizer: torch.optim.Optimizer,
        unroll_length: int,
        discount: float,
        entropy_coef: float,
        value_coef: float,
        max_grad_norm: float,
        terminal_on_life_loss: bool = False,
        normalize_advantages: bool = False,
        device: torch.device = torch.device('cpu'),
    ):
        if unroll_length < 1:
            raise ValueError(f'--unroll_length must be at least 1, got {unroll_length}')
        self.online_network = network.to(device)
        self.optimizer = optimizer
        self.unroll_length = unroll_length
        self.discount = discount
        self.entropy_coef = entropy_coef
        self.value_coef = value_coef
        self.max_grad_norm = max_grad_norm
        self.terminal_on_life_loss = terminal_on_life_loss
        self.normalize_advantages = normalize_advantages
        self.device = device
        self.env_steps = 0
        self.learner_steps = 0
        self._last_observation: np.ndarray | None = None
        self._unroll: dict[str, list[torch.Tensor]] = {'observation': [], 'action': [], 'reward': [], 'discount': []}
        self.statistics = trackers.LearnerStatistics()

    # ------------------------------------------------------------------------------------------ acting

    @torch.no_grad()
    def act(self, observation: np.ndarray) -> np.ndarray:
        """Actions sampled from pi(.|s) for every environment, from one forward pass."""
        self._last_observation = observation
        logits = self.online_network(as_tensor(observation, self.device)).logits
        return torch.distributions.Categorical(logits=logits).sample().cpu().numpy()

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """Adds the step to the current unroll; learns from it once it holds `unroll_length` steps."""
        reward = torch.as_tensor(step.reward, dtype=torch.float32, device=self.device).clone()
        truncated = step.truncated & ~step.terminated
        if truncated.any():  # a time limit is not an end: bootstrap from the state it cut off
            with torch.no_grad():
                final_value = self.online_network(as_tensor(step.final_observation[truncated], self.device)).value
            reward[torch.from_numpy(truncated).to(self.device)] += self.discount * final_value.float()
        terminal = step.terminated | step.truncated | (step.life_loss & self.terminal_on_life_loss)
        # Copies: vector environments may reuse their observation arrays for the next step.
        self._unroll['observation'].append(torch.tensor(self._last_observation, device=self.device))
        self._unroll['action'].append(torch.tensor(action, dtype=torch.int64, device=self.device))
        self._unroll['reward'].append(reward)
        self._unroll['discount'].append(as_tensor(self.discount * (1.0 - terminal.astype(np.float32)), self.device))
        self.env_steps += len(action)
        if len(self._unroll['reward']) == self.unroll_length:
            self.learn(as_tensor(step.observation, self.device))

    # ------------------------------------------------------------------------------------------ learning

    def learn(self, bootstrap_observation: torch.Tensor) -> None:
        """One gradient step on the finished unroll ([T, N] steps), then starts a new one.

        `bootstrap_observation` [N, ...] is s_T, the observation after the unroll's last step (whose value is
        used only where that step did not end its episode)."""
        unroll = {name: torch.stack(values) for name, values in self._unroll.items()}
        for values in self._unroll.values():
            values.clear()
        num_steps, num_envs = unroll['reward'].shape
        # One forward pass over s_0 ... s_{T-1} and s_T: logits for the policy, V for the baseline and bootstrap.
        observations = torch.cat([unroll['observation'].flatten(0, 1), bootstrap_observation])
        output = self.online_network(observations)
        logits = output.logits[: num_steps * num_envs]
        values = output.value.view(num_steps + 1, num_envs)
        # G_t, looking ahead to the end of the unroll (n = T steps for the first step, 1 for the last).
        returns = multistep.n_step_bootstrapped_returns(unroll['reward'], unroll['discount'], values[1:].detach(), n=num_steps)
        terms = policy_gradient.policy_gradient_with_baseline_loss(
            logits, unroll['action'].flatten(), returns.flatten(), values[:-1].flatten(), self.value_coef, normalized_advantage=self.normalize_advantages
        )
        entropy_loss = policy_gradient.entropy_loss(logits)
        loss = (terms.loss + self.entropy_coef * entropy_loss).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.online_network.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.learner_steps += 1
        self.statistics.record(
            loss=loss.item(),
            policy_loss=terms.extra.policy_loss.mean().item(),
            value_loss=terms.extra.value_loss.mean().item(),
            entropy=-entropy_loss.mean().item(),
            advantage=terms.extra.advantage.mean().item(),
        )

    # ------------------------------------------------------------------------------------------ bookkeeping

    def agent_statistics(self) -> dict[str, float]:
        return {}

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def state_dict(self) -> dict[str, Any]:
        """Network, optimizer and counters. An unfinished unroll is not saved: a resumed run starts a new one
        (the environments restart too)."""
        return {
            'network': self.online_network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'env_steps': self.env_steps,
            'learner_steps': self.learner_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.online_network.load_state_dict(state['network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.env_steps = int(state['env_steps'])
        self.learner_steps = int(state['learner_steps'])


def build_agent(network: nn.Module, env: VectorEnvironment, settings: ActorCriticSettings, device: torch.device) -> ActorCritic:
    """An actor-critic agent from the run's `settings`."""
    return ActorCritic(
        network,
        torch.optim.Adam(network.parameters(), lr=settings.learning_rate, eps=1e-5),
        unroll_length=settings.unroll_length,
        discount=settings.discount,
        entropy_coef=settings.entropy_coef,
        value_coef=settings.value_coef,
        max_grad_norm=settings.max_grad_norm,
        terminal_on_life_loss=settings.life_loss_is_terminal,
        normalize_advantages=settings.normalize_advantages,
        device=device,
    )


def make_network(env: VectorEnvironment, settings: ActorCriticSettings) -> nn.Module:
    """One Nature CNN torso under both heads for Atari frame stacks, separate tanh MLPs for vector observations."""
    return actor_critic_for(env, 'actor-critic')



def train(run_settings: ActorCriticSettings) -> None:
    """Entry point of the actor-critic run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings, lambda env, settings, device: build_agent(make_network(env, settings), env, settings, device), make_eval_actor=greedy_policy_actor
    )
