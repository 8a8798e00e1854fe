"""REINFORCE: Monte-Carlo policy gradient (Williams 1992, "Simple statistical gradient-following algorithms for
connectionist reinforcement learning"; Sutton et al. 2000, "Policy gradient methods for reinforcement learning
with function approximation").

The agent samples its actions from its policy pi(a|s; theta) on a vector of environments and keeps each
environment's episode until it ends. Every `num_episodes_per_update` complete episodes it takes one gradient
step on all their steps (Williams 1992, eq. 11 with baseline 0; Sutton & Barto 2018, section 13.3):

    G_t      = r_t + gamma * G_{t+1}                      (the Monte-Carlo return, 0 after the episode's end)
    L(theta) = mean_t( -log pi(a_t|s_t; theta) * G_t ) - entropy_coef * mean_t( H[pi(.|s_t; theta)] )

On-policy data only: every step of an update was sampled with the parameters being updated. After an update
the games still running were begun with the old parameters, so the agent asks the loop to reset every environment
(`wants_new_episodes`) and all start new episodes under the new parameters; playing the old games to their end
would cost steps nobody learns from (on Pong, with 8 environments and one game each per update, those and the
waiting below were 47% of all agent steps). Each environment gives the same number of episodes to an update
(`num_episodes_per_update / num_envs`) and then waits, its steps not learned from (they are counted in
`discarded_steps`), until every environment has given its share: taking whichever episodes happened to end first
would favour short episodes and bias the gradient. With one environment (the classic-control default) nothing is
discarded and nothing reset.

A time-limit truncation is not a true end, but plain REINFORCE has no value to bootstrap from: the return of
a truncated episode counts only the rewards collected (bootstrap 0), a small bias for the last steps before
the limit. REINFORCE with baseline (`deep_rl_zoo.reinforce_baseline`) bootstraps them from V(final
observation). On Atari with `terminal_on_life_loss` a lost life ends the return (discount 0) but the game goes
on as the same episode. An Atari episode is a whole game of frame stacks (about 28 kB per step) kept in memory
until the update.
"""

from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.greedy_actors import as_tensor, greedy_policy_actor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.policy import policy_for
from deep_rl_zoo.reinforce.settings import ReinforceSettings


class EpisodeBatch(NamedTuple):
    """The steps of an update's complete episodes, one episode after another, as tensors on the learner's device."""

    observation: torch.Tensor  # [T, *observation_shape]
    action: torch.Tensor  # [T] int64
    reward: torch.Tensor  # [T] float32
    discount: torch.Tensor  # [T] gamma * (1 - terminal), and 0 at every episode's last step
    truncated_index: torch.Tensor  # [K] int64: the last step of each episode that the time limit cut
    truncated_observation: torch.Tensor  # [K, *observation_shape]: the observation that followed it


class _Episode:
    """One environment's episode being collected."""

    def __init__(self) -> None:
        self.observations: list[np.ndarray] = []
        self.actions: list[int] = []
        self.rewards: list[float] = []
        self.discounts: list[float] = []
        self.final_observation: np.ndarray | None = None  # set when a time limit cut the episode


