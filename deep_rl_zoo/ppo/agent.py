"""PPO: "Proximal Policy Optimization Algorithms" (Schulman et al. 2017), with actor processes and a learner.

Actors step vectors of environments with the latest policy and write fixed-length rollouts into shared
memory. For each update the learner takes one rollout per actor and

1. computes advantages with truncated GAE (Schulman et al. 2016, eq. 16) and returns R = A + V(s);
2. for `num_epochs` passes over the batch in `num_minibatches` shuffled minibatches minimises (eq. 9)

       L = -min(r A, clip(r, 1-eps, 1+eps) A) + c_v * L_value - c_e * H[pi(.|s)]

   with r = pi(a|s) / pi_old(a|s), advantages normalised per minibatch, the value loss clipped around the
   old values, and the global gradient norm clipped;
3. decays the learning rate (and optionally eps) linearly to 0 over the run.

With `bf16_learning` the minibatches' forward passes run their Nature CNN torso under bfloat16 autocast
(`networks.common.bf16_torsos`); heads, losses, gradients and Adam stay float32, and the actors act in float32.

A time-limit truncation is not a true end: the actor adds gamma * V(final observation) to the last reward
so the return is bootstrapped rather than cut (Pardo et al. 2018).
"""

from typing import Any, Iterator

import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.policy import GaussianActorCritic, mlp_actor_critic, nature_cnn_actor_critic
from deep_rl_zoo.normalizer import fold_into_observation_statistics
from deep_rl_zoo.ppo.settings import PpoSettings
from deep_rl_zoo.rollouts import OnPolicyActor, policy_distribution, rollout_spec
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.types import OneOptimizerLearner



