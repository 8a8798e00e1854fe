"""Networks of the curiosity agents: ICM's encoder, inverse and forward models (Pathak et al. 2017), RND's target
and predictor (Burda et al. 2018), an actor-critic with extrinsic and intrinsic value heads, and a small CNN torso
for MiniGrid's partial view.

Observations come in three kinds, each with its torsos: Atari frame stacks (uint8 [C, 84, 84]), MiniGrid views
(uint8 [3, 7, 7]: object, colour and state indices per cell) and vectors (classic control).
"""

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso, orthogonal_init, scaled_frames
from deep_rl_zoo.networks.policy import CategoricalActorCritic
from deep_rl_zoo.normalizer import ObservationNormalizer

KINDS = ('atari', 'minigrid', 'classic')


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f'the curiosity agents take {", ".join(KINDS)} environments, got kind {kind!r}')


def _conv_output_size(convs: nn.Module, shape: tuple[int, ...]) -> int:
    with torch.no_grad():
        return int(convs(torch.zeros(1, *shape)).shape[1])


def _minigrid_convs(channels: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(channels, 16, 2), nn.ReLU(), nn.Conv2d(16, 32, 2), nn.ReLU(), nn.Conv2d(32, 64, 2), nn.ReLU(), nn.Flatten())


class MiniGridTorso(nn.Module):
    """Three 2x2 convolutions (16, 32, 64 channels, ReLU) and a linear layer over MiniGrid's grid of cell indices
    [B, 3, H, W] (taken as numbers, as in the MiniGrid baselines)."""

    def __init__(self, observation_shape: tuple[int, ...], output_size: int = 128):
        super().__init__()
        self.convs = _minigrid_convs(observation_shape[0])
        self.fc = nn.Sequential(nn.Linear(_conv_output_size(self.convs, observation_shape), output_size), nn.ReLU())
        self.output_size = output_size

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.fc(self.convs(observation.float()))


def policy_torsos(kind: str, observation_space) -> tuple[nn.Module, nn.Module | None]:
    """(torso, value torso or None when shared) of the actor-critic: PPO's Nature CNN on Atari, the MiniGrid CNN,
    separate tanh MLPs (64, 64) for vectors, each seeing the vector scaled to [0, 1] by its bounds (`BoundsScaler`:
    MountainCar's velocity spans +-0.07, its position 1.8, and the policy must act on the velocity)."""
    _check_kind(kind)
    shape = observation_space.shape
    if kind == 'atari':
        return NatureCnnTorso(shape[0]), None
    if kind == 'minigrid':
        return MiniGridTorso(shape), None
    return _scaled_mlp(observation_space, nn.Tanh), _scaled_mlp(observation_space, nn.Tanh)


class TwoValueOutput(NamedTuple):
    logits: torch.Tensor  # [B, A]
    value: torch.Tensor  # [B] extrinsic value V_E(s)
    intrinsic_value: torch.Tensor  # [B] intrinsic value V_I(s)


class TwoValueActorCritic(CategoricalActorCritic):
    """`CategoricalActorCritic` with a second value head for the intrinsic return (Burda et al. 2018, section 2.3:
    "two value heads")."""

    def __init__(self, torso: nn.Module, num_actions: int, value_torso: nn.Module | None = None):
        super().__init__(torso, num_actions, value_torso)
        self.intrinsic_value_head = orthogonal_init(nn.Linear(self.value_head.in_features, 1), gain=1.0)

    def forward(self, observation: torch.Tensor) -> TwoValueOutput:
        features = self.torso(observation)
        value_features = features if self.value_torso is None else self.value_torso(observation)
        return TwoValueOutput(
            self.policy_head(features), self.value_head(value_features).squeeze(-1), self.intrinsic_value_head(value_features).squeeze(-1)
        )


