"""Discrete soft actor-critic: SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") for
discrete actions ("Soft Actor-Critic for Discrete Action Settings", Christodoulou 2019, Algorithm 1), with actor
processes and a replay on the learner side.

Actor processes step vectors of environments, sampling actions from the current categorical policy pi(.|s), and
each writes `unroll_length` steps per environment into shared memory (`rollouts.TransitionActor`). The learner adds
every actor's steps to ONE uniform replay in time order (one replay stream per actor environment, so n-step windows
and Atari frame stacks stay within an episode) and, once the replay holds `min_replay_size` transitions, takes one
gradient step per `learn_interval` env steps (the paper updates every 4 steps on Atari). With alpha = exp(log alpha)
held constant in the first two, each gradient step on a uniform minibatch of (s, a, r, gamma', s') is:

1. twin critics, the soft Bellman residual J_Q (section 2) with the discrete soft value (eq. 10):

       V(s')    = sum_a' pi(a'|s') [min(Qbar_1, Qbar_2)(s', a') - alpha log pi(a'|s')]     (target critics Qbar)
       J_Q(Q_i) = mean 0.5 (r + gamma' V(s') - Q_i(s, a))^2,   i = 1, 2                 (`soft_q_learning`)

   an expectation over pi, never a max over actions;
2. the policy, J_pi = mean sum_a pi(a|s) [alpha log pi(a|s) - min(Q_1, Q_2)(s, a)] (eq. 12, `soft_policy_loss`),
   with the critics' values at s from step 1 (before their update) held constant;
3. the temperature, J(alpha) = mean sum_a pi(a|s) [-log alpha (log pi(a|s) + H_target)] (eq. 11 in log alpha,
   `temperature_loss`), H_target = `target_entropy_ratio` * log|A| (0.98 in the paper); with --nolearn_temperature
   alpha stays at --initial_temperature, the fixed temperature of Haarnoja et al. (2018a) and of Tianshou's Atari
   discrete SAC example (alpha 0.05);
4. every `target_network_update_interval` gradient steps the target critics move towards the online ones:
   Qbar <- tau Q + (1 - tau) Qbar (`target_smoothing_coef`: tau = 1 is the paper's hard copy every 8,000 env steps
   on Atari, a small tau every step is Haarnoja et al.'s Polyak averaging).

With --n_step = n > 1 (the paper uses 1; run_classic uses 3) the replay gives r = the discounted sum of n rewards,
gamma' = gamma^n (1 - terminal) and s' the n-th next state: the entropy bonuses alpha H of the n - 1 steps in between
are left out of the target, a small bias while alpha is small, for much faster credit assignment.

Each of the three has its own Adam optimizer. Only the policy is sent to the actors (`network`); the greedy
evaluation plays its most likely action.

The paper's policy and critics are three networks with three torsos. With --shared_torso (the Pong preset, as in
Tianshou's Atari discrete SAC example) one torso carries the policy's head and both critics' heads: the critics' loss
trains it, and the policy reads its features without a gradient (the encoder of SAC-AE, Yarats et al. 2019, and
DrQ, Kostrikov et al. 2020), so a gradient step runs a torso 4 times forwards and once backwards instead of 6 and 3
times.
"""

import math
from typing import Any

import torch
from torch import nn

from deep_rl_zoo import main_loop, trackers
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso
from deep_rl_zoo.networks.policy import CategoricalPolicy, discrete_inputs, policy_for
from deep_rl_zoo.networks.value import mlp_q_network, nature_cnn_q_network
from deep_rl_zoo.replay_agent import batch_tensors, build_replay, frozen_copy
from deep_rl_zoo.rollouts import TransitionActor, transition_spec
from deep_rl_zoo.sac.settings import SacSettings
from deep_rl_zoo.soft_actor_critic import discrete_target_entropy, soft_policy_loss, soft_q_learning, temperature_loss

__all__ = [
    'FeaturesWithoutGradient', 'SacLearner', 'SharedTorsoCritics', 'TwinCritics', 'build_actor', 'build_learner', 'make_critics',
    'make_network', 'transition_spec', 'train',
]  # fmt: skip