class PpoLearner(OneOptimizerLearner):
    """Clipped-surrogate updates over minibatch epochs (see the module docstring)."""

    agent_name = 'PPO'

    def __init__(
        self,
        network: nn.Module,
        learning_rate: float,
        num_epochs: int,
        num_minibatches: int,
        clip_epsilon: float,
        clip_value: bool,
        entropy_coef: float,
        value_coef: float,
        gae_lambda: float,
        normalize_advantages: bool,
        max_grad_norm: float,
        total_updates: int,
        anneal_learning_rate: bool,
        anneal_clip_epsilon: bool,
        bf16_learning: bool = False,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        self.optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate, eps=1e-5, fused=True)
        self.num_epochs = num_epochs
        self.num_minibatches = num_minibatches
        self.clip_value = clip_value
        self.entropy_coef = entropy_coef
        self.value_coef = value_coef
        self.gae_lambda = gae_lambda
        self.normalize_advantages = normalize_advantages
        self.max_grad_norm = max_grad_norm
        self.bf16_learning = bf16_learning
        self.device = device
        self.learning_rate = LinearSchedule(learning_rate, 0.0 if anneal_learning_rate else learning_rate, total_updates)
        self.clip_epsilon = LinearSchedule(clip_epsilon, 0.0 if anneal_clip_epsilon else clip_epsilon, total_updates)
        self.learner_steps = 0  # updates (one per batch of rollouts)
        self.statistics = trackers.LearnerStatistics()

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        batch = concatenate_rollouts(buffers, self.device)
        advantages = multistep.truncated_generalized_advantage_estimation(batch['reward'], batch['discount'], self.gae_lambda, batch['value'])
        returns = advantages + batch['value'][:-1]
        samples = {
            'observation': batch['observation'].flatten(0, 1),
            'action': batch['action'].flatten(0, 1),
            'log_prob': batch['log_prob'].flatten(),
            'value': batch['value'][:-1].flatten(),
            'advantage': advantages.flatten(),
            'return': returns.flatten(),
        }
        clip_epsilon = self.clip_epsilon(self.learner_steps)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)
        with bf16_torsos(self.bf16_learning):
            for _ in range(self.num_epochs):
                for indices in minibatches(samples['advantage'].shape[0], self.num_minibatches, self.device):
                    self._minibatch_step({name: value[indices] for name, value in samples.items()}, clip_epsilon)
        fold_into_observation_statistics(self.network, batch['observation'])  # after the epochs: pi_old, V_old were the actors'
        self.learner_steps += 1
        self.statistics.record(explained_variance=float(policy_gradient.explained_variance(samples['value'], samples['return'])), learning_rate=self.learning_rate(self.learner_steps - 1), clip_epsilon=clip_epsilon)

    def _policy_terms(self, output: Any, minibatch: dict[str, torch.Tensor], clip_epsilon: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The clipped surrogate loss, the entropy and the new log-probabilities of `minibatch` under `output`."""
        distribution = policy_distribution(output)
        log_prob = distribution.log_prob(minibatch['action'])
        advantage = minibatch['advantage']
        if self.normalize_advantages:
            advantage = policy_gradient.normalize_advantages(advantage)
        policy_loss = policy_gradient.clipped_surrogate_loss(log_prob, minibatch['log_prob'], advantage, clip_epsilon).mean()
        return policy_loss, distribution.entropy().mean(), log_prob

    def _optimize(self, loss: torch.Tensor) -> None:
        """One Adam step on `loss`, the global gradient norm clipped to max_grad_norm when > 0."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm)
        self.optimizer.step()

    def _minibatch_step(self, minibatch: dict[str, torch.Tensor], clip_epsilon: float) -> None:
        output = self.network(minibatch['observation'])
        policy_loss, entropy, log_prob = self._policy_terms(output, minibatch, clip_epsilon)
        value_loss = policy_gradient.clipped_value_loss(
            output.value, minibatch['value'], minibatch['return'], clip_epsilon if self.clip_value else None
        ).mean()
        self._optimize(policy_loss + self.value_coef * value_loss - self.entropy_coef * entropy)
        self.statistics.record(
            policy_loss=policy_loss.detach(),
            value_loss=value_loss.detach(),
            entropy=entropy.detach(),
            approx_kl=policy_gradient.approx_kl(log_prob, minibatch['log_prob']),
            clip_fraction=policy_gradient.clip_fraction(log_prob, minibatch['log_prob'], clip_epsilon),
        )


def concatenate_rollouts(buffers: list[dict[str, torch.Tensor]], device: torch.device) -> dict[str, torch.Tensor]:
    """One batch from the actors' rollouts on `device`: [T, N_total, ...] per step ('last_observation', where the
    rollouts have it: [N_total, ...])."""
    return {
        name: torch.cat([buffer[name] for buffer in buffers], dim=0 if name == 'last_observation' else 1).to(device)
        for name in buffers[0]
    }


def minibatches(num_samples: int, num_minibatches: int, device: torch.device) -> Iterator[torch.Tensor]:
    """Index tensors of one shuffled pass over `num_samples` in `num_minibatches` equal minibatches (a remainder is
    left out)."""
    permutation = torch.randperm(num_samples, device=device)
    size = max(num_samples // num_minibatches, 1)
    for start in range(0, num_samples - size + 1, size):
        yield permutation[start : start + size]


def learner_arguments(settings: PpoSettings, total_updates: int, device: torch.device) -> dict[str, Any]:
    """`PpoLearner`'s keyword arguments from the run's `settings`; the curiosity agents' learners take them too."""
    return dict(
        learning_rate=settings.learning_rate,
        num_epochs=settings.num_epochs,
        num_minibatches=settings.num_minibatches,
        clip_epsilon=settings.clip_epsilon,
        clip_value=settings.clip_value,
        entropy_coef=settings.entropy_coef,
        value_coef=settings.value_coef,
        gae_lambda=settings.gae_lambda,
        normalize_advantages=settings.normalize_advantages,
        max_grad_norm=settings.max_grad_norm,
        total_updates=total_updates,
        anneal_learning_rate=settings.anneal_learning_rate,
        anneal_clip_epsilon=settings.anneal_clip_epsilon,
        bf16_learning=settings.bf16_learning,
        device=device,
    )


def build_learner(network: nn.Module, env: VectorEnvironment, settings: PpoSettings, total_updates: int, device: torch.device) -> PpoLearner:
    """A PPO learner from the run's `settings`."""
    return PpoLearner(network, **learner_arguments(settings, total_updates, device))


def build_actor(network: nn.Module, env: VectorEnvironment, settings: PpoSettings, seed: int, device: torch.device) -> OnPolicyActor:
    """A PPO actor from the run's `settings` (the curiosity agents' too: their rollouts' 'visited_rooms' it fills
    from Montezuma's `gym_env.RoomCounter`)."""
    return OnPolicyActor(
        network,
        env,
        settings.unroll_length,
        settings.discount,
        settings.life_loss_is_terminal,
        seed,
        device,
        scale_rewards=settings.scale_rewards,
    )


def refuse_observation_normalization(settings: PpoSettings, network_name: str) -> None:
    """--normalize_observations belongs to PPO's MLP networks on vector observations: any other network would
    silently ignore it, so the run stops with one line instead."""
    if settings.normalize_observations:
        raise ValueError(
            '--normalize_observations applies to PPO on vector observations only (deep_rl_zoo.ppo.run_classic, '
            f'deep_rl_zoo.ppo.run_continuous); {network_name} takes the observation as it is'
        )


def make_network(env: VectorEnvironment, settings: PpoSettings) -> nn.Module:
    """Nature CNN actor-critic for Atari frames, a Gaussian policy for continuous actions, else tanh MLPs; on vector
    observations, with running observation normalisation when asked (rl-baselines3-zoo's `normalize` of classic
    control, e.g. MountainCar's position and velocity, whose scales differ by 10x)."""
    observation_shape, action_space = env.single_observation_space.shape, env.single_action_space
    if action_space.shape:
        return GaussianActorCritic(observation_shape[0], action_space.shape[0], normalize_observations=settings.normalize_observations)
    if len(observation_shape) == 3:
        refuse_observation_normalization(settings, "PPO's Nature CNN on Atari frames (scaled to [0, 1])")
        return nature_cnn_actor_critic(action_space.n, observation_shape[0])
    return mlp_actor_critic(observation_shape[0], action_space.n, normalize_observations=settings.normalize_observations)


def train(run_settings: PpoSettings) -> None:
    """Entry point of PPO's run scripts: actors, learner and iterations from the run's settings."""
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, rollout_spec)
