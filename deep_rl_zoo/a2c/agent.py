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

With `bf16_learning` the learner's forward pass runs its Nature CNN torso under bfloat16 autocast
(`networks.common.bf16_torsos`); heads, loss, gradients and the optimizer stay float32, and the actors act in float32.

Because actors wait for the newest parameters before each rollout, every update learns from data of the policy it
updates (A3C's asynchronous staleness is gone: that is the "synchronous" of A2C).

A time-limit truncation is bootstrapped by the actor (gamma * V(final observation) added to the last reward) rather
than treated as the end of the world (Pardo et al. 2018).

The gradient variant (`run_classic_grad.py`, `run_atari_grad.py`) moves steps 1 and 2 into the actors, as A3C's
workers do: each actor computes the gradient of the mean loss over its own rollout with the parameters the learner
published, and writes it, compressed (`--gradient_compression`, see `deep_rl_zoo.gradient_compression`), into its
shared buffer; the learner averages the actors' gradients weighted by their sample counts, which is the gradient of
the mean loss over all samples, and takes step 3. It is the same update as above up to the compression error, with
the forward and backward passes spread over the actor processes and no forward pass on the learner.
"""

import dataclasses
from typing import Any, Callable

import torch
from torch import nn

from deep_rl_zoo import gradient_compression, main_loop, multistep, policy_gradient, trackers
from deep_rl_zoo.a2c.settings import A2cGradientSettings, A2cSettings
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.policy import CategoricalActorCritic, actor_critic_for, mlp_actor_critic
from deep_rl_zoo.normalizer import fold_into_observation_statistics
from deep_rl_zoo.rollouts import OnPolicyActor, rollout_spec
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.types import OneOptimizerLearner, rmsprop_or_adam

__all__ = [
    'A2cGradientLearner',
    'A2cLearner',
    'A2cLoss',
    'GradientActor',
    'build_actor',
    'build_gradient_actor',
    'build_gradient_learner',
    'build_learner',
    'gradient_rollout_spec',
    'make_network',
    'rollout_spec',
    'train',
    'train_with_actor_gradients',
]

BATCH_FIELDS = ('observation', 'action', 'value', 'reward', 'discount')  # what the loss reads of a rollout
ACTOR_STATISTICS = ('policy_loss', 'value_loss', 'entropy', 'explained_variance')  # sent by gradient actors


@dataclasses.dataclass
class A2cLoss:
    """The A2C loss of a batch of rollouts (steps 1 and 2 of the module docstring), for the learner or an actor."""

    value_coef: float
    entropy_coef: float
    gae_lambda: float
    normalize_advantages: bool = False

    def returns(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """[T, N] return targets: n-step returns bootstrapped from V(s_T) (lambda 1), else GAE + V."""
        if self.gae_lambda == 1.0:
            return multistep.discounted_returns(batch['reward'], batch['discount'], batch['value'][-1])
        advantages = multistep.truncated_generalized_advantage_estimation(batch['reward'], batch['discount'], self.gae_lambda, batch['value'])
        return advantages + batch['value'][:-1]

    def __call__(self, network: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The mean loss over the T x N samples of `batch` (one forward pass) and its detached parts."""
        returns = self.returns(batch).flatten()  # [T * N]
        output = network(batch['observation'].flatten(0, 1))
        pg = policy_gradient.policy_gradient_with_baseline_loss(
            output.logits, batch['action'].flatten(), returns, output.value, self.value_coef, normalized_advantage=self.normalize_advantages
        )
        entropy_loss = policy_gradient.entropy_loss(output.logits).mean()
        loss = pg.loss.mean() + self.entropy_coef * entropy_loss
        statistics = {
            'policy_loss': pg.extra.policy_loss.mean(),
            'value_loss': pg.extra.value_loss.mean(),
            'entropy': -entropy_loss.detach(),
            'explained_variance': policy_gradient.explained_variance(output.value.detach(), returns),
        }
        return loss, statistics


class A2cLearner(OneOptimizerLearner):
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
        normalize_advantages: bool = False,
        optimizer: str = 'rmsprop',
        rmsprop_alpha: float = 0.99,
        optimizer_eps: float = 1e-5,
        bf16_learning: bool = False,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        self.optimizer = rmsprop_or_adam(network, optimizer, learning_rate, rmsprop_alpha, optimizer_eps)
        self.loss = A2cLoss(value_coef=value_coef, entropy_coef=entropy_coef, gae_lambda=gae_lambda, normalize_advantages=normalize_advantages)
        self.max_grad_norm = max_grad_norm
        self.bf16_learning = bf16_learning
        self.device = device
        self.learning_rate = LinearSchedule(learning_rate, 0.0 if anneal_learning_rate else learning_rate, total_updates)
        self.learner_steps = 0  # gradient steps, one per batch of rollouts
        self.samples_used = 0  # (state, action) samples learned from, each exactly once
        self.statistics = trackers.LearnerStatistics()

    def returns(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.loss.returns(batch)

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """One gradient step on every sample of `buffers` (one rollout per actor, each [T, N_actor, ...])."""
        batch = {name: torch.cat([buffer[name] for buffer in buffers], dim=1).to(self.device) for name in BATCH_FIELDS}
        with bf16_torsos(self.bf16_learning):
            loss, statistics = self.loss(self.network, batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.apply_gradients(statistics, num_samples=batch['reward'].numel())
        fold_into_observation_statistics(self.network, batch['observation'])  # after the step

    def apply_gradients(self, statistics: dict[str, torch.Tensor], num_samples: int) -> None:
        """Step 3: clips the gradients held in the network's `.grad`, takes the optimizer step at the scheduled
        learning rate, counts the step and its samples and records `statistics`."""
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate(self.learner_steps)
        grad_norm = nn.utils.clip_grad_norm_(self.network.parameters(), self.max_grad_norm if self.max_grad_norm > 0 else float('inf'))
        self.optimizer.step()
        self.learner_steps += 1
        self.samples_used += num_samples
        self.statistics.record(**statistics, grad_norm=grad_norm, learning_rate=self.learning_rate(self.learner_steps - 1))

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), 'samples_used': self.samples_used}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.samples_used = int(state.get('samples_used', 0))


class A2cGradientLearner(A2cLearner):
    """The learner of A2C's gradient variant: applies the actors' gradients instead of computing its own."""

    agent_name = 'A2C-grad'

    def __init__(self, network: nn.Module, compression: str, **a2c_settings: Any):
        super().__init__(network, **a2c_settings)
        self.compression = compression

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """One step on the mean of the actors' gradients, each weighted by its share of the samples: the gradient
        of the mean loss over every sample of every rollout (each used once)."""
        counts = torch.tensor([float(buffer['reward'].numel()) for buffer in buffers])
        weights = counts / counts.sum()
        gradient = sum(weight * gradient_compression.decode(self.compression, buffer) for weight, buffer in zip(weights, buffers))
        gradient = gradient.to(self.device)
        offset = 0
        for parameter in self.network.parameters():
            parameter.grad = gradient[offset : offset + parameter.numel()].view_as(parameter)  # views of this update's own sum
            offset += parameter.numel()
        if offset != gradient.numel():
            raise ValueError(f'the actors sent gradients of {gradient.numel()} numbers for a network of {offset} parameters')
        reported = torch.stack([buffer['loss_statistics'] for buffer in buffers])  # [actors, statistics]
        statistics = dict(zip(ACTOR_STATISTICS, (weights.unsqueeze(1) * reported).sum(dim=0)))
        self.apply_gradients(statistics, num_samples=int(counts.sum()))


class GradientActor:
    """The actor of A2C's gradient variant: collects a rollout like any A2C actor, then computes the gradient of
    the A2C loss on it and writes it, compressed, beside the rollout in its shared buffer (with its loss parts)."""

    def __init__(self, rollout_actor: OnPolicyActor, loss: A2cLoss, compression: str, seed: int):
        self.rollout_actor = rollout_actor
        self.network = rollout_actor.network
        self.loss = loss
        self.compression = compression
        self.generator = torch.Generator(device=rollout_actor.device).manual_seed(seed)  # int8's stochastic rounding

    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished = self.rollout_actor.collect(buffer)
        batch = {name: buffer[name].to(self.rollout_actor.device) for name in BATCH_FIELDS}
        self.network.zero_grad(set_to_none=True)
        loss, statistics = self.loss(self.network, batch)
        loss.backward()
        gradient = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in self.network.parameters()])
        gradient_compression.encode(self.compression, gradient, buffer, self.generator)
        buffer['loss_statistics'].copy_(torch.stack([statistics[name].float() for name in ACTOR_STATISTICS]))
        return finished