class TwinCritics(nn.Module):
    """(Q_1(s, .), Q_2(s, .)) from two critics with torsos of their own (the paper's)."""

    def __init__(self, critic_1: nn.Module, critic_2: nn.Module):
        super().__init__()
        self.critic_1 = critic_1
        self.critic_2 = critic_2

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.critic_1(observation), self.critic_2(observation)


class SharedTorsoCritics(nn.Module):
    """(Q_1(s, .), Q_2(s, .)) as two linear heads on one torso, run once per batch (--shared_torso)."""

    def __init__(self, torso: nn.Module, num_actions: int):
        super().__init__()
        self.torso = torso
        self.head_1 = nn.Linear(torso.output_size, num_actions)
        self.head_2 = nn.Linear(torso.output_size, num_actions)

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.torso(observation)
        return self.head_1(features), self.head_2(features)


class FeaturesWithoutGradient(nn.Module):
    """`torso`'s features computed without a gradient: the policy's view of the critics' torso (--shared_torso),
    so the policy's loss trains its head only (SAC-AE, Yarats et al. 2019)."""

    def __init__(self, torso: nn.Module):
        super().__init__()
        self.torso = torso
        self.output_size = torso.output_size

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return self.torso(observation)


class SacLearner:
    """Replay and discrete-SAC gradient steps on the learner side (see the module docstring).

    `policy` is what the actors act with; `critics(s)` gives (Q_1(s, .), Q_2(s, .)) and may share parameters with
    it (--shared_torso): the policy's optimizer takes only the parameters the critics do not hold. `update(buffers)`
    takes one buffer of `transition_spec` steps from each actor. `learner_steps` counts gradient steps. The
    checkpoint state holds every network, target, optimizer, log alpha and counter, but NOT the replay: a resumed
    run refills it to `min_replay_size` before it learns again.
    """

    agent_name = 'SAC'

    def __init__(
        self,
        policy: nn.Module,
        critics: nn.Module,
        replay: replay_lib.UniformReplay,
        num_actions: int,
        learning_rate: float,
        batch_size: int,
        min_replay_size: int,
        learn_interval: int,
        target_network_update_interval: int,
        target_smoothing_coef: float,
        target_entropy_ratio: float,
        initial_temperature: float,
        learn_temperature: bool = True,
        max_grad_norm: float = 0.0,
        adam_eps: float = 1e-8,
        device: torch.device = torch.device('cpu'),
        optimizer: type[torch.optim.Optimizer] = torch.optim.Adam,
    ):
        if min_replay_size < batch_size:
            raise ValueError(f'--min_replay_size ({min_replay_size}) must be at least --batch_size ({batch_size})')
        if not initial_temperature > 0:
            raise ValueError(f'--initial_temperature must be > 0 (it is learned as log alpha), got {initial_temperature}')
        self.network = policy.to(device)  # what actors act with: the only parameters broadcast to them
        self.critics = critics.to(device)
        self.target_critics = frozen_copy(self.critics)
        critic_parameters = {id(parameter) for parameter in self.critics.parameters()}
        self.policy_parameters = [parameter for parameter in self.network.parameters() if id(parameter) not in critic_parameters]
        self.log_alpha = torch.tensor(math.log(initial_temperature), device=device, requires_grad=True)
        self.learn_temperature = learn_temperature
        options = dict(lr=learning_rate, eps=adam_eps) if optimizer is torch.optim.Adam else dict(lr=learning_rate)
        self.policy_optimizer = optimizer(self.policy_parameters, **options)
        self.critic_optimizer = optimizer(self.critics.parameters(), **options)
        self.temperature_optimizer = optimizer([self.log_alpha], **options)
        self.replay = replay
        self.target_entropy = discrete_target_entropy(num_actions, target_entropy_ratio)
        self.batch_size = batch_size
        self.min_replay_size = min_replay_size
        self.learn_interval = learn_interval
        self.target_network_update_interval = target_network_update_interval
        self.target_smoothing_coef = target_smoothing_coef
        self.max_grad_norm = max_grad_norm
        self.device = device
        self.env_steps = 0  # steps added to replay
        self.learning_env_steps = 0  # steps added while the replay held min_replay_size: they set the gradient steps
        self.learner_steps = 0  # gradient steps
        self.statistics = trackers.LearnerStatistics()

    @property
    def alpha(self) -> torch.Tensor:
        return self.log_alpha.detach().exp()

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """Adds every actor's steps to replay in time order, then takes the gradient steps they are owed:
        one per `learn_interval` env steps added since the replay first held `min_replay_size` transitions."""
        batch = {name: torch.cat([buffer[name] for buffer in buffers], dim=1).numpy() for name in buffers[0]}
        num_steps, num_streams = batch['reward'].shape
        for t in range(num_steps):
            self.replay.add(
                batch['observation'][t],
                batch['action'][t],
                batch['reward'][t],
                batch['terminal'][t],
                batch['episode_end'][t],
                batch['final_observation'][t],
            )
            self.env_steps += num_streams
            if self.replay.size >= self.min_replay_size:
                self.learning_env_steps += num_streams
        while self.learner_steps < self.learning_env_steps // self.learn_interval:
            self.learn()

    def learn(self) -> None:
        """One gradient step of critics, policy and temperature on a replayed minibatch; target critics on schedule."""
        batch = batch_tensors(self.replay.sample(self.batch_size), self.device)
        alpha = self.alpha

        # 1. Critics: soft Bellman residual against the target critics' soft value at s_t.
        q1_tm1, q2_tm1 = self.critics(batch.s_tm1)
        with torch.no_grad():
            logits_t = self.network(batch.s_t).logits
            q1_t, q2_t = self.target_critics(batch.s_t)
        q = soft_q_learning(q1_tm1, q2_tm1, batch.a_tm1, batch.r_t, batch.discount_t, logits_t, q1_t, q2_t, alpha)
        q_loss = q.loss.mean()
        critic_grad_norm = self._step(self.critic_optimizer, q_loss, list(self.critics.parameters()))

        # 2. Policy: KL projection onto exp(min Q / alpha), the critics' values held constant.
        logits_tm1 = self.network(batch.s_tm1).logits
        policy = soft_policy_loss(logits_tm1, q1_tm1.detach(), q2_tm1.detach(), alpha)
        policy_loss = policy.loss.mean()
        policy_grad_norm = self._step(self.policy_optimizer, policy_loss, self.policy_parameters)

        # 3. Temperature: log alpha rises while the policy's entropy is below the target, falls while above.
        temperature = temperature_loss(logits_tm1, self.log_alpha, self.target_entropy)
        if self.learn_temperature:
            self._step(self.temperature_optimizer, temperature.loss.mean(), None)

        # 4. Target critics.
        self.learner_steps += 1
        if self.learner_steps % self.target_network_update_interval == 0:
            self.update_target_critics()
        self.statistics.record(
            q_loss=q_loss.detach(),
            policy_loss=policy_loss.detach(),
            temperature_loss=temperature.loss.mean().detach(),
            alpha=alpha,
            entropy=policy.extra.entropy.mean(),
            mean_q=torch.minimum(q1_tm1, q2_tm1).detach().mean(),
            critic_grad_norm=critic_grad_norm,
            policy_grad_norm=policy_grad_norm,
        )

    def _step(self, optimizer: torch.optim.Optimizer, loss: torch.Tensor, parameters: list[torch.Tensor] | None) -> torch.Tensor:
        """Backward, clip the global gradient norm of `parameters` (when --max_grad_norm > 0), step; returns the norm."""
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if parameters is None:
            optimizer.step()
            return torch.zeros(())
        grad_norm = nn.utils.clip_grad_norm_(parameters, self.max_grad_norm if self.max_grad_norm > 0 else float('inf'))
        optimizer.step()
        return grad_norm.detach()

    @torch.no_grad()
    def update_target_critics(self) -> None:
        """Qbar <- tau Q + (1 - tau) Qbar for both critics (tau = 1: a copy)."""
        torch._foreach_lerp_(list(self.target_critics.parameters()), list(self.critics.parameters()), self.target_smoothing_coef)

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def agent_statistics(self) -> dict[str, float]:
        return {'replay_size': float(self.replay.size), 'alpha': float(self.alpha)}

    def state_dict(self) -> dict[str, Any]:
        """Networks, targets, optimizers, log alpha and counters; the replay is not saved (see the class docstring)."""
        return {
            'network': self.network.state_dict(),
            'critics': self.critics.state_dict(),
            'target_critics': self.target_critics.state_dict(),
            'policy_optimizer': self.policy_optimizer.state_dict(),
            'critic_optimizer': self.critic_optimizer.state_dict(),
            'temperature_optimizer': self.temperature_optimizer.state_dict(),
            'log_alpha': self.log_alpha.detach().clone(),
            'env_steps': self.env_steps,
            'learning_env_steps': self.learning_env_steps,
            'learner_steps': self.learner_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state['network'])
        self.critics.load_state_dict(state['critics'])
        self.target_critics.load_state_dict(state['target_critics'])
        with torch.no_grad():
            self.log_alpha.copy_(state['log_alpha'])
        for name in ('policy_optimizer', 'critic_optimizer', 'temperature_optimizer'):
            getattr(self, name).load_state_dict(state[name])
        self.env_steps = int(state['env_steps'])
        self.learning_env_steps = int(state['learning_env_steps'])
        self.learner_steps = int(state['learner_steps'])


