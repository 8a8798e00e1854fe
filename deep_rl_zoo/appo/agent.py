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

   with A normalised per minibatch, (A - mean) / max(std, 1e-7), Adam, the global gradient norm clipped when
   `max_grad_norm` > 0, and the learning rate constant, decayed linearly per SGD step (`linear_decay_sgd_steps`),
   or adapted to the KL;
3. only then folds the batch's observations into the running input statistics (`normalize_input`), so the ratio
   starts at exactly 1: the old log-probs were made with the statistics the first minibatch sees.

Sample Factory's names are the flags (`flags.define_appo`); `run_values` translates them into the core's.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any, Optional

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import experiment, main_loop, multistep, policy_gradient, trackers, vtrace
from deep_rl_zoo.appo import sample_factory_config
from deep_rl_zoo.greedy_actors import PolicyGreedyActor, as_tensor
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput
from deep_rl_zoo.normalizer import ObservationNormalizer, ReturnNormalizer
from deep_rl_zoo.rollouts import SamplingActor, bootstrapped_rollout_spec

RATIO_BOUNDS = (0.05, 20.0)  # Sample Factory clamps the importance ratio to this range before the PPO clip
POLICY_REDRAW_EPISODES = 10  # Sample Factory: an environment redraws its policy every 10 episodes
KL_ADAPTIVE_FACTOR = 1.5


# --- the loss pieces (pure functions) ---------------------------------------------------------------------------


def ppo_policy_loss(ratio: torch.Tensor, advantage: torch.Tensor, clip_ratio: float) -> torch.Tensor:
    """Sample Factory's clipped surrogate: the ratio clamped to [0.05, 20], then its "unbiased" clip to
    [1/(1+eps), 1+eps]; loss = -mean(min(r A, clip(r) A))."""
    ratio = ratio.clamp(*RATIO_BOUNDS)
    high = 1.0 + clip_ratio
    clipped = ratio.clamp(1.0 / high, high)
    advantage = advantage.detach()
    return -torch.minimum(ratio * advantage, clipped * advantage).mean()


def ppo_value_loss(values: torch.Tensor, old_values: torch.Tensor, targets: torch.Tensor, clip_value: float) -> torch.Tensor:
    """Sample Factory's value loss, without a 0.5 factor: mean(max((V - R)^2, (V_clip - R)^2)) with
    V_clip = V_old + clamp(V - V_old, -clip_value, clip_value), an absolute bound in value-head units."""
    old_values, targets = old_values.detach(), targets.detach()
    clipped = old_values + (values - old_values).clamp(-clip_value, clip_value)
    return torch.maximum((values - targets) ** 2, (clipped - targets) ** 2).mean()


def normalize_advantages(advantages: torch.Tensor) -> torch.Tensor:
    """Sample Factory's per-minibatch normalisation: (A - mean) / max(std, 1e-7), std Bessel-corrected."""
    std, mean = torch.std_mean(advantages)
    return (advantages - mean) / std.clamp_min(1e-7)


def kl_adaptive_learning_rate(learning_rate: float, kl: float, threshold: float, minimum: float, maximum: float) -> float:
    """Sample Factory's kl_adaptive rule: lr / 1.5 (not below `minimum`) when kl > 2 x threshold, lr x 1.5 (not
    above `maximum`) when kl < threshold / 2, else unchanged."""
    if kl > 2.0 * threshold:
        return max(learning_rate / KL_ADAPTIVE_FACTOR, minimum)
    if kl < 0.5 * threshold:
        return min(learning_rate * KL_ADAPTIVE_FACTOR, maximum)
    return learning_rate


def linear_decay(learning_rate: float, sgd_step: int, total_sgd_steps: int) -> float:
    """linear_decay: the learning rate of SGD step `sgd_step` (0-based), from `learning_rate` to 0 at SGD step
    `total_sgd_steps` (`linear_decay_sgd_steps` plans it), and 0 after it. The step is the policy's SGD step count,
    which checkpoints keep: a resumed run continues the line exactly where it stopped (Sample Factory's scheduler
    counts from 0 again in every session)."""
    return learning_rate * max(1.0 - sgd_step / max(total_sgd_steps, 1), 0.0)