def gradient_rollout_spec(settings: A2cGradientSettings) -> Callable[[VectorEnvironment, int, int], dict[str, tuple[tuple[int, ...], torch.dtype]]]:
    """The buffer spec of a gradient actor: an A2C rollout, the encoded gradient of the network's parameters
    (`--gradient_compression`) and the loss parts."""

    def spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        num_parameters = sum(parameter.numel() for parameter in make_network(env, settings).parameters())
        return {
            **rollout_spec(env, num_envs, unroll_length),
            **gradient_compression.buffer_spec(settings.gradient_compression, num_parameters),
            'loss_statistics': ((len(ACTOR_STATISTICS),), torch.float32),
        }

    return spec


def build_learner(
    network: nn.Module,
    env: VectorEnvironment,
    settings: A2cSettings,
    total_updates: int,
    device: torch.device,
    learner_class: type[A2cLearner] = A2cLearner,
    **options: Any,
) -> A2cLearner:
    """An A2C learner from the run's `settings`; `options` go to `learner_class`."""
    return learner_class(
        network,
        learning_rate=settings.learning_rate,
        entropy_coef=settings.entropy_coef,
        value_coef=settings.value_coef,
        gae_lambda=settings.gae_lambda,
        max_grad_norm=settings.max_grad_norm,
        total_updates=total_updates,
        anneal_learning_rate=settings.anneal_learning_rate,
        normalize_advantages=settings.normalize_advantages,
        optimizer=settings.optimizer,
        rmsprop_alpha=settings.rmsprop_alpha,
        optimizer_eps=settings.optimizer_eps,
        bf16_learning=settings.bf16_learning,
        device=device,
        **options,
    )