def make_network(env: VectorEnvironment, settings: SacSettings) -> CategoricalPolicy:
    """The policy: a Nature CNN and logits for Atari frames, a tanh MLP for vector observations; the head starts
    near uniform (small-gain initialisation). With --shared_torso its torso is the critics' (a Nature CNN, or a ReLU
    MLP of 128 x 128), read without a gradient."""
    if not settings.shared_torso:
        return policy_for(env, 'discrete SAC')
    observation_shape, num_actions = discrete_inputs(env, 'discrete SAC')
    torso = NatureCnnTorso(observation_shape[0]) if len(observation_shape) == 3 else MlpTorso(observation_shape[0], (128, 128))
    return CategoricalPolicy(FeaturesWithoutGradient(torso), num_actions)


def make_critics(network: CategoricalPolicy, env: VectorEnvironment, settings: SacSettings) -> nn.Module:
    """The twin critics: the Nature DQN network for Atari frames (the paper's critics) or a ReLU MLP otherwise, twice;
    with --shared_torso two heads on the torso under the policy `network`."""
    observation_shape, num_actions = env.single_observation_space.shape, int(env.single_action_space.n)
    if settings.shared_torso:
        return SharedTorsoCritics(network.torso.torso, num_actions)
    make_critic = nature_cnn_q_network if len(observation_shape) == 3 else lambda num_actions, size: mlp_q_network(size, num_actions)
    return TwinCritics(make_critic(num_actions, observation_shape[0]), make_critic(num_actions, observation_shape[0]))


