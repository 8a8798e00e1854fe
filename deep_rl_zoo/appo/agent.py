"""APPO: asynchronous PPO as Sample Factory 2.x runs it (Petrenko et al. 2020, "Sample Factory").

Actor processes never wait for the learner (the asynchronous mode of `main_loop.run_actors_and_learner`; with
--async_rl=false the synchronous one): each samples its copy of the behaviour policy mu for `rollout` steps of a
vector of environments. Each environment plays one of `num_policies` independent policies, drawn at random at the
start and redrawn every 10 episodes. For each batch of rollouts the learner

1. computes targets in reward units, once per batch: rewards scaled and clipped, values denormalised (with
   `normalize_returns`), then GAE advantages (Schulman et al. 2016, eq. 16) and returns R = A + V over the actor's
   values, bootstrapped from V(x_T) of the learner's current network (as Sample Factory's learner does), or with
   `with_vtrace` the V-trace targets v_s and advantages of the current network (Espeholt et al. 2018, eq. 1);
2. per policy k, on the samples policy k made: folds its returns into the running return statistics and uses the
   normalised returns as value targets; then for `num_epochs` passes over `num_batches_per_epoch` minibatches of
   about `batch_size` samples (fixed contiguous slices, or reshuffled with `shuffle_minibatches`) minimises

       L = -mean(min(r A, clip(r, 1/(1+eps), 1+eps) A))                  r = clamp(pi/mu, 0.05, 20)  (Sample Factory)
           + c_v mean(max((V - R)^2, (V_clip - R)^2))                   V_clip = V_old + clamp(V - V_old, -c, c)
           - c_e mean(H[pi])  (+ c_kl mean(KL(pi || mu)))

   (`policy_gradient`'s losses, Sample Factory's variants) with A normalised per minibatch, (A - mean) /
   max(std, 1e-7), Adam, the global gradient norm clipped when `max_grad_norm` > 0, and the learning rate constant,
   decayed linearly per SGD step (`linear_decay`), or adapted to the KL (`schedule.kl_adaptive_learning_rate`);
3. only then folds the batch's observations into the running input statistics (`normalize_input`), so the ratio
   starts at exactly 1: the old log-probs were made with the statistics the first minibatch sees.

With `bf16_learning` the minibatches' forward passes run the convnet_atari encoder under bfloat16 autocast
(`networks.common.bf16_torsos`); the targets of step 1, the core, heads, losses and Adam stay float32, and the actors
act in float32.

Sample Factory's names are the settings' (`appo/settings.py`) and so the flags; `sample_factory_config` imports a model
card's settings and gives them under the core's names (`AppoSettings.core_settings`). The network is
`networks.sample_factory`'s.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import main_loop, multistep, policy_gradient, trackers, vtrace
from deep_rl_zoo.appo import sample_factory_config
from deep_rl_zoo.appo.settings import AppoCoreSettings, AppoSettings
from deep_rl_zoo.greedy_actors import PolicyGreedyActor, SteppedRecurrentGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput
from deep_rl_zoo.networks.sample_factory import PolicySet, SampleFactoryActorCritic
from deep_rl_zoo.rollouts import PolicySetActor, policy_set_rollout_spec
from deep_rl_zoo.schedule import LinearSchedule, kl_adaptive_learning_rate

RATIO_BOUNDS = (0.05, 20.0)  # Sample Factory clamps the importance ratio to this range before the PPO clip


def make_network(env: VectorEnvironment, settings: AppoSettings) -> PolicySet:
    """`num_policies` Sample Factory networks for `env` from the run's (Sample Factory) `settings`."""
    if env.single_action_space.shape:
        raise ValueError('APPO here takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    policies = [
        SampleFactoryActorCritic(
            env.single_observation_space.shape,
            int(env.single_action_space.n),
            sample_factory_config.layer_sizes('encoder_mlp_layers', settings.encoder_mlp_layers),
            sample_factory_config.layer_sizes('encoder_conv_mlp_layers', settings.encoder_conv_mlp_layers),
            nonlinearity=settings.nonlinearity,
            share_weights=settings.actor_critic_share_weights,
            normalize_input=settings.normalize_input,
            normalize_returns=settings.normalize_returns,
            obs_subtract_mean=settings.obs_subtract_mean,
            obs_scale=settings.obs_scale,
            initialization=settings.policy_initialization,
            init_gain=settings.policy_init_gain,
            rnn_type=settings.rnn_type if settings.use_rnn else None,
            rnn_size=settings.rnn_size,
        )
        for _ in range(settings.num_policies)
    ]
    return PolicySet(policies)