class BoundsScaler(nn.Module):
    """Maps each vector component from its observation-space bounds to [0, 1] (components with infinite bounds
    pass through), so that inputs of very different ranges (MountainCar's position and velocity) weigh alike."""

    def __init__(self, low: np.ndarray, high: np.ndarray):
        super().__init__()
        finite = np.isfinite(low) & np.isfinite(high) & (high > low)
        self.register_buffer('offset', torch.as_tensor(np.where(finite, low, 0.0), dtype=torch.float32))
        self.register_buffer('scale', torch.as_tensor(np.where(finite, high - low, 1.0), dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return (observation.flatten(1).float() - self.offset) / self.scale


ICM_FRAME_SIZE = 42  # Pathak et al. 2017, section 4: the module's frames are resized to 42 x 42


class IcmAtariEncoder(nn.Module):
    """ICM's Atari encoder (Pathak et al. 2017, section 4): the frames at the paper's 42 x 42 (larger frames averaged
    down, 84 x 84 by 2 x 2 means), then four 3x3 convolutions of 32 channels, stride 2, padding 1, each followed by an
    ELU: 288 features, as in the paper. (On 84 x 84 frames the same layers cost about four times as much and give
    1,152 features.)"""

    def __init__(self, observation_shape: tuple[int, ...]):
        super().__init__()
        self.resize = nn.AdaptiveAvgPool2d(ICM_FRAME_SIZE) if min(observation_shape[1:]) > ICM_FRAME_SIZE else nn.Identity()
        layers: list[nn.Module] = []
        channels = observation_shape[0]
        for _ in range(4):
            layers += [nn.Conv2d(channels, 32, 3, stride=2, padding=1), nn.ELU(inplace=True)]
            channels = 32
        self.convs = nn.Sequential(*layers, nn.Flatten())
        self.output_size = _conv_output_size(nn.Sequential(self.resize, self.convs), observation_shape)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.convs(self.resize(scaled_frames(frames)))


class IcmOutput(NamedTuple):
    action_logits: torch.Tensor  # [B, A] the inverse model's prediction of a_t
    predicted_features: torch.Tensor  # [B, F] the forward model's phi_hat(s_t+1)
    next_features: torch.Tensor  # [B, F] phi(s_t+1)


class IntrinsicCuriosityModule(nn.Module):
    """phi = `encoder`; inverse model g(phi(s_t), phi(s_t+1)) -> logits of a_t; forward model
    f(phi(s_t), a_t) -> phi_hat(s_t+1), each one hidden layer of 256 ReLU units (Pathak et al. 2017, section 2.2).

    The forward model sees phi(s_t) detached, so the features are shaped by the inverse model alone.
    """

    def __init__(self, encoder: nn.Module, num_actions: int, hidden_size: int = 256):
        super().__init__()
        self.encoder = orthogonal_init(encoder)
        size = encoder.output_size
        self.num_actions = num_actions
        self.inverse_model = orthogonal_init(nn.Sequential(nn.Linear(2 * size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, num_actions)))
        self.forward_model = orthogonal_init(nn.Sequential(nn.Linear(size + num_actions, hidden_size), nn.ReLU(), nn.Linear(hidden_size, size)))

    def forward(self, observation: torch.Tensor, next_observation: torch.Tensor, action: torch.Tensor) -> IcmOutput:
        features = self.encoder(observation)
        next_features = self.encoder(next_observation)
        action_logits = self.inverse_model(torch.cat([features, next_features], dim=-1))
        one_hot = nn.functional.one_hot(action.long(), self.num_actions).to(features.dtype)
        predicted = self.forward_model(torch.cat([features.detach(), one_hot], dim=-1))
        return IcmOutput(action_logits, predicted, next_features)


def icm_for(kind: str, observation_space, num_actions: int) -> IntrinsicCuriosityModule:
    """ICM with the paper's conv encoder on Atari, the MiniGrid CNN, or a bounds-scaled ELU MLP (64, 64) for vectors."""
    _check_kind(kind)
    shape = observation_space.shape
    if kind == 'atari':
        encoder: nn.Module = IcmAtariEncoder(shape)
    elif kind == 'minigrid':
        encoder = MiniGridTorso(shape)
    else:
        encoder = _scaled_mlp(observation_space, nn.ELU)
    return IntrinsicCuriosityModule(encoder, num_actions)


def _scaled_mlp(observation_space, activation: type[nn.Module]) -> '_ScaledMlp':
    """An MLP (64, 64) on the observation scaled to [0, 1] by the bounds of `observation_space` (a Box)."""
    return _ScaledMlp(BoundsScaler(observation_space.low.reshape(-1), observation_space.high.reshape(-1)), (64, 64), activation)


class _ScaledMlp(nn.Module):
    def __init__(self, scaler: BoundsScaler, hidden_sizes: tuple[int, ...], activation: type[nn.Module]):
        super().__init__()
        self.scaler = scaler
        self.mlp = MlpTorso(scaler.offset.shape[0], hidden_sizes, activation)
        self.output_size = self.mlp.output_size

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.scaler(observation))


class RandomNetworkDistillation(nn.Module):
    """RND's fixed random `target` and trained `predictor` on normalised observations (Burda et al. 2018, section 2.2).

    Inputs are the newest frame of an Atari stack (the paper's nets see one frame) or the whole observation,
    normalised per element by `observation_normalizer` (running mean and std, clipped to [-5, 5]: section 2.4).
    `forward` returns (prediction, target), each [B, F]; the target has no trainable parameters.
    """

    def __init__(self, target: nn.Module, predictor: nn.Module, input_shape: tuple[int, ...], newest_frame_only: bool):
        super().__init__()
        self.target = orthogonal_init(target)
        for parameter in self.target.parameters():
            parameter.requires_grad_(False)
        self.predictor = orthogonal_init(predictor)
        self.input_shape = input_shape
        self.newest_frame_only = newest_frame_only
        self.observation_normalizer = ObservationNormalizer(int(np.prod(input_shape)), clip=5.0)

    def flat_inputs(self, observation: torch.Tensor) -> torch.Tensor:
        """The un-normalised inputs [B, prod(input_shape)] of a batch of observations (for the normaliser's update)."""
        if self.newest_frame_only:
            observation = observation[:, -1:]
        return observation.flatten(1).float()

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = self.observation_normalizer(self.flat_inputs(observation)).view(-1, *self.input_shape)
        return self.predictor(inputs), self.target(inputs)


def _atari_convs() -> nn.Sequential:
    """RND's convolutions on one 84x84 frame: 32 8x8/4, 64 4x4/2, 64 3x3/1, leaky ReLU."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 8, stride=4), nn.LeakyReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.LeakyReLU(), nn.Conv2d(64, 64, 3, stride=1), nn.LeakyReLU(), nn.Flatten()
    )


def rnd_for(kind: str, observation_shape: tuple[int, ...]) -> RandomNetworkDistillation:
    """RND's networks: on Atari the paper's target (3 convolutions, a linear layer of 512) and its deeper predictor
    (the same convolutions, then 512, 512 ReLU units and 512 outputs); scaled-down versions of the same shapes for
    MiniGrid (convolutions, 64 outputs) and vectors (MLPs of 256, 256 units, 64 outputs; the target's first layer
    with random biases: `spread_kinks`)."""
    _check_kind(kind)
    if kind == 'atari':
        input_shape = (1, *observation_shape[1:])
        target_convs, predictor_convs = _atari_convs(), _atari_convs()
        size = _conv_output_size(target_convs, input_shape)
        target = nn.Sequential(target_convs, nn.Linear(size, 512))
        predictor = nn.Sequential(predictor_convs, nn.Linear(size, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
        return RandomNetworkDistillation(target, predictor, input_shape, newest_frame_only=True)
    if kind == 'minigrid':
        size = _conv_output_size(_minigrid_convs(observation_shape[0]), observation_shape)
        target = nn.Sequential(_minigrid_convs(observation_shape[0]), nn.Linear(size, 64))
        predictor = nn.Sequential(
            _minigrid_convs(observation_shape[0]), nn.Linear(size, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 64)
        )
        return RandomNetworkDistillation(target, predictor, observation_shape, newest_frame_only=False)
    size = int(np.prod(observation_shape))
    target = nn.Sequential(nn.Linear(size, 256), nn.LeakyReLU(), nn.Linear(256, 256), nn.LeakyReLU(), nn.Linear(256, 64))
    predictor = nn.Sequential(nn.Linear(size, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))
    rnd = RandomNetworkDistillation(target, predictor, (size,), newest_frame_only=False)
    spread_kinks(rnd.target[0], rnd.observation_normalizer.clip)
    return rnd


@torch.no_grad()
def spread_kinks(layer: nn.Linear, clip: float) -> None:
    """Random biases for the first layer of RND's vector target: unit i's kink w_i.x + b_i = 0 then lies at a distance
    uniform in [0, clip] from the origin of the normalised input box [-clip, clip]^d.

    With zero biases (`orthogonal_init`) a leaky-ReLU target is positively homogeneous, f(c x) = c f(x) for c > 0:
    on a state of a few dimensions whose normalised visits surround the origin (MountainCar's two), the predictor
    fitted on the visits extrapolates it to unvisited states along every ray, and the bonus hardly tells them apart.
    """
    layer.bias.uniform_(-clip, clip).mul_(layer.weight.norm(dim=1))