def categorical_kl(logits: torch.Tensor, old_logits: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_old) per sample, summed over actions (Sample Factory's kl_loss)."""
    log_pi, log_old = torch.log_softmax(logits, dim=-1), torch.log_softmax(old_logits.detach(), dim=-1)
    return (log_pi.exp() * (log_pi - log_old)).sum(dim=-1)


# --- the network ---------------------------------------------------------------------------------------------------

_ACTIVATIONS = {'elu': nn.ELU, 'relu': nn.ReLU, 'tanh': nn.Tanh}


def _mlp(input_size: int, layers: list[int], activation: type[nn.Module]) -> tuple[nn.Module, int]:
    modules: list[nn.Module] = []
    for size in layers:
        modules += [nn.Linear(input_size, size), activation()]
        input_size = size
    return nn.Sequential(*modules), input_size


def _encoder(observation_shape: tuple[int, ...], mlp_layers: list[int], conv_mlp_layers: list[int], activation: type[nn.Module]) -> tuple[nn.Module, int]:
    """Sample Factory's encoders: convnet_atari (32x8x8/4, 64x4x4/2, 64x3x3/1) then `conv_mlp_layers` for frame
    stacks; `mlp_layers` for vectors."""
    if len(observation_shape) == 3:
        channels = observation_shape[0]
        convs = nn.Sequential(
            nn.Conv2d(channels, 32, 8, stride=4), activation(),
            nn.Conv2d(32, 64, 4, stride=2), activation(),
            nn.Conv2d(64, 64, 3, stride=1), activation(),
            nn.Flatten(),
        )  # fmt: skip
        with torch.no_grad():
            conv_size = convs(torch.zeros(1, *observation_shape)).shape[1]
        head, size = _mlp(conv_size, conv_mlp_layers, activation)
        return nn.Sequential(convs, head), size
    return _mlp(int(np.prod(observation_shape)), mlp_layers, activation)


class AppoNetwork(nn.Module):
    """One policy of APPO: observations scaled ((x - obs_subtract_mean) / obs_scale) and, with `normalize_input`,
    normalised per element by running statistics (Sample Factory: clip 5, epsilon 1e-5); an encoder shared by the
    policy and value heads (or one each); with `rnn_type` ('gru' or 'lstm', Sample Factory's use_rnn) a recurrent
    core of `rnn_size` units between the shared encoder and the heads; the value head predicts returns normalised
    by `return_normalizer` when there is one. The statistics are non-trainable parameters, so they reach the actors
    with the weights and are saved in checkpoints. Every linear and convolutional layer is initialised as
    `initialization` says (Sample Factory: heads included; the recurrent cell keeps torch's own initialisation).

    The core's state is one tensor [B, state_size] per environment (an LSTM's h and c side by side): `step` advances
    it by one observation, `unroll` over [T, B] observations, zeroing it before each step that starts an episode.
    """

    def __init__(
        self,
        observation_shape: tuple[int, ...],
        num_actions: int,
        mlp_layers: list[int],
        conv_mlp_layers: list[int],
        nonlinearity: str = 'elu',
        share_weights: bool = True,
        normalize_input: bool = False,
        normalize_returns: bool = False,
        obs_subtract_mean: float = 0.0,
        obs_scale: float = 1.0,
        initialization: str = 'orthogonal',
        init_gain: float = 1.0,
        rnn_type: Optional[str] = None,
        rnn_size: int = 512,
    ):
        super().__init__()
        activation = _ACTIVATIONS[nonlinearity]
        self.observation_shape = tuple(observation_shape)
        self.obs_subtract_mean, self.obs_scale = obs_subtract_mean, obs_scale
        size = int(np.prod(observation_shape))
        self.observation_normalizer = ObservationNormalizer(size, clip=5.0, epsilon=1e-5) if normalize_input else None
        self.return_normalizer = ReturnNormalizer() if normalize_returns else None
        self.encoder, features = _encoder(observation_shape, mlp_layers, conv_mlp_layers, activation)
        self.value_encoder = None if share_weights else _encoder(observation_shape, mlp_layers, conv_mlp_layers, activation)[0]
        self.core: Optional[nn.Module] = None
        self.state_size = 0
        if rnn_type is not None:
            if not share_weights:
                raise ValueError('a recurrent core needs shared weights (--actor_critic_share_weights=true)')
            if rnn_type not in ('gru', 'lstm'):
                raise ValueError(f"rnn_type must be 'gru' or 'lstm', got {rnn_type!r}")
            self.core = (nn.GRUCell if rnn_type == 'gru' else nn.LSTMCell)(features, rnn_size)
            self.rnn_size = rnn_size
            self.state_size = rnn_size if rnn_type == 'gru' else 2 * rnn_size
            features = rnn_size
        self.policy_head = nn.Linear(features, num_actions)
        self.value_head = nn.Linear(features, 1)
        for layer in self.modules():
            if isinstance(layer, (nn.Linear, nn.Conv2d)) and initialization != 'torch_default':
                if initialization == 'orthogonal':
                    nn.init.orthogonal_(layer.weight, init_gain)
                else:
                    nn.init.xavier_uniform_(layer.weight, init_gain)
                nn.init.zeros_(layer.bias)

    def scale(self, observation: torch.Tensor) -> torch.Tensor:
        """The scaled observations, what the input statistics are kept of."""
        observation = observation.float()
        if self.obs_subtract_mean:
            observation = observation - self.obs_subtract_mean
        return observation / self.obs_scale if self.obs_scale != 1.0 else observation

    @property
    def is_recurrent(self) -> bool:
        return self.core is not None

    def initial_state(self, batch_size: int) -> torch.Tensor:
        """The zero core state of `batch_size` environments, [batch_size, state_size]."""
        return torch.zeros(batch_size, self.state_size, device=self.value_head.weight.device)

    def _encode(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's features for the policy and for the value head, [B, features] each."""
        if self.observation_normalizer is not None:
            x = self._scale_and_normalize(observation)
        else:
            x = self.scale(observation)
        if x.dim() == 4 and x.shape[0] >= CHANNELS_LAST_MIN_BATCH:
            x = x.contiguous(memory_format=torch.channels_last)
        features = self.encoder(x)
        return features, (features if self.value_encoder is None else self.value_encoder(x))

    def _core_step(self, features: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One step of the recurrent core: the new state [B, state_size]; its first rnn_size columns are the output."""
        if isinstance(self.core, nn.LSTMCell):
            h, c = self.core(features, state.split(self.rnn_size, dim=-1))
            return torch.cat([h, c], dim=-1)
        return self.core(features, state)

    def forward(self, observation: torch.Tensor) -> CategoricalActorCriticOutput:
        """The feed-forward network on a batch of observations [B, ...] (a recurrent one: see `step`)."""
        if self.is_recurrent:
            raise TypeError('this APPO network is recurrent: call step(observation, state) or unroll(...)')
        features, value_features = self._encode(observation)
        return CategoricalActorCriticOutput(self.policy_head(features), self.value_head(value_features).squeeze(-1))

    def step(self, observation: torch.Tensor, state: torch.Tensor) -> tuple[CategoricalActorCriticOutput, torch.Tensor]:
        """One acting step of a recurrent network: outputs for observations [B, ...] from core states [B, S] (already
        zeroed where an episode starts), and the next states."""
        features, _ = self._encode(observation)
        state = self._core_step(features, state)
        core_output = state[:, : self.rnn_size]
        return CategoricalActorCriticOutput(self.policy_head(core_output), self.value_head(core_output).squeeze(-1)), state

    def unroll(self, observation: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor) -> CategoricalActorCriticOutput:
        """Outputs [T, B] of a recurrent network over observations [T, B, ...] from the core states [B, S] before the
        first step; the state is zeroed before every later step t where `episode_start[t]` (the first step's state is
        taken as given: the actor zeroed it already). The encoder runs once over all T x B observations."""
        num_steps, batch_size = observation.shape[:2]
        features, _ = self._encode(observation.flatten(0, 1))
        features = features.view(num_steps, batch_size, -1)
        keep = (~episode_start).to(features.dtype).unsqueeze(-1)
        outputs = []
        for t in range(num_steps):
            if t > 0:
                state = state * keep[t]
            state = self._core_step(features[t], state)
            outputs.append(state[:, : self.rnn_size])
        core_output = torch.stack(outputs)
        return CategoricalActorCriticOutput(self.policy_head(core_output), self.value_head(core_output).squeeze(-1))

    def _scale_and_normalize(self, observation: torch.Tensor) -> torch.Tensor:
        """normalizer(scale(observation)) in one multiply-add and a clamp: with s = obs_scale, m = obs_subtract_mean
        and the statistics' mean mu and std sigma, ((x - m) / s - mu) / sigma = x * w + b for w = 1 / (s sigma) and
        b = -(m / s + mu) / sigma (Atari batches hold millions of pixels: each pass over them counts)."""
        normalizer = self.observation_normalizer
        std = torch.sqrt(normalizer.var + normalizer.epsilon).view(observation.shape[1:])
        weight = 1.0 / (self.obs_scale * std)
        bias = -(self.obs_subtract_mean / self.obs_scale + normalizer.mean.view(observation.shape[1:])) / std
        return torch.addcmul(bias, observation.float(), weight).clamp_(-normalizer.clip, normalizer.clip)

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [parameter for parameter in self.parameters() if parameter.requires_grad]


class PolicySet(nn.Module):
    """The `num_policies` networks as one module, so one parameter broadcast carries them all. Called with
    observations only it is policy `eval_policy` (what greedy evaluation plays); with a policy index per
    observation, each policy acts on its own observations (one forward pass per policy)."""

    def __init__(self, policies: list[AppoNetwork]):
        super().__init__()
        self.policies = nn.ModuleList(policies)
        self.eval_policy = 0

    def __len__(self) -> int:
        return len(self.policies)

    @property
    def is_recurrent(self) -> bool:
        return self.policies[0].is_recurrent

    def step(self, observation: torch.Tensor, state: torch.Tensor) -> tuple[CategoricalActorCriticOutput, torch.Tensor]:
        """One step of the recurrent policy `eval_policy` (a recurrent run has one policy: see `run_values`)."""
        return self.policies[self.eval_policy].step(observation, state)

    def forward(self, observation: torch.Tensor, policy: Optional[torch.Tensor] = None) -> CategoricalActorCriticOutput:
        if policy is None:
            return self.policies[self.eval_policy](observation)
        if len(self.policies) == 1:
            return self.policies[0](observation)
        logits = value = None
        for k, network in enumerate(self.policies):
            mask = policy == k
            if not mask.any():
                continue
            output = network(observation[mask])
            if logits is None:
                logits = output.logits.new_empty((observation.shape[0], output.logits.shape[1]))
                value = output.value.new_empty(observation.shape[0])
            logits[mask], value[mask] = output.logits, output.value
        return CategoricalActorCriticOutput(logits, value)

    def denormalize(self, values: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
        """Value-head outputs in reward units, each with the return statistics of the policy that made it."""
        result = values.clone()
        for k, network in enumerate(self.policies):
            if network.return_normalizer is not None:
                mask = policy == k
                result[mask] = network.return_normalizer.denormalize(values[mask])
        return result


def _int_list(name: str, value: Any) -> list[int]:
    try:
        layers = [int(item) for item in value]
    except (TypeError, ValueError):
        raise ValueError(f'--{name} must be a list of positive integers, got {value!r}') from None
    if not layers or min(layers) < 1:
        raise ValueError(f'--{name} must be a list of positive integers, got {value!r}')
    return layers


def make_network(env: VectorEnvironment, values: dict[str, Any]) -> PolicySet:
    """`num_policies` APPO networks for `env` from the run's (Sample Factory) flag values."""
    if env.single_action_space.shape:
        raise ValueError('APPO here takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    policies = [
        AppoNetwork(
            env.single_observation_space.shape,
            int(env.single_action_space.n),
            _int_list('encoder_mlp_layers', values['encoder_mlp_layers']),
            _int_list('encoder_conv_mlp_layers', values['encoder_conv_mlp_layers']),
            nonlinearity=values['nonlinearity'],
            share_weights=values['actor_critic_share_weights'],
            normalize_input=values['normalize_input'],
            normalize_returns=values['normalize_returns'],
            obs_subtract_mean=values['obs_subtract_mean'],
            obs_scale=values['obs_scale'],
            initialization=values['policy_initialization'],
            init_gain=values['policy_init_gain'],
            rnn_type=values['rnn_type'] if values['use_rnn'] else None,
            rnn_size=values['rnn_size'],
        )
        for _ in range(values['num_policies'])
    ]
    return PolicySet(policies)


# --- acting ----------------------------------------------------------------------------------------------------------


def rollout_spec(env: VectorEnvironment, num_envs: int, unroll_length: int, state_size: int = 0) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """`rollouts.bootstrapped_rollout_spec` with the behaviour values of the T steps only ([T, N]: the learner computes
    the bootstrap value V(x_T) itself, see `AppoLearner.bootstrap_values`), plus the behaviour logits (kl_loss), the
    time-limit truncations (value_bootstrap) and which policy acted ([T + 1, N]: the last row is the policy of the
    bootstrap value); with a recurrent core (`state_size` > 0) also the core state before each step and whether the
    step starts an episode ([T + 1, N]: the last row is the bootstrap step's)."""
    spec = bootstrapped_rollout_spec(env, num_envs, unroll_length)
    spec = {
        **spec,
        'value': ((unroll_length, num_envs), torch.float32),
        'logits': ((unroll_length, num_envs, int(env.single_action_space.n)), torch.float32),
        'time_out': ((unroll_length, num_envs), torch.bool),
        'policy': ((unroll_length + 1, num_envs), torch.int64),
    }
    if state_size:
        spec['core_state'] = ((unroll_length + 1, num_envs, state_size), torch.float32)
        spec['episode_start'] = ((unroll_length + 1, num_envs), torch.bool)
    return spec


class AppoActor(SamplingActor):
    """Samples each environment's policy for `rollout` steps and fills one rollout per `collect`. Rewards are
    stored as the environment gives them (scaled and clipped by the learner); discounts are gamma * (1 - terminal).
    A recurrent policy keeps one core state per environment, zeroed when an episode starts, and stores the state
    each step starts from (the learner unrolls its chunks from them)."""

    def __init__(
        self,
        network: PolicySet,
        env: VectorEnvironment,
        unroll_length: int,
        discount: float,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        super().__init__(network, env, unroll_length, terminal_on_life_loss, seed, device)
        self.discount = discount
        self._random = np.random.default_rng(seed)
        self.policy = self._random.integers(len(network), size=env.num_envs)
        self._episodes_played = np.zeros(env.num_envs, dtype=np.int64)
        if network.is_recurrent:
            self._core_state = network.policies[0].initial_state(env.num_envs).to(device)
            self._episode_start = torch.ones(env.num_envs, dtype=torch.bool, device=device)

    def _after_episodes(self, ended: np.ndarray) -> None:
        """Every 10th episode of an environment ends with a new random policy for it (Sample Factory)."""
        self._episodes_played += ended
        redraw = ended & (self._episodes_played % POLICY_REDRAW_EPISODES == 0)
        if redraw.any() and len(self.network) > 1:
            self.policy[redraw] = self._random.integers(len(self.network), size=int(redraw.sum()))

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        recurrent = self.network.is_recurrent
        for t in range(self.unroll_length):
            observation = as_tensor(self._observation, self.device)
            policy = torch.from_numpy(self.policy.copy())
            if recurrent:
                state = self._starting_state(buffer, t)
                output, self._core_state = self.network.step(observation, state)
            else:
                output = self.network(observation, policy.to(self.device))
            distribution = torch.distributions.Categorical(logits=output.logits, validate_args=False)
            action = distribution.sample()
            step = self.env.step(action.cpu().numpy())
            terminal = step.terminated | step.truncated | (step.life_loss & self.terminal_on_life_loss)
            buffer['observation'][t] = observation.cpu()
            buffer['action'][t] = action.cpu()
            buffer['log_prob'][t] = distribution.log_prob(action).cpu()
            buffer['logits'][t] = output.logits.cpu()
            buffer['value'][t] = output.value.cpu()
            buffer['policy'][t] = policy
            buffer['reward'][t] = torch.from_numpy(step.reward.astype(np.float32))
            buffer['discount'][t] = torch.from_numpy(self.discount * (1.0 - terminal.astype(np.float32)))
            buffer['time_out'][t] = torch.from_numpy(step.truncated & ~step.terminated)
            ended = step.terminated | step.truncated
            finished += self._episodes.step(step.raw_reward, ended)
            self._after_episodes(ended)
            self._observation = step.observation
            if recurrent:
                self._episode_start = torch.from_numpy(ended).to(self.device)
        if recurrent:  # the bootstrap step's state; the next rollout's first step starts from it too
            self._starting_state(buffer, self.unroll_length)
        buffer['policy'][self.unroll_length] = torch.from_numpy(self.policy.copy())
        buffer['last_observation'].copy_(as_tensor(self._observation, self.device))
        return finished

    def _starting_state(self, buffer: dict[str, torch.Tensor], t: int) -> torch.Tensor:
        """The core state step t starts from (zero where an episode starts), stored in the rollout with the flag."""
        state = self._core_state * (~self._episode_start).to(self._core_state.dtype).unsqueeze(-1)
        buffer['core_state'][t] = state.cpu()
        buffer['episode_start'][t] = self._episode_start.cpu()
        return state


# --- learning --------------------------------------------------------------------------------------------------------


def _trajectory_major(tensor: torch.Tensor) -> torch.Tensor:
    """[T, N, ...] -> [N * T, ...] with each environment's trajectory contiguous (Sample Factory's sample order)."""
    return tensor.transpose(0, 1).flatten(0, 1)


class PolicyTrainer:
    """The learner of one policy: its optimizer, learning-rate schedule, SGD epochs and statistics."""

    def __init__(
        self,
        network: AppoNetwork,
        *,
        learning_rate: float,
        lr_schedule: str = 'constant',
        total_sgd_steps: int = 1,
        lr_schedule_kl_threshold: float = 0.008,
        lr_adaptive_min: float = 1e-6,
        lr_adaptive_max: float = 1e-2,
        adam_eps: float = 1e-6,
        adam_betas: tuple[float, float] = (0.9, 0.999),
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
    ):
        self.network = network
        self.optimizer = torch.optim.Adam(network.trainable_parameters(), lr=learning_rate, betas=adam_betas, eps=adam_eps)
        self.initial_learning_rate = learning_rate
        self.learning_rate = learning_rate
        self.lr_schedule = lr_schedule
        self.total_sgd_steps = total_sgd_steps
        self.kl_threshold, self.lr_min, self.lr_max = lr_schedule_kl_threshold, lr_adaptive_min, lr_adaptive_max
        self.num_epochs = num_epochs
        self.num_batches_per_epoch = num_batches_per_epoch
        self.shuffle_minibatches = shuffle_minibatches
        self.recurrence = recurrence
        self.clip_ratio, self.clip_value = ppo_clip_ratio, ppo_clip_value
        self.value_loss_coeff, self.exploration_loss_coeff, self.kl_loss_coeff = value_loss_coeff, exploration_loss_coeff, kl_loss_coeff
        self.max_grad_norm = max_grad_norm
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
            targets = normalizer.normalize(returns)
        else:
            targets = returns
        samples = {**samples, 'target': targets}
        device = samples['action'].device
        for _ in range(self.num_epochs):
            kls = []
            for indices in self.minibatches(num_samples):
                indices = indices.to(device)
                kls.append(self.sgd_step({name: value[indices] for name, value in samples.items()}))
            if self.lr_schedule == 'kl_adaptive_epoch':
                self.learning_rate = kl_adaptive_learning_rate(self.learning_rate, float(np.mean(kls)), self.kl_threshold, self.lr_min, self.lr_max)
        if self.network.observation_normalizer is not None:  # after the epochs: the mend (see the module docstring)
            fold_observations(self.network, samples['observation'])
        self.statistics.record(
            explained_variance=_explained_variance(samples['value'], targets),
            return_mean=returns.mean(),
            advantage_mean=samples['advantage'].mean(),
            samples=float(num_samples),
        )

    def forward(self, minibatch: dict[str, torch.Tensor]) -> CategoricalActorCriticOutput:
        """The network's outputs on a minibatch (flat, trajectory-major). A recurrent network unrolls each chunk of
        `recurrence` consecutive samples (truncated backpropagation through time) from the core state the actor
        stored at the chunk's first step."""
        if not self.network.is_recurrent:
            return self.network(minibatch['observation'])
        num_chunks = minibatch['action'].shape[0] // self.recurrence

        def time_major(tensor: torch.Tensor) -> torch.Tensor:  # [C * R, ...] -> [R, C, ...]
            return tensor.view(num_chunks, self.recurrence, *tensor.shape[1:]).transpose(0, 1)

        state = minibatch['core_state'].view(num_chunks, self.recurrence, -1)[:, 0]
        output = self.network.unroll(time_major(minibatch['observation']), state, time_major(minibatch['episode_start']))
        return CategoricalActorCriticOutput(output.logits.transpose(0, 1).flatten(0, 1), output.value.transpose(0, 1).flatten())

    def minibatch_loss(self, minibatch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of the module docstring on one minibatch, and its parts (detached)."""
        output = self.forward(minibatch)
        distribution = torch.distributions.Categorical(logits=output.logits, validate_args=False)
        log_prob = distribution.log_prob(minibatch['action'])
        ratio = torch.exp(log_prob - minibatch['log_prob'])
        advantage = normalize_advantages(minibatch['advantage']) if minibatch['advantage'].numel() > 1 else minibatch['advantage'] * 0
        policy_loss = ppo_policy_loss(ratio, advantage, self.clip_ratio)
        value_loss = ppo_value_loss(output.value, minibatch['value'], minibatch['target'], self.clip_value)
        entropy = distribution.entropy().mean()
        loss = policy_loss + self.value_loss_coeff * value_loss - self.exploration_loss_coeff * entropy
        if self.kl_loss_coeff > 0:
            loss = loss + self.kl_loss_coeff * categorical_kl(output.logits, minibatch['logits']).mean()
        high = 1.0 + self.clip_ratio
        parts = {
            'policy_loss': policy_loss.detach(),
            'value_loss': value_loss.detach(),
            'entropy': entropy.detach(),
            'ratio': ratio.detach(),
            'approx_kl': policy_gradient.approx_kl(log_prob.detach(), minibatch['log_prob']),
            'clip_fraction': ((ratio.detach() < 1.0 / high) | (ratio.detach() > high)).float().mean(),
        }
        return loss, parts

    def sgd_step(self, minibatch: dict[str, torch.Tensor]) -> float:
        """One Adam step on `minibatch` at the scheduled learning rate; returns the KL estimate before the step."""
        if self.lr_schedule == 'linear_decay':
            self.learning_rate = linear_decay(self.initial_learning_rate, self.sgd_steps, self.total_sgd_steps)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate
        loss, parts = self.minibatch_loss(minibatch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        parameters = self.network.trainable_parameters()
        grad_norm = nn.utils.clip_grad_norm_(parameters, self.max_grad_norm if self.max_grad_norm > 0 else float('inf'))
        self.optimizer.step()
        self.sgd_steps += 1
        kl = float(parts['approx_kl'])
        self.statistics.record(
            policy_loss=parts['policy_loss'], value_loss=parts['value_loss'], entropy=parts['entropy'], approx_kl=kl,
            clip_fraction=parts['clip_fraction'], ratio_mean=parts['ratio'].mean(), grad_norm=grad_norm, learning_rate=self.learning_rate,
        )  # fmt: skip
        if self.lr_schedule == 'kl_adaptive_minibatch':
            self.learning_rate = kl_adaptive_learning_rate(self.learning_rate, kl, self.kl_threshold, self.lr_min, self.lr_max)
        return kl

    def state_dict(self) -> dict[str, Any]:
        return {'optimizer': self.optimizer.state_dict(), 'learning_rate': self.learning_rate, 'sgd_steps': self.sgd_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state['optimizer'])
        self.learning_rate = float(state['learning_rate'])
        self.sgd_steps = int(state['sgd_steps'])


@torch.no_grad()
def fold_observations(network: AppoNetwork, observations: torch.Tensor, chunk: int = 1024) -> None:
    """Folds scaled observations into `network`'s input statistics, `chunk` at a time (combining moments chunk by
    chunk is exact, and an Atari batch in float64 at once would take gigabytes)."""
    for part in observations.split(chunk):
        network.observation_normalizer.update(network.scale(part).flatten(1))


def _explained_variance(prediction: torch.Tensor, target: torch.Tensor) -> float:
    variance = target.var() if target.numel() > 1 else torch.tensor(0.0)
    return float('nan') if variance == 0 else float(1 - (target - prediction).var() / variance)


class AppoLearner:
    """What the actors + learner loop sees: `network` (all policies) and `update(buffers)`. Step 1 of the module
    docstring runs once over the whole batch; each policy's `PolicyTrainer` then trains on its own samples."""

    agent_name = 'APPO'

    def __init__(
        self,
        network: PolicySet,
        trainers: list[PolicyTrainer],
        *,
        gamma: float,
        gae_lambda: float = 0.95,
        reward_scale: float = 1.0,
        reward_clip: float = 1000.0,
        value_bootstrap: bool = False,
        with_vtrace: bool = False,
        vtrace_rho: float = 1.0,
        vtrace_c: float = 1.0,
        device: torch.device = torch.device('cpu'),
    ):
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
        samples = {
            'observation': _trajectory_major(batch['observation']),
            'action': _trajectory_major(batch['action']),
            'log_prob': _trajectory_major(batch['log_prob']),
            'logits': _trajectory_major(batch['logits']),
            'value': _trajectory_major(batch['value']),  # as the actor stored it: value-head units
            'advantage': _trajectory_major(advantages),
            'return': _trajectory_major(returns),
        }
        if self.network.is_recurrent:
            samples['core_state'] = _trajectory_major(batch['core_state'][:-1])
            samples['episode_start'] = _trajectory_major(batch['episode_start'][:-1])
        policy = _trajectory_major(batch['policy'][:-1])
        for k, trainer in enumerate(self.trainers):
            if len(self.trainers) == 1:
                trainer.train(samples)
            else:
                mask = policy == k
                trainer.train({name: value[mask] for name, value in samples.items()})
        self.learner_steps += 1

    def learner_statistics(self) -> dict[str, float]:
        """Each policy's statistics; with several policies under policy_<k>/ (one TensorBoard stream each)."""
        if len(self.trainers) == 1:
            return self.trainers[0].statistics.means()
        statistics = {}
        for k, trainer in enumerate(self.trainers):
            statistics.update({f'policy_{k}/{name}': value for name, value in trainer.statistics.means().items()})
        return statistics

    def agent_statistics(self) -> dict[str, float]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        """The network (every policy, with its input and return statistics), and each policy's optimizer,
        learning rate and SGD step count, in one checkpoint."""
        return {'network': self.network.state_dict(), 'policies': [trainer.state_dict() for trainer in self.trainers], 'learner_steps': self.learner_steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state['policies']) != len(self.trainers):
            raise ValueError(f'the checkpoint holds {len(state["policies"])} policies, this run has --num_policies={len(self.trainers)}')
        self.network.load_state_dict(state['network'])
        for trainer, trainer_state in zip(self.trainers, state['policies']):
            trainer.load_state_dict(trainer_state)
        self.learner_steps = int(state['learner_steps'])


def linear_decay_sgd_steps(values: dict[str, Any], total_updates: int) -> int:
    """The SGD steps per policy over which linear_decay takes the learning rate to 0. With --train_for_env_steps,
    Sample Factory's plan (`run_values` keeps it): train_for_env_steps // batch_size x num_epochs, with the budget
    in frames per policy under summaries_use_frameskip, so an Atari run ends near (1 - 1/env_frameskip) x
    learning_rate as Sample Factory's does. Without it the budget is --num_iterations x --num_train_steps (not a
    Sample Factory setting) of `total_updates` updates, and the plan is all their SGD steps: the rate reaches 0 at
    the end of the run."""
    if values['sample_factory_lr_decay_sgd_steps'] > 0:
        return values['sample_factory_lr_decay_sgd_steps']
    return total_updates * values['num_epochs'] * values['num_batches_per_epoch']


def build_learner(network: PolicySet, values: dict[str, Any], total_updates: int, device: torch.device) -> AppoLearner:
    """An APPO learner from the run's values (`run_values`); `total_updates`, the updates of the run's budget, plans
    linear_decay's SGD steps when --train_for_env_steps does not (`linear_decay_sgd_steps`)."""
    network = network.to(device)
    trainers = [
        PolicyTrainer(
            policy,
            learning_rate=values['learning_rate'],
            lr_schedule=values['lr_schedule'],
            total_sgd_steps=linear_decay_sgd_steps(values, total_updates),
            lr_schedule_kl_threshold=values['lr_schedule_kl_threshold'],
            lr_adaptive_min=values['lr_adaptive_min'],
            lr_adaptive_max=values['lr_adaptive_max'],
            adam_eps=values['adam_eps'],
            adam_betas=(values['adam_beta1'], values['adam_beta2']),
            num_epochs=values['num_epochs'],
            num_batches_per_epoch=values['num_batches_per_epoch'],
            shuffle_minibatches=values['shuffle_minibatches'],
            recurrence=effective_recurrence(values),
            ppo_clip_ratio=values['ppo_clip_ratio'],
            ppo_clip_value=values['ppo_clip_value'],
            value_loss_coeff=values['value_loss_coeff'],
            exploration_loss_coeff=values['exploration_loss_coeff'],
            kl_loss_coeff=values['kl_loss_coeff'],
            max_grad_norm=values['max_grad_norm'],
        )
        for policy in network.policies
    ]
    return AppoLearner(
        network,
        trainers,
        gamma=values['gamma'],
        gae_lambda=values['gae_lambda'],
        reward_scale=values['reward_scale'],
        reward_clip=values['reward_clip'],
        value_bootstrap=values['value_bootstrap'],
        with_vtrace=values['with_vtrace'],
        vtrace_rho=values['vtrace_rho'],
        vtrace_c=values['vtrace_c'],
        device=device,
    )


def build_actor(network: PolicySet, env: VectorEnvironment, values: dict[str, Any], seed: int, device: torch.device) -> AppoActor:
    return AppoActor(network, env, values['rollout'], values['gamma'], values.get('terminal_on_life_loss', False), seed, device)


class RecurrentGreedyActor:
    """Plays the most likely action of a recurrent APPO policy (`PolicySet.eval_policy`), one core state per
    environment, zeroed where an episode starts and after `reset()` (the environments restart)."""

    def __init__(self, network: PolicySet, device: torch.device = torch.device('cpu')):
        self.network = network
        self.device = device
        self.state: Optional[torch.Tensor] = None
        self._episode_start: Optional[torch.Tensor] = None

    def reset(self) -> None:
        self.state = None

    def act(self, observation: np.ndarray) -> np.ndarray:
        if self.state is None:
            self.state = self.network.policies[self.network.eval_policy].initial_state(len(observation)).to(self.device)
            self._episode_start = torch.zeros(len(observation), dtype=torch.bool, device=self.device)
        state = self.state * (~self._episode_start).to(self.state.dtype).unsqueeze(-1)
        with torch.no_grad():
            output, self.state = self.network.step(as_tensor(observation, self.device), state)
        return output.logits.argmax(dim=1).cpu().numpy()

    def observe(self, action: np.ndarray, step: Any) -> None:
        self._episode_start = as_tensor(step.terminated | step.truncated, self.device)


def greedy_actor(network: PolicySet, device: torch.device = torch.device('cpu')) -> PolicyGreedyActor | RecurrentGreedyActor:
    """APPO's evaluation actor: the most likely action of policy `network.eval_policy`, recurrent or not."""
    return RecurrentGreedyActor(network, device) if network.is_recurrent else PolicyGreedyActor(network, device)


# --- Sample Factory's flags -> the core's values ----------------------------------------------------------------------


def apply_config(path: str, flag_values: Any, out: Any = sys.stdout, err: Any = sys.stderr) -> None:
    """Sets the flags a Sample Factory config holds, except those given explicitly on the command line (they win);
    `learning_rate` and `max_grad_norm`, where the config omits them, take Sample Factory's defaults (1e-4, 4.0: see
    `sample_factory_config.SAMPLE_FACTORY_DEFAULTS`), not the run script's. Prints load_config's notes (the warning
    about unknown keys on stderr); raises ValueError in one line."""
    from absl import flags as absl_flags

    config, notes = sample_factory_config.load_config(path)
    omitted = {
        name: value for name, value in sample_factory_config.SAMPLE_FACTORY_DEFAULTS.items() if name not in config and not flag_values[name].present
    }
    if omitted:
        defaults = ', '.join(f'{name}={value:g}' for name, value in omitted.items())
        notes.append(f"{path} omits {', '.join(omitted)}: Sample Factory's defaults apply ({defaults})")
    config.update(omitted)
    elsewhere = []
    for name, value in config.items():
        if name not in flag_values:
            elsewhere.append(name)  # env_frameskip / env_framestack in a classic-control run
            continue
        if flag_values[name].present:
            continue
        try:
            setattr(flag_values, name, value)
        except absl_flags.Error as error:
            raise ValueError(f'{path}: {name}={value!r}: {error}') from None
    if elsewhere:
        notes.append(f'{path}: ignored {", ".join(elsewhere)} (Atari settings; this is not an Atari run)')
    for note in notes:
        print(note, file=err if note.startswith('warning:') else out, flush=True)


def effective_recurrence(values: dict[str, Any]) -> int:
    """Sample Factory's --recurrence: -1 means the whole rollout with a recurrent core, and 1 without one."""
    if values['recurrence'] > 0:
        return values['recurrence']
    return values['rollout'] if values['use_rnn'] else 1


def run_values(kind: str, values: dict[str, Any], explicit: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The core's values (`main_loop.train_actors_and_learner`) from APPO's Sample Factory flag values; `explicit`
    names the flags given on the command line. Raises ValueError naming the flags when they do not fit together."""
    values = {**values, 'environment_kind': kind}
    if kind == 'atari':
        values['environment_name'] = sample_factory_config.atari_environment_name(values['environment_name'])
        values['environment_frame_skip'] = values['env_frameskip']
        values['environment_frame_stack'] = values['env_framestack']
    num_policies, rollout, envs, workers = values['num_policies'], values['rollout'], values['num_envs_per_worker'], values['num_workers']
    recurrence = effective_recurrence(values)
    if rollout % recurrence:
        raise ValueError(f'--rollout={rollout} must be a multiple of --recurrence={recurrence}')
    if values['use_rnn']:
        if num_policies > 1:
            raise ValueError(f'--use_rnn=true takes one policy here (--num_policies={num_policies}): an environment may change policy mid-rollout, which would cut its chunks')
        if not values['actor_critic_share_weights']:
            raise ValueError('--use_rnn=true needs --actor_critic_share_weights=true (one recurrent core for both heads)')
        if values['batch_size'] % recurrence:
            raise ValueError(f'--use_rnn=true: --batch_size={values["batch_size"]} must be a multiple of --recurrence={recurrence} (minibatches of whole chunks)')
    batch_samples = values['batch_size'] * values['num_batches_per_epoch'] * num_policies
    rollout_samples = rollout * envs
    policies = f' x --num_policies={num_policies}' if num_policies > 1 else ''
    if batch_samples % rollout_samples:
        raise ValueError(
            f'--batch_size={values["batch_size"]} x --num_batches_per_epoch={values["num_batches_per_epoch"]}{policies} = {batch_samples} samples must be '
            f'a multiple of --rollout={rollout} x --num_envs_per_worker={envs} = {rollout_samples}: a training batch is made of whole rollouts'
        )
    batch_rollouts = batch_samples // rollout_samples
    if not values['async_rl'] and batch_rollouts != workers:
        raise ValueError(
            f'--async_rl=false: every update takes one rollout of each worker, so --batch_size x --num_batches_per_epoch{policies} '
            f'(= {batch_samples}) must equal --num_workers x --num_envs_per_worker x --rollout (= {workers * rollout_samples})'
        )
    sgd_steps_per_update = values['num_epochs'] * values['num_batches_per_epoch']
    budget = values['train_for_env_steps']  # Sample Factory's: frames per policy (0: --num_iterations x --num_train_steps)
    values.update(
        num_actors=workers,
        num_envs_per_actor=envs,
        unroll_length=rollout,
        discount=values['gamma'],
        batch_rollouts=batch_rollouts,
        # Enough buffers that the actors can collect num_batches_to_accumulate batches ahead of the learner.
        num_buffers_per_actor=max(2, math.ceil(values['num_batches_to_accumulate'] * batch_rollouts / workers)),
        # Sample Factory drops samples lagging >= max_policy_lag SGD steps; the core drops rollouts lagging more than
        # its bound in updates, each num_epochs x num_batches_per_epoch SGD steps.
        sample_factory_max_policy_lag=values['max_policy_lag'],
        max_policy_lag=max(math.ceil(values['max_policy_lag'] / sgd_steps_per_update) - 1, 0),
        # linear_decay's plan as Sample Factory makes it, in SGD steps per policy (0: the run's budget plans it)
        sample_factory_lr_decay_sgd_steps=max(budget // values['batch_size'] * values['num_epochs'], 1) if budget > 0 else 0,
    )
    frames_per_step = values['env_frameskip'] if kind == 'atari' and values['summaries_use_frameskip'] else 1

    def agent_steps(frames_per_policy: int) -> int:
        """Sample Factory's env steps (frames per policy under summaries_use_frameskip) as the experiment counts env
        steps: agent steps of all policies (they share the environments, so the run takes about N times the budget)."""
        return math.ceil(frames_per_policy * num_policies / frames_per_step)

    if values.get('save_best_after'):  # optional, as it is to the experiment (experiment.RunSettings)
        values['save_best_after'] = agent_steps(values['save_best_after'])
    if budget > 0:
        values['train_for_env_steps'] = agent_steps(budget)
        if 'num_iterations' not in explicit:
            values['num_iterations'] = math.ceil(values['train_for_env_steps'] / values['num_train_steps'])
    return values


def experiment_values(kind: str, script_values: dict[str, Any], explicit: frozenset[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The restart behaviour applied as for every agent (`experiment.prepare`): a resumed experiment reloads its saved
    Sample Factory flags, those given on the command line (`explicit`) overriding them. Returns those flag values
    (config.json keeps them) and the run's values translated from them."""

    def translate(values: dict[str, Any]) -> dict[str, Any]:
        return main_loop.canonical_environment(run_values(kind, values, explicit))

    script_values = experiment.prepare(AppoLearner.agent_name, script_values, explicit, translate)
    return script_values, translate(script_values)


def train(kind: str) -> None:
    """Entry point of APPO's run scripts: --config_json applied, the experiment's saved flags when it resumes,
    Sample Factory's flags translated, then actors, learner and iterations on the core (asynchronous unless
    --async_rl=false)."""
    from deep_rl_zoo import flags

    if flags.FLAGS.config_json:
        apply_config(flags.FLAGS.config_json, flags.FLAGS)
    script_values = flags.flag_values()
    script_values, values = experiment_values(kind, script_values, experiment.explicit_flags(script_values))
    state_size = (values['rnn_size'] * (2 if values['rnn_type'] == 'lstm' else 1)) if values['use_rnn'] else 0
    main_loop.train_actors_and_learner(
        kind, make_network, build_learner, build_actor, functools.partial(rollout_spec, state_size=state_size),
        asynchronous=values['async_rl'], values=values, make_eval_actor=greedy_actor, config_flags=script_values,
    )  # fmt: skip