def build_learner(network: nn.Module, env: VectorEnvironment, settings: SacSettings, total_updates: int, device: torch.device) -> SacLearner:
    """A SAC learner from the run's `settings`: critics and replay are shaped by `env`'s spaces; the replay has one
    stream per actor environment."""
    replay = build_replay(env, settings, num_streams=settings.num_actors * settings.num_envs_per_actor)
    return SacLearner(
        network,
        make_critics(network, env, settings),
        replay,
        int(env.single_action_space.n),
        learning_rate=settings.learning_rate,
        batch_size=settings.batch_size,
        min_replay_size=settings.min_replay_size,
        learn_interval=settings.learn_interval,
        target_network_update_interval=settings.target_network_update_interval,
        target_smoothing_coef=settings.target_smoothing_coef,
        target_entropy_ratio=settings.target_entropy_ratio,
        initial_temperature=settings.initial_temperature,
        learn_temperature=settings.learn_temperature,
        max_grad_norm=settings.max_grad_norm,
        adam_eps=settings.adam_eps,
        device=device,
    )


def build_actor(network: nn.Module, env: VectorEnvironment, settings: SacSettings, seed: int, device: torch.device) -> TransitionActor:
    """An actor sampling the current policy and writing plain steps for the learner's replay."""
    return TransitionActor(network, env, settings.unroll_length, settings.life_loss_is_terminal, seed, device)


def train(run_settings: SacSettings) -> None:
    """Entry point of SAC's run scripts: actors, learner (with its replay) and iterations from the run's settings."""
    main_loop.train_actors_and_learner(run_settings, make_network, build_learner, build_actor, transition_spec)
