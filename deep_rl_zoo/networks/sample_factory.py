"""Sample Factory's actor-critic (Petrenko et al. 2020, "Sample Factory"), the network of APPO: scaled and
normalised inputs, an encoder (Nature DQN's convnet_atari for frame stacks, an MLP for vectors), an optional GRU or
LSTM core, and policy and value heads; `PolicySet` holds the independent policies of one run.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.networks.common import CHANNELS_LAST_MIN_BATCH, channels_last, in_bf16_torsos
from deep_rl_zoo.networks.policy import CategoricalActorCriticOutput
from deep_rl_zoo.normalizer import ObservationNormalizer, ReturnNormalizer, frame_moments

ACTIVATIONS = {'elu': nn.ELU, 'relu': nn.ReLU, 'tanh': nn.Tanh}


def mlp_encoder(input_size: int, layers: Sequence[int], activation: type[nn.Module]) -> nn.Sequential:
    """Sample Factory's mlp encoder: a linear layer and `activation` for each of `layers` (its output_size: the last)."""
    modules: list[nn.Module] = []
    for size in layers:
        modules += [nn.Linear(input_size, size), activation()]
        input_size = size
    encoder = nn.Sequential(*modules)
    encoder.output_size = input_size
    return encoder


class ConvnetAtariEncoder(nn.Sequential):
    """Sample Factory's convnet_atari encoder as a sequence (its convolutions, then its MLP) that honours
    `bf16_torsos` as `NatureCnnTorso` does: within it the encoder runs under bfloat16 autocast and hands float32
    features to the core and heads."""

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        if not in_bf16_torsos():
            return super().forward(observation)
        with torch.autocast(observation.device.type, dtype=torch.bfloat16):
            features = super().forward(observation)
        return features.float()


def convnet_atari_encoder(observation_shape: Sequence[int], mlp_layers: Sequence[int], activation: type[nn.Module]) -> ConvnetAtariEncoder:
    """Sample Factory's convnet_atari encoder: the convolutions of Nature DQN (32x8x8/4, 64x4x4/2, 64x3x3/1) with
    `activation`, then `mlp_encoder(mlp_layers)` over their flattened output."""
    convs = nn.Sequential(
        nn.Conv2d(observation_shape[0], 32, 8, stride=4), activation(),
        nn.Conv2d(32, 64, 4, stride=2), activation(),
        nn.Conv2d(64, 64, 3, stride=1), activation(),
        nn.Flatten(),
    )  # fmt: skip
    with torch.no_grad():
        conv_size = convs(torch.zeros(1, *observation_shape)).shape[1]
    head = mlp_encoder(conv_size, mlp_layers, activation)
    encoder = ConvnetAtariEncoder(convs, head)
    encoder.output_size = head.output_size
    return encoder


def encoder(observation_shape: Sequence[int], mlp_layers: Sequence[int], conv_mlp_layers: Sequence[int], activation: type[nn.Module]) -> nn.Sequential:
    """convnet_atari for frame stacks [C, H, W], the mlp encoder for vectors."""
    if len(observation_shape) == 3:
        return convnet_atari_encoder(observation_shape, conv_mlp_layers, activation)
    return mlp_encoder(int(np.prod(observation_shape)), mlp_layers, activation)