def _trajectory_major(tensor: torch.Tensor) -> torch.Tensor:
    """[T, N, ...] -> [N * T, ...] with each environment's trajectory contiguous (Sample Factory's sample order)."""
    return tensor.transpose(0, 1).flatten(0, 1)


class PolicyTrainer:
    """The learner of one policy: its optimizer, learning-rate schedule, SGD epochs and statistics."""

    def __init__(
        self,
        network: SampleFactoryActorCritic,
        *,
        learning_rate: float,
        lr_schedule: str = 'constant',
        total_sgd_steps: int = 1,
        lr_schedule_kl_threshold: float = 0.008,
        lr_adaptive_min: float = 1e-6,
        lr_adaptive_max: float = 1e-2,
        adam_eps: float = 1e-6,
        adam_betas: tuple[float, float] = (0.9, 0.999),
        adam_fused: bool = False,
        num_epochs: int = 1,
        num_batches_per_epoch: int = 1,
        shuffle_minibatches: bool = False,
        recurrence: int = 1,
        ppo_clip_ratio: float = 0.1,
        ppo_clip_value: float = 1.0,
        value_loss_coeff: float = 0.5,
        exploration_loss_coeff: float = 0.0,
        kl_loss_coeff: float = 0.0,
        max_grad_norm: float = 0.0,
        bf16_learning: bool = False,
    ):
        self.network = network
        self.optimizer = torch.optim.Adam(network.trainable_parameters(), lr=learning_rate, betas=adam_betas, eps=adam_eps, fused=adam_fused)
        self.learning_rate = learning_rate
        self.lr_schedule = lr_schedule
        # linear_decay: from learning_rate at SGD step 0 to 0 at total_sgd_steps (the count is in checkpoints, so a
        # resumed run continues the line where it stopped; Sample Factory's counts from 0 again in every session).
        self.linear_decay = LinearSchedule(learning_rate, 0.0, max(total_sgd_steps, 1))
        self.kl_threshold, self.lr_min, self.lr_max = lr_schedule_kl_threshold, lr_adaptive_min, lr_adaptive_max
        self.num_epochs, self.num_batches_per_epoch = num_epochs, num_batches_per_epoch
        self.shuffle_minibatches, self.recurrence = shuffle_minibatches, recurrence
        self.clip_ratio, self.clip_value = ppo_clip_ratio, ppo_clip_value
        self.value_loss_coeff, self.exploration_loss_coeff, self.kl_loss_coeff = value_loss_coeff, exploration_loss_coeff, kl_loss_coeff
        self.max_grad_norm = max_grad_norm
        self.bf16_learning = bf16_learning
        self.sgd_steps = 0
        self.statistics = trackers.LearnerStatistics()

    def minibatches(self, num_samples: int) -> list[torch.Tensor]:
        """One epoch's minibatches of sample indices: `num_batches_per_epoch` contiguous slices (trajectory-major),
        or with `shuffle_minibatches` a new random order of chunks of `recurrence` samples."""
        if self.shuffle_minibatches:
            chunk = self.recurrence if num_samples % self.recurrence == 0 else 1
            order = torch.randperm(num_samples // chunk)
            indices = (order[:, None] * chunk + torch.arange(chunk)).flatten()
        else:
            indices = torch.arange(num_samples)
        return [part for part in indices.tensor_split(self.num_batches_per_epoch) if len(part) > 0]

    def train(self, samples: dict[str, torch.Tensor]) -> None:
        """Steps 2-3 of the module docstring on this policy's samples (flat, trajectory-major)."""
        num_samples = samples['action'].shape[0]
        if num_samples == 0:
            return
        returns = samples['return']
        normalizer = self.network.return_normalizer
        if normalizer is not None:  # Sample Factory: statistics updated with the batch, then the targets normalised
            normalizer.update(returns)
        targets = normalizer.normalize(returns) if normalizer is not None else returns
        observations = samples['observation']
        with torch.no_grad():  # scaled and normalised once: the input statistics change only after the epochs
            samples = {**samples, 'target': targets, 'observation': self.network.encoder_inputs(observations)}
        device = samples['action'].device
        for _ in range(self.num_epochs):
            kls = [self.sgd_step({name: value[indices.to(device)] for name, value in samples.items()}) for indices in self.minibatches(num_samples)]
            if self.lr_schedule == 'kl_adaptive_epoch':
                self.learning_rate = kl_adaptive_learning_rate(self.learning_rate, float(np.mean(kls)), self.kl_threshold, self.lr_min, self.lr_max)
        if self.network.observation_normalizer is not None:  # after the epochs: the mend (see the module docstring)
            self.network.fold_observations(observations)
        self.statistics.record(
            explained_variance=float(policy_gradient.explained_variance(samples['value'], targets)),
            return_mean=returns.mean(), advantage_mean=samples['advantage'].mean(), samples=float(num_samples),
        )  # fmt: skip

    def forward(self, minibatch: dict[str, torch.Tensor]) -> CategoricalActorCriticOutput:
        """The network's outputs on a minibatch (flat, trajectory-major; its observations are the encoder's inputs,
        see `train`). A recurrent network unrolls each chunk of `recurrence` consecutive samples (truncated
        backpropagation through time) from the core state the actor stored at the chunk's first step."""
        if not self.network.is_recurrent:
            return self.network(minibatch['observation'], prepared=True)
        num_chunks = minibatch['action'].shape[0] // self.recurrence

        def time_major(tensor: torch.Tensor) -> torch.Tensor:  # [C * R, ...] -> [R, C, ...]
            return tensor.view(num_chunks, self.recurrence, *tensor.shape[1:]).transpose(0, 1)

        state = minibatch['core_state'].view(num_chunks, self.recurrence, -1)[:, 0]
        output = self.network.unroll(time_major(minibatch['observation']), state, time_major(minibatch['episode_start']), prepared=True)
        return CategoricalActorCriticOutput(output.logits.transpose(0, 1).flatten(0, 1), output.value.transpose(0, 1).flatten())

    def minibatch_loss(self, minibatch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of the module docstring on one minibatch, and its parts (detached)."""
        output = self.forward(minibatch)
        distribution = torch.distributions.Categorical(logits=output.logits, validate_args=False)
        log_prob, old_log_prob = distribution.log_prob(minibatch['action']), minibatch['log_prob']
        advantage = policy_gradient.normalize_advantages(minibatch['advantage'], 1e-7, sample_std_floor=True)
        policy_loss = policy_gradient.clipped_surrogate_loss(
            log_prob, old_log_prob, advantage, self.clip_ratio, ratio_bounds=RATIO_BOUNDS, reciprocal_clip=True
        ).mean()
        value_loss = policy_gradient.clipped_value_loss(output.value, minibatch['value'], minibatch['target'], self.clip_value, half=False).mean()
        entropy = distribution.entropy().mean()
        loss = policy_loss + self.value_loss_coeff * value_loss - self.exploration_loss_coeff * entropy
        if self.kl_loss_coeff > 0:
            loss = loss + self.kl_loss_coeff * policy_gradient.categorical_kl(output.logits, minibatch['logits']).mean()
        log_prob = log_prob.detach()
        parts = {
            'policy_loss': policy_loss.detach(),
            'value_loss': value_loss.detach(),
            'entropy': entropy.detach(),
            'ratio': torch.exp(log_prob - old_log_prob),
            'approx_kl': policy_gradient.approx_kl(log_prob, old_log_prob),
            'clip_fraction': policy_gradient.clip_fraction(log_prob, old_log_prob, self.clip_ratio, reciprocal_clip=True),
        }
        return loss, parts

    def sgd_step(self, minibatch: dict[str, torch.Tensor]) -> float:
        """One Adam step on `minibatch` at the scheduled learning rate; returns the KL estimate before the step."""
        if self.lr_schedule == 'linear_decay':
            self.learning_rate = self.linear_decay(self.sgd_steps)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate
        with bf16_torsos(self.bf16_learning):
            loss, parts = self.minibatch_loss(minibatch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        parameters = self.network.trainable_parameters()  # the gradient norm is logged, clipped or not
        grads = [parameter.grad for parameter in parameters if parameter.grad is not None]
        grad_norm = nn.utils.clip_grad_norm_(parameters, self.max_grad_norm) if self.max_grad_norm > 0 else nn.utils.get_total_norm(grads)
        self.optimizer.step()
        self.sgd_steps += 1
        kl, ratio = float(parts.pop('approx_kl')), parts.pop('ratio')
        self.statistics.record(**parts, approx_kl=kl, ratio_mean=ratio.mean(), grad_norm=grad_norm, learning_rate=self.learning_rate)
        if self.lr_schedule == 'kl_adaptive_minibatch':
            self.learning_rate = kl_adaptive_learning_rate(self.learning_rate, kl, self.kl_threshold, self.lr_min, self.lr_max)
        return kl

    def state_dict(self) -> dict[str, Any]:
        return {'optimizer': self.optimizer.state_dict(), 'learning_rate': self.learning_rate, 'sgd_steps': self.sgd_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state['optimizer'])
        self.learning_rate = float(state['learning_rate'])
        self.sgd_steps = int(state['sgd_steps'])


class AppoLearner:
    """What the actors + learner loop sees: `network` (all policies) and `update(buffers)`. Step 1 of the module
    docstring runs once over the whole batch; each policy's `PolicyTrainer` then trains on its own samples."""

    agent_name = 'APPO'

    def __init__(
        self, network: PolicySet, trainers: list[PolicyTrainer], *, gamma: float, gae_lambda: float = 0.95, reward_scale: float = 1.0,
        reward_clip: float = 1000.0, value_bootstrap: bool = False, with_vtrace: bool = False, vtrace_rho: float = 1.0, vtrace_c: float = 1.0,
        device: torch.device = torch.device('cpu'),
    ):  # fmt: skip
        self.network = network.to(device)
        self.trainers = trainers
        self.gamma, self.gae_lambda = gamma, gae_lambda
        self.reward_scale, self.reward_clip, self.value_bootstrap = reward_scale, reward_clip, value_bootstrap
        self.with_vtrace, self.vtrace_rho, self.vtrace_c = with_vtrace, vtrace_rho, vtrace_c
        self.device = device
        self.learner_steps = 0  # updates (one per batch of rollouts)

    @torch.no_grad()
    def bootstrap_values(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """V(x_T) [N] in value-head units, by the learner's current network of the policy that plays each environment
        next: Sample Factory's learner recomputes it from the stored last observation (a recurrent policy steps from
        the core state stored for it) rather than trust the actor's, made up to max_policy_lag SGD steps earlier."""
        if self.network.is_recurrent:
            output, _ = self.network.step(batch['last_observation'], batch['core_state'][-1])
        else:
            output = self.network(batch['last_observation'], batch['policy'][-1])
        return output.value

    def targets(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Advantages and returns [T, N] in reward units (step 1 of the module docstring)."""
        reward = (batch['reward'] * self.reward_scale).clamp(-self.reward_clip, self.reward_clip)
        policy = batch['policy']
        num_steps, num_envs = reward.shape
        if self.with_vtrace:  # Sample Factory: the current network's log-probs and values against mu's
            with torch.no_grad():
                if self.network.is_recurrent:  # unrolled over the whole rollout from the stored first state
                    observations = torch.cat([batch['observation'], batch['last_observation'][None]])
                    output = self.network.policies[0].unroll(observations, batch['core_state'][0], batch['episode_start'])
                    output = CategoricalActorCriticOutput(output.logits.flatten(0, 1), output.value.flatten())
                else:
                    observations = torch.cat([batch['observation'].flatten(0, 1), batch['last_observation']])
                    output = self.network(observations, policy.flatten())
                values = self.network.denormalize(output.value, policy.flatten()).view(num_steps + 1, num_envs)
                logits = output.logits[: num_steps * num_envs]
                log_prob = torch.distributions.Categorical(logits=logits, validate_args=False).log_prob(batch['action'].flatten())
            log_rhos = log_prob.view(num_steps, num_envs) - batch['log_prob']
        else:
            values = self.network.denormalize(torch.cat([batch['value'], self.bootstrap_values(batch)[None]]), policy)
        if self.value_bootstrap:  # Sample Factory: the time limit is no end of the world
            reward = reward + self.gamma * values[:-1] * batch['time_out'].float()
        if self.with_vtrace:
            result = vtrace.vtrace(
                log_rhos, batch['discount'], reward, values[:-1], values[-1],
                clip_rho_threshold=self.vtrace_rho or None, clip_pg_rho_threshold=self.vtrace_rho or None, clip_c_threshold=self.vtrace_c or None,
            )  # fmt: skip
            return result.pg_advantages, result.vs
        advantages = multistep.truncated_generalized_advantage_estimation(reward, batch['discount'], self.gae_lambda, values)
        return advantages, advantages + values[:-1]

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """Trains every policy on its samples of `buffers` (rollouts [T, N_actor, ...] in arrival order)."""
        batch = {name: torch.cat([buffer[name] for buffer in buffers], dim=0 if name == 'last_observation' else 1).to(self.device) for name in buffers[0]}
        advantages, returns = self.targets(batch)
        names = ['observation', 'action', 'log_prob', 'logits', 'value']  # 'value' as the actor stored it: value-head units
        samples = {name: _trajectory_major(batch[name]) for name in names}
        samples['advantage'], samples['return'] = _trajectory_major(advantages), _trajectory_major(returns)
        if self.network.is_recurrent:
            samples.update(core_state=_trajectory_major(batch['core_state'][:-1]), episode_start=_trajectory_major(batch['episode_start'][:-1]))
        policy = _trajectory_major(batch['policy'][:-1])
        for k, trainer in enumerate(self.trainers):
            trainer.train(samples if len(self.trainers) == 1 else {name: value[policy == k] for name, value in samples.items()})
        self.learner_steps += 1

    def learner_statistics(self) -> dict[str, float]:
        """Each policy's statistics; with several policies under policy_<k>/ (one TensorBoard stream each)."""
        prefixes = [''] if len(self.trainers) == 1 else [f'policy_{k}/' for k in range(len(self.trainers))]
        return {prefix + name: value for prefix, trainer in zip(prefixes, self.trainers) for name, value in trainer.statistics.means().items()}

    def agent_statistics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        """The network (every policy with its statistics), each policy's optimizer, learning rate and SGD steps."""
        return {'network': self.network.state_dict(), 'policies': [trainer.state_dict() for trainer in self.trainers], 'learner_steps': self.learner_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state['policies']) != len(self.trainers):
            raise ValueError(f'the checkpoint holds {len(state["policies"])} policies, this run has --num_policies={len(self.trainers)}')
        self.network.load_state_dict(state['network'])
        for trainer, trainer_state in zip(self.trainers, state['policies']):
            trainer.load_state_dict(trainer_state)
        self.learner_steps = int(state['learner_steps'])


def build_learner(network: PolicySet, env: VectorEnvironment, settings: AppoCoreSettings, total_updates: int, device: torch.device) -> AppoLearner:
    """An APPO learner from the run's `settings` (`AppoSettings.core_settings`); `total_updates`, the updates of the
    run's budget, plans linear_decay's SGD steps when --train_for_env_steps does not."""
    network = network.to(device)
    trainer_settings = dict(
        learning_rate=settings.learning_rate,
        lr_schedule=settings.lr_schedule,
        total_sgd_steps=sample_factory_config.linear_decay_sgd_steps(settings, total_updates),
        lr_schedule_kl_threshold=settings.lr_schedule_kl_threshold,
        lr_adaptive_min=settings.lr_adaptive_min,
        lr_adaptive_max=settings.lr_adaptive_max,
        adam_eps=settings.adam_eps,
        adam_betas=(settings.adam_beta1, settings.adam_beta2),
        adam_fused=settings.adam_fused,
        num_epochs=settings.num_epochs,
        num_batches_per_epoch=settings.num_batches_per_epoch,
        shuffle_minibatches=settings.shuffle_minibatches,
        recurrence=sample_factory_config.effective_recurrence(settings),
        ppo_clip_ratio=settings.ppo_clip_ratio,
        ppo_clip_value=settings.ppo_clip_value,
        value_loss_coeff=settings.value_loss_coeff,
        exploration_loss_coeff=settings.exploration_loss_coeff,
        kl_loss_coeff=settings.kl_loss_coeff,
        max_grad_norm=settings.max_grad_norm,
        bf16_learning=settings.bf16_learning,
    )
    return AppoLearner(
        network,
        [PolicyTrainer(policy, **trainer_settings) for policy in network.policies],
        gamma=settings.gamma,
        gae_lambda=settings.gae_lambda,
        reward_scale=settings.reward_scale,
        reward_clip=settings.reward_clip,
        value_bootstrap=settings.value_bootstrap,
        with_vtrace=settings.with_vtrace,
        vtrace_rho=settings.vtrace_rho,
        vtrace_c=settings.vtrace_c,
        device=device,
    )


def build_actor(network: PolicySet, env: VectorEnvironment, settings: AppoSettings, seed: int, device: torch.device) -> PolicySetActor:
    return PolicySetActor(network, env, settings.rollout, settings.gamma, settings.life_loss_is_terminal, seed, device)


def greedy_actor(network: PolicySet, device: torch.device = torch.device('cpu')) -> PolicyGreedyActor | SteppedRecurrentGreedyActor:
    """APPO's evaluation actor: the most likely action of policy `network.eval_policy`, recurrent or not."""
    return SteppedRecurrentGreedyActor(network, device) if network.is_recurrent else PolicyGreedyActor(network, device)


def train(run_settings: AppoSettings) -> None:
    """Entry point of APPO's run scripts: actors, learner and iterations on the core (asynchronous unless
    --async_rl=false) from the run's settings (--config_json's imported, the experiment's saved ones when it resumes:
    `flags.resolve_settings`), which the core reads under its own names (`AppoSettings.core_settings`)."""
    state_size = (run_settings.rnn_size * (2 if run_settings.rnn_type == 'lstm' else 1)) if run_settings.use_rnn else 0
    main_loop.train_actors_and_learner(
        run_settings, make_network, build_learner, build_actor, functools.partial(policy_set_rollout_spec, state_size=state_size),
        asynchronous=run_settings.async_rl, make_eval_actor=greedy_actor,
    )  # fmt: skip