class Reinforce:
    """REINFORCE over a vector of environments, learning in the acting process from complete episodes."""

    agent_name = 'REINFORCE'

    def __init__(
        self,
        network: nn.Module,
        optimizer: torch.optim.Optimizer,
        num_envs: int,
        num_episodes_per_update: int,
        discount: float,
        entropy_coef: float,
        normalize_advantages: bool,
        max_grad_norm: float,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        if num_episodes_per_update % num_envs:
            raise ValueError(
                f'--num_episodes_per_update ({num_episodes_per_update}) must be a multiple of --num_envs ({num_envs}): '
                'every environment gives the same number of episodes to an update'
            )
        self.online_network = network.to(device)
        self.optimizer = optimizer
        self.num_envs = num_envs
        self.episodes_per_env = num_episodes_per_update // num_envs
        self.discount = discount
        self.entropy_coef = entropy_coef
        self.normalize_advantages = normalize_advantages
        self.max_grad_norm = max_grad_norm
        self.terminal_on_life_loss = terminal_on_life_loss
        self.device = device
        self._generator = torch.Generator(device=device).manual_seed(seed)
        self._last_observation: np.ndarray | None = None
        self._current = [_Episode() for _ in range(num_envs)]
        self._finished: list[list[_Episode]] = [[] for _ in range(num_envs)]
        # Whether env i's current episode began with the current parameters and is wanted by the next update.
        self._collecting = np.ones(num_envs, bool)
        self.wants_new_episodes = False  # read by the env loop after `observe`: reset the environments, then `reset()`
        self.env_steps = 0
        self.learner_steps = 0
        self.discarded_steps = 0
        self.statistics = trackers.LearnerStatistics()

    def act(self, observation: np.ndarray) -> np.ndarray:
        """Actions sampled from pi(.|s) for every environment, from one forward pass."""
        self._last_observation = np.array(observation)  # the environments may reuse their buffer
        with torch.no_grad():
            logits = self.online_network(as_tensor(self._last_observation, self.device)).logits
        return torch.multinomial(torch.softmax(logits, dim=1), 1, generator=self._generator).squeeze(1).cpu().numpy()

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """Adds the step to the episodes being collected; learns once every environment has given its episodes."""
        learning_terminal = step.terminated | (step.life_loss & self.terminal_on_life_loss)
        done = step.terminated | step.truncated
        for i in range(self.num_envs):
            if not self._collecting[i]:
                self.discarded_steps += 1
            else:
                episode = self._current[i]
                episode.observations.append(self._last_observation[i])
                episode.actions.append(int(action[i]))
                episode.rewards.append(float(step.reward[i]))
                episode.discounts.append(0.0 if learning_terminal[i] else self.discount)
                if done[i]:
                    if not learning_terminal[i]:  # cut by the time limit: the return may be bootstrapped
                        episode.final_observation = np.array(step.final_observation[i])
                    self._finished[i].append(episode)
                    self._current[i] = _Episode()
            if done[i]:
                self._collecting[i] = len(self._finished[i]) < self.episodes_per_env
        self.env_steps += len(action)
        if all(len(finished) == self.episodes_per_env for finished in self._finished):
            self.learn()
            # Running games were begun with the old parameters: the loop restarts them (a loop that does not would
            # have each environment collect again from its next episode on).
            self._collecting = done.copy()
            self.wants_new_episodes = not done.all()

    def reset(self) -> None:
        """The loop reset every environment: each collects from its new episode on, under the current parameters."""
        self._current = [_Episode() for _ in range(self.num_envs)]
        self._collecting[:] = True
        self.wants_new_episodes = False

    def take_batch(self) -> EpisodeBatch:
        """The finished episodes as one batch (they are then forgotten)."""
        episodes = [episode for finished in self._finished for episode in finished]
        self._finished = [[] for _ in range(self.num_envs)]
        discounts, truncated_index, truncated_observation, length = [], [], [], 0
        for episode in episodes:
            episode.discounts[-1] = 0.0  # returns never run on into the next episode of the batch
            discounts += episode.discounts
            length += len(episode.rewards)
            if episode.final_observation is not None:
                truncated_index.append(length - 1)
                truncated_observation.append(episode.final_observation)
        observation_shape = episodes[0].observations[0].shape
        observation = np.stack([o for episode in episodes for o in episode.observations])
        return EpisodeBatch(
            observation=as_tensor(observation, self.device),
            action=torch.tensor([a for episode in episodes for a in episode.actions], dtype=torch.int64, device=self.device),
            reward=torch.tensor([r for episode in episodes for r in episode.rewards], dtype=torch.float32, device=self.device),
            discount=torch.tensor(discounts, dtype=torch.float32, device=self.device),
            truncated_index=torch.tensor(truncated_index, dtype=torch.int64, device=self.device),
            truncated_observation=as_tensor(
                np.stack(truncated_observation) if truncated_observation else np.zeros((0, *observation_shape), observation.dtype),
                self.device,
            ),
        )

    def loss(self, batch: EpisodeBatch) -> torch.Tensor:
        """The algorithm: REINFORCE's loss averaged over the batch's steps (Williams 1992, eq. 11)."""
        returns = multistep.discounted_returns(batch.reward, batch.discount, 0.0)  # truncated episodes: bootstrap 0
        logits = self.online_network(batch.observation).logits
        # Optional variance reduction (not in the paper): centring on the batch mean acts as a constant baseline.
        advantages = policy_gradient.normalize_advantages(returns) if self.normalize_advantages else returns
        policy_loss = policy_gradient.policy_gradient_loss(logits, batch.action, advantages).mean()
        entropy_loss = policy_gradient.entropy_loss(logits).mean()
        self.statistics.record(policy_loss=policy_loss.item())
        self.statistics.record(entropy=-entropy_loss.item())
        return policy_loss + self.entropy_coef * entropy_loss

    def learn(self) -> None:
        """One gradient step on every step of the finished episodes."""
        batch = self.take_batch()
        loss = self.loss(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.online_network.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.learner_steps += 1
        self.statistics.record(loss=loss.item())
        self.statistics.record(update_steps=float(len(batch.reward)))

    def agent_statistics(self) -> dict[str, float]:
        return {'discarded_steps': float(self.discarded_steps)}

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def state_dict(self) -> dict[str, Any]:
        return {
            'network': self.online_network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'env_steps': self.env_steps,
            'learner_steps': self.learner_steps,
            'discarded_steps': self.discarded_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.online_network.load_state_dict(state['network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.env_steps = int(state['env_steps'])
        self.learner_steps = int(state['learner_steps'])
        self.discarded_steps = int(state['discarded_steps'])


def build_agent(
    agent_class: type[Reinforce], network: nn.Module, env: VectorEnvironment, settings: ReinforceSettings, device: torch.device, **options: Any
) -> Reinforce:
    """An `agent_class` (REINFORCE or a subclass) for `env` from the run's `settings`."""
    return agent_class(
        network=network,
        optimizer=torch.optim.Adam(network.parameters(), lr=settings.learning_rate, fused=True),
        num_envs=env.num_envs,
        num_episodes_per_update=settings.num_episodes_per_update,
        discount=settings.discount,
        entropy_coef=settings.entropy_coef,
        normalize_advantages=settings.normalize_advantages,
        max_grad_norm=settings.max_grad_norm,
        terminal_on_life_loss=settings.life_loss_is_terminal,
        seed=settings.seed,
        device=device,
        **options,
    )


def make_network(env: VectorEnvironment, settings: ReinforceSettings) -> nn.Module:
    """A policy without value head: the Nature CNN for Atari frame stacks, a tanh MLP for vector observations."""
    return policy_for(env, 'REINFORCE')



def train(run_settings: ReinforceSettings) -> None:
    """Entry point of REINFORCE's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings, lambda env, settings, device: build_agent(Reinforce, make_network(env, settings), env, settings, device), greedy_policy_actor
    )