class SampleFactoryActorCritic(nn.Module):
    """One policy: observations scaled ((x - obs_subtract_mean) / obs_scale) and, with `normalize_input`, normalised
    per element by running statistics (Sample Factory: clip 5, epsilon 1e-5); an encoder shared by the policy and
    value heads (or one each); with `rnn_type` ('gru' or 'lstm', Sample Factory's use_rnn) a recurrent core of
    `rnn_size` units between the shared encoder and the heads; the value head predicts returns normalised by
    `return_normalizer` when there is one. The statistics are non-trainable parameters, so they reach the actors
    with the weights and are saved in checkpoints. Every linear and convolutional layer is initialised as
    `initialization` says (Sample Factory: heads included; the recurrent cell keeps torch's own initialisation).
    Learner-sized batches of frames are laid out channels-last before they are scaled (`networks.common`).

    The core's state is one tensor [B, state_size] per environment (an LSTM's h and c side by side): `step` advances
    it by one observation, `unroll` over [T, B] observations, zeroing it before each step that starts an episode.
    """

    def __init__(
        self,
        observation_shape: tuple[int, ...],
        num_actions: int,
        mlp_layers: Sequence[int],
        conv_mlp_layers: Sequence[int],
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
        activation = ACTIVATIONS[nonlinearity]
        self.observation_shape = tuple(observation_shape)
        self.obs_subtract_mean, self.obs_scale = obs_subtract_mean, obs_scale
        size = int(np.prod(observation_shape))
        self.observation_normalizer = ObservationNormalizer(size, clip=5.0, epsilon=1e-5) if normalize_input else None
        self.return_normalizer = ReturnNormalizer() if normalize_returns else None
        self.encoder = encoder(observation_shape, mlp_layers, conv_mlp_layers, activation)
        self.value_encoder = None if share_weights else encoder(observation_shape, mlp_layers, conv_mlp_layers, activation)
        features = self.encoder.output_size
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

    def encoder_inputs(self, observation: torch.Tensor) -> torch.Tensor:
        """What the encoders read of observations [B, ...]: scaled and, with `normalize_input`, normalised; frames in
        learner-sized batches laid out channels-last. A learner may make them once per update and pass minibatches of
        them with `prepared=True` (APPO's does: the input statistics change only after its epochs)."""
        if observation.dim() == 4:
            observation = channels_last(observation)
        return self._scale_and_normalize(observation) if self.observation_normalizer is not None else self.scale(observation)

    def _encode(self, observation: torch.Tensor, prepared: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The encoder's features for the policy and for the value head, [B, features] each, of observations or, with
        `prepared`, of `encoder_inputs` (laid out as `encoder_inputs` lays out a batch of their size)."""
        if not prepared:
            x = self.encoder_inputs(observation)
        elif observation.dim() == 4:
            x = channels_last(observation) if observation.shape[0] >= CHANNELS_LAST_MIN_BATCH else observation.contiguous()
        else:
            x = observation
        features = self.encoder(x)
        return features, (features if self.value_encoder is None else self.value_encoder(x))

    def _scale_and_normalize(self, observation: torch.Tensor) -> torch.Tensor:
        """normalizer(scale(observation)) in one multiply-add and a clamp: with s = obs_scale, m = obs_subtract_mean
        and the statistics' mean mu and std sigma, ((x - m) / s - mu) / sigma = x * w + b for w = 1 / (s sigma) and
        b = -(m / s + mu) / sigma (Atari batches hold millions of pixels: each pass over them counts). w and b take
        the layout of the frames, so the result keeps it."""
        normalizer = self.observation_normalizer
        std = torch.sqrt(normalizer.var + normalizer.epsilon).view(observation.shape[1:])
        weight = 1.0 / (self.obs_scale * std)
        bias = -(self.obs_subtract_mean / self.obs_scale + normalizer.mean.view(observation.shape[1:])) / std
        if observation.dim() == 4 and observation.is_contiguous(memory_format=torch.channels_last):
            weight, bias = (t[None].contiguous(memory_format=torch.channels_last) for t in (weight, bias))
        if observation.dtype != torch.uint8:  # uint8 frames go in as they are: addcmul makes the float result itself
            observation = observation.float()
        return torch.addcmul(bias, observation, weight).clamp_(-normalizer.clip, normalizer.clip)

    def _core_step(self, features: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """One step of the recurrent core: the new state [B, state_size]; its first rnn_size columns are the output."""
        if isinstance(self.core, nn.LSTMCell):
            h, c = self.core(features, state.split(self.rnn_size, dim=-1))
            return torch.cat([h, c], dim=-1)
        return self.core(features, state)

    def forward(self, observation: torch.Tensor, prepared: bool = False) -> CategoricalActorCriticOutput:
        """The feed-forward network on a batch of observations [B, ...] (or of their `encoder_inputs`, `prepared`; a
        recurrent network: see `step`)."""
        if self.is_recurrent:
            raise TypeError('this network is recurrent: call step(observation, state) or unroll(...)')
        features, value_features = self._encode(observation, prepared)
        return CategoricalActorCriticOutput(self.policy_head(features), self.value_head(value_features).squeeze(-1))

    def step(self, observation: torch.Tensor, state: torch.Tensor) -> tuple[CategoricalActorCriticOutput, torch.Tensor]:
        """One acting step of a recurrent network: outputs for observations [B, ...] from core states [B, S] (already
        zeroed where an episode starts), and the next states."""
        features, _ = self._encode(observation)
        state = self._core_step(features, state)
        core_output = state[:, : self.rnn_size]
        return CategoricalActorCriticOutput(self.policy_head(core_output), self.value_head(core_output).squeeze(-1)), state

    def unroll(self, observation: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, prepared: bool = False) -> CategoricalActorCriticOutput:
        """Outputs [T, B] of a recurrent network over observations [T, B, ...] (or their `encoder_inputs`, `prepared`)
        from the core states [B, S] before the first step; the state is zeroed before every later step t where
        `episode_start[t]` (the first step's state is taken as given: the actor zeroed it already). The encoder runs
        once over all T x B observations."""
        num_steps, batch_size = observation.shape[:2]
        features, _ = self._encode(observation.flatten(0, 1), prepared)
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

    @torch.no_grad()
    def fold_observations(self, observations: torch.Tensor, chunk: int = 1024) -> None:
        """Folds scaled observations into the input statistics. Frames (uint8) by their exact moments
        (`normalizer.frame_moments`), scaled: (x - m) / s has mean (mean - m) / s and variance var / s^2; other
        observations `chunk` at a time (combining moments chunk by chunk is exact)."""
        if observations.dtype == torch.uint8:
            mean, var = frame_moments(observations.flatten(1))
            scaled_mean = (mean - self.obs_subtract_mean) / self.obs_scale
            self.observation_normalizer.fold_moments(scaled_mean, var / self.obs_scale**2, observations.shape[0])
            return
        for part in observations.split(chunk):
            self.observation_normalizer.update(self.scale(part).flatten(1))

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [parameter for parameter in self.parameters() if parameter.requires_grad]


class PolicySet(nn.Module):
    """The `num_policies` networks of a run as one module, so one parameter broadcast carries them all. Called with
    observations only it is policy `eval_policy` (what greedy evaluation plays); with a policy index per
    observation, each policy acts on its own observations (one forward pass per policy)."""

    def __init__(self, policies: list[SampleFactoryActorCritic]):
        super().__init__()
        self.policies = nn.ModuleList(policies)
        self.eval_policy = 0

    def __len__(self) -> int:
        return len(self.policies)

    @property
    def is_recurrent(self) -> bool:
        return self.policies[0].is_recurrent

    def initial_state(self, batch_size: int) -> torch.Tensor:
        return self.policies[self.eval_policy].initial_state(batch_size)

    def step(self, observation: torch.Tensor, state: torch.Tensor) -> tuple[CategoricalActorCriticOutput, torch.Tensor]:
        """One step of the recurrent policy `eval_policy` (a recurrent run has one policy)."""
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