def build_gradient_learner(network: nn.Module, env: VectorEnvironment, settings: A2cGradientSettings, total_updates: int, device: torch.device) -> A2cGradientLearner:
    """The learner of the gradient variant from the run's `settings`."""
    return build_learner(network, env, settings, total_updates, device, A2cGradientLearner, compression=settings.gradient_compression)


def build_actor(network: nn.Module, env: VectorEnvironment, settings: A2cSettings, seed: int, device: torch.device) -> OnPolicyActor:
    """An actor sampling the current policy, from the run's `settings` (`--scale_rewards`: the rewards it stores
    are divided by the running std of its environments' discounted returns)."""
    return OnPolicyActor(
        network, env, settings.unroll_length, settings.discount, settings.life_loss_is_terminal, seed, device, scale_rewards=settings.scale_rewards
    )


def build_gradient_actor(network: nn.Module, env: VectorEnvironment, settings: A2cGradientSettings, seed: int, device: torch.device) -> GradientActor:
    """An actor of the gradient variant (samples the policy, then computes its rollout's gradient)."""
    loss = A2cLoss(
        value_coef=settings.value_coef, entropy_coef=settings.entropy_coef, gae_lambda=settings.gae_lambda, normalize_advantages=settings.normalize_advantages
    )
    return GradientActor(build_actor(network, env, settings, seed, device), loss, settings.gradient_compression, seed)


def make_network(env: VectorEnvironment, settings: A2cSettings) -> CategoricalActorCritic:
    """The Nature CNN with policy and value heads on one torso for Atari frames (the paper shares all non-output
    layers); separate tanh MLPs for vector observations, with a running observation normaliser in front with
    --normalize_observations (rl-baselines3-zoo's `normalize`; the learner updates it)."""
    network = actor_critic_for(env, 'A2C')
    if not settings.normalize_observations:
        return network
    observation_shape = env.single_observation_space.shape
    if len(observation_shape) != 1:
        raise ValueError(
            "--normalize_observations applies to vector observations only (deep_rl_zoo.a2c.run_classic); A2C's Nature CNN "
            'takes Atari frames as they are (scaled to [0, 1])'
        )
    return mlp_actor_critic(observation_shape[0], int(env.single_action_space.n), normalize_observations=True)


def make_gradient_network(env: VectorEnvironment, settings: A2cGradientSettings) -> CategoricalActorCritic:
    """The gradient variant's network: A2C's, without observation normalisation (its learner never sees the
    observations the statistics would need: the actors send gradients)."""
    if settings.normalize_observations:
        raise ValueError(
            "--normalize_observations is not available to A2C's gradient variant (its learner receives gradients, not "
            'the observations the running statistics need); deep_rl_zoo.a2c.run_classic takes it'
        )
    return make_network(env, settings)


def train(run_settings: A2cSettings) -> None:
    """Entry point of A2C's run scripts: actors, learner and iterations from the run's settings."""
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, rollout_spec)


def train_with_actor_gradients(run_settings: A2cGradientSettings) -> None:
    """Entry point of the gradient variant's run scripts (`run_classic_grad`, `run_atari_grad`)."""
    main_loop.train_actors_and_learner(
        run_settings, make_gradient_network, build_gradient_learner, build_gradient_actor, gradient_rollout_spec(run_settings)
    )
