"""A2C: synchronous advantage actor-critic, the synchronous form of A3C ("Asynchronous Methods for Deep
Reinforcement Learning", Mnih et al. 2016, Algorithm S3), with actor processes and a learner.

Actor processes step vectors of environments with the current policy and each writes one rollout of t_max =
`unroll_length` steps per environment into shared memory (the on-policy actors of `deep_rl_zoo.rollouts`, shared
with PPO). For each update the learner takes one rollout from every actor and makes ONE gradient step on all of
their samples together, each sample used exactly once (none drawn twice, none dropped):

1. the return of every step is bootstrapped from the value after the unroll (Algorithm S3):

       R_t = r_t + gamma r_{t+1} + ... + gamma^(T-1-t) r_{T-1} + gamma^(T-t) V(s_T),

   cut at the end of an episode (`multistep.discounted_returns`); --gae_lambda < 1 uses GAE instead
   (Schulman et al. 2016), whose lambda = 1 is the same return;
2. the loss over the N x T samples is (section 4 of the paper, with the value regression weighted)

       L = mean[ -log pi(a_t|s_t) (R_t - V(s_t)) + c_v 0.5 (R_t - V(s_t))^2 - beta H[pi(.|s_t)] ],

   the advantage R_t - V(s_t) held constant in the policy term (`policy_gradient_with_baseline_loss`);
3. the global gradient norm is clipped, then RMSProp (alpha 0.99, as in the paper; PyTorch's epsilon sits outside
   the square root) or Adam takes the step, its learning rate decayed linearly to 0 over the run as in the paper.

Because actors wait for the newest parameters before each rollout, every update learns from data of the policy it
updates (A3C's asynchronous staleness is gone: that is the "synchronous" of A2C).

A time-limit truncation is bootstrapped by the actor (gamma * V(final observation) added to the last reward) rather
than treated as the end of the world (Pardo et al. 2018).
"""

from typing import Any

import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.policy import CategoricalActorCritic, mlp_actor_critic, nature_cnn_actor_critic
from deep_rl_zoo.rollouts import OnPolicyActor, rollout_spec
from deep_rl_zoo.schedule import LinearSchedule

__all__ = ['A2cLearner', 'build_actor', 'build_learner', 'make_network', 'rollout_spec', 'train']


class A2cLearner:
    """One advantage actor-critic gradient step per batch of rollouts (see the module docstring)."""

    agent_name = 'A2C'

    def __init__(
        self,
        network: nn.Module,
        learning_rate: float,
        entropy_coef: float,
        value_coef: float,
        gae_lambda: float,
        max_grad_norm: float,
        total_updates: int,
        anneal_learning_rate: bool,
        optimizer: str = 'rmsprop',
        rmsprop_alpha: float = 0.99,
        optimizer_eps: float = 1e-5,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        if optimizer == 'rmsprop':
            self.optimizer = torch.optim.RMSprop(network.parameters(), lr=learning_rate, alpha=rmsprop_alpha, eps=optimizer_eps)
        elif optimizer == 'adam':
            self.optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate, eps=optimizer_eps)
        else:
            raise ValueError(f'optimizer must be rmsprop or adam, got {optimizer!r}')
        self.entropy_coef = entropy_coef
        self.value_coef = value_coef
        self.gae_lambda = gae_lambda
        self.max_grad_norm = max_grad_norm
        self.device = device
        self.learning_rate = LinearSchedule(learning_rate, 0.0 if anneal_learning_rate else learning_rate, total_updates)
        self.learner_steps = 0  # gradient steps, one per batch of rollouts
        self.samples_used = 0  # (state, action) samples learned from, each exactly once
        self.statistics = trackers.LearnerStatistics()

    def returns(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """[T, N] return targets: n-step returns bootstrapped from V(s_T) (lambda 1), else GAE + V."""
        if self.gae_lambda == 1.0:
            return multistep.discounted_returns(batch['reward'], batch['discount'], batch['value'][-1])
        advantages = multistep.truncated_generalized_advantage_estimation(batch['reward'], batch['discount'], self.gae_lambda, batch['value'])
        return advantages + batch['value'][:-1]

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """One gradient step on every sample of `buffers` (one rollout per actor, each [T, N_actor, ...])."""
        batch = {name: torch.cat([buffer[name] for buffer in buffers], dim=1).to(self.device) for name in ('observation', 'action', 'value', 'reward', 'discount')}
        returns = self.returns(batch).flatten()  # [T * N]
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)

        output = self.network(batch['observation'].flatten(0, 1))
        pg = policy_gradient.policy_gradient_with_baseline_loss(output.logits, batch['action'].flatten(), returns, output.value, self.value_coef)
        entropy_loss = policy_gradient.entropy_loss(output.logits).mean()
        loss = pg.loss.mean() + self.entropy_coef * entropy_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm if self.max_grad_norm > 0 else float('inf'))
        self.optimizer.step()

        self.learner_steps += 1
        self.samples_used += returns.shape[0]
        self.statistics.record(
            policy_loss=pg.extra.policy_loss.mean(),
            value_loss=pg.extra.value_loss.mean(),
            entropy=-entropy_loss.detach(),
            grad_norm=grad_norm,
            explained_variance=_explained_variance(output.value.detach(), returns),
            learning_rate=self.learning_rate(self.learner_steps - 1),
        )

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def agent_statistics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {
            'network': self.network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'learner_steps': self.learner_steps,
            'samples_used': self.samples_used,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state['network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.learner_steps = int(state['learner_steps'])
        self.samples_used = int(state.get('samples_used', 0))


def _explained_variance(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """1 - Var[target - prediction] / Var[target] (nan when the targets are constant)."""
    variance = target.var()
    return torch.where(variance > 0, 1 - (target - prediction).var() / variance, torch.full_like(variance, float('nan')))


def build_learner(network: nn.Module, values: dict[str, Any], total_updates: int, device: torch.device) -> A2cLearner:
    """An A2C learner from the run's flag values (see `flags.define_a2c`)."""
    return A2cLearner(
        network,
        learning_rate=values['learning_rate'],
        entropy_coef=values['entropy_coef'],
        value_coef=values['value_coef'],
        gae_lambda=values['gae_lambda'],
        max_grad_norm=values['max_grad_norm'],
        total_updates=total_updates,
        anneal_learning_rate=values['anneal_learning_rate'],
        optimizer=values['optimizer'],
        rmsprop_alpha=values['rmsprop_alpha'],
        optimizer_eps=values['optimizer_eps'],
        device=device,
    )


def build_actor(network: nn.Module, env: VectorEnvironment, values: dict[str, Any], seed: int, device: torch.device) -> OnPolicyActor:
    """An actor sampling the current policy, from the run's flag values."""
    return OnPolicyActor(network, env, values['unroll_length'], values['discount'], values.get('terminal_on_life_loss', False), seed, device)


def make_network(env: VectorEnvironment, values: dict[str, Any]) -> CategoricalActorCritic:
    """The Nature CNN with policy and value heads on one torso for Atari frames (the paper shares all non-output
    layers); separate tanh MLPs for vector observations."""
    observation_shape, action_space = env.single_observation_space.shape, env.single_action_space
    if action_space.shape:
        raise ValueError('A2C here takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    if len(observation_shape) == 3:
        return nature_cnn_actor_critic(action_space.n, observation_shape[0])
    return mlp_actor_critic(observation_shape[0], action_space.n)


def train(kind: str) -> None:
    """Entry point of A2C's run scripts: actors, learner and iterations from the parsed flags."""
    main_loop.train_actors_and_learner(kind, make_network, build_learner, build_actor, rollout_spec)
