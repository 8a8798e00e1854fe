"""Network torsos shared by every agent: an MLP for vector observations, the Nature-DQN CNN for Atari and
IMPALA's deeper residual CNN.

Atari frames stay uint8 everywhere (replay, queues, shared memory) and are scaled to [0, 1] only here,
inside the forward pass, so they cost a quarter of the memory and bandwidth of float32 frames.
"""

import contextlib
import contextvars
import math
from typing import Iterator, Sequence

import torch
from torch import nn


# Frames in channels-last layout make convolutions on CPU (oneDNN) about 1.2-1.5x faster for learner-sized batches
# (the Nature CNN's forward and backward over DQN's minibatch of 32: 1.13x), but an actor's forward pass over a few
# frames slightly slower: only batches of at least this many are converted.
CHANNELS_LAST_MIN_BATCH = 32


def channels_last(frames: torch.Tensor) -> torch.Tensor:
    """Frames [B, C, H, W] in channels-last layout when the batch is large (see CHANNELS_LAST_MIN_BATCH). Convert the
    uint8 frames, before any float copy: a quarter of the bytes."""
    if frames.shape[0] >= CHANNELS_LAST_MIN_BATCH:
        return frames.contiguous(memory_format=torch.channels_last)
    return frames


def scaled_frames(frames: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """uint8 frames [B, C, H, W] as floats of `dtype` in [0, 1], channels-last for large batches (see
    CHANNELS_LAST_MIN_BATCH). Divided in place in the converted copy: the same numbers as `frames.float() / 255`,
    without a second array of the batch's size to allocate and fill."""
    return channels_last(frames).to(dtype, copy=True).div_(255.0)


def fold_time(observation: torch.Tensor, frames: bool) -> torch.Tensor:
    """Observations [T, B, ...] as one batch [T * B, ...] for a torso. With `frames` (a torso of uint8 frame stacks
    that takes large batches channels-last, `scaled_frames`), stacks [T, B, C, H, W] of at least
    CHANNELS_LAST_MIN_BATCH frames are copied once, straight into channels-last layout: the learners' time-major
    view of a replay's [B, T] batch is copied to fold it anyway, and converting the folded frames would copy them
    again (the same frames either way). Fewer frames are folded in the plain layout, as the torso takes them."""
    num_frames = observation.shape[0] * observation.shape[1]
    if not frames or observation.dim() != 5:
        return observation.flatten(0, 1)
    if num_frames < CHANNELS_LAST_MIN_BATCH:
        return observation.flatten(0, 1).contiguous()  # even from `channels_last_steps`' layout
    channels, height, width = observation.shape[2:]
    return observation.permute(0, 1, 3, 4, 2).reshape(num_frames, height, width, channels).permute(0, 3, 1, 2)


def channels_last_steps(frames: torch.Tensor) -> torch.Tensor:
    """Frame stacks [T, B, C, H, W] as a view of one copy laid out [T, B, H, W, C]: `fold_time` then folds any run of
    its steps into a channels-last batch without copying (a sequence learner's online unroll, burn-in then the rest,
    and its target unroll fold the same frames three times). Fewer than CHANNELS_LAST_MIN_BATCH frames as they are."""
    if frames.shape[0] * frames.shape[1] < CHANNELS_LAST_MIN_BATCH:
        return frames
    return frames.permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3)


_BF16_TORSOS = contextvars.ContextVar('bf16_torsos', default=False)


@contextlib.contextmanager
def bf16_torsos(enabled: bool = True) -> Iterator[None]:
    """Within it (when `enabled`), Nature CNN torsos run under bfloat16 autocast and hand float32 features to their
    heads: the convolutions, the bulk of the compute, take the bf16 units of CPUs with AVX-512 BF16 or AMX (and of
    GPUs), while the heads and every loss see float32 numbers. A learner's update runs in it with --bf16_learning
    (the replay agents', R2D2's family's and the on-policy learners': PPO's, A2C's, IMPALA's, APPO's)."""
    token = _BF16_TORSOS.set(enabled)
    try:
        yield
    finally:
        _BF16_TORSOS.reset(token)


def bf16_hidden_layers(device_type: str, nature_network: bool) -> contextlib.AbstractContextManager:
    """bfloat16 autocast within `bf16_torsos` for a 512-unit hidden layer that a head holds in place of the Nature
    torso's own and runs on many rows per state (IQN's f after psi(s) * phi(tau), once per quantile fraction), so
    that --bf16_learning runs it in bfloat16 as DQN's torso runs its 512 units; elsewhere, or when the torso is not
    the Nature CNN (`nature_network` False), nothing. The head's output layer takes float32 after it. Not Rainbow's
    noisy streams: at 32 rows per pass, casting their 3,136 x 512 weights to bfloat16 costs what their matmuls save."""
    if nature_network and in_bf16_torsos():
        return torch.autocast(device_type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def in_bf16_torsos() -> bool:
    """Whether torsos run in bfloat16 here (within `bf16_torsos`): for conv stacks other than `NatureCnnTorso` that
    honour it too (APPO's convnet_atari encoder)."""
    return _BF16_TORSOS.get()


def bf16_is_native(device: torch.device) -> bool:
    """Whether `device` computes bfloat16 in hardware: a GPU that supports it, or a CPU with AVX-512 BF16 or AMX.
    Elsewhere `bf16_torsos`' convolutions are emulated and far slower than float32: on a 2-core AVX2 AMD EPYC, the
    Nature CNN's forward, backward and Adam step over 32 Pong frame stacks took 246 ms in bfloat16 and 33 ms in
    float32 (7.4x)."""
    if device.type == 'cuda':
        return torch.cuda.is_bf16_supported()
    capability = torch._C._cpu._get_cpu_capability()  # pylint: disable=protected-access  # torch's own CPU feature probe
    return bool(capability.get('avx512_bf16') or capability.get('amx_bf16'))


def orthogonal_init(module: nn.Module, gain: float = math.sqrt(2.0)) -> nn.Module:
    """Orthogonal weights and zero biases (Saxe et al. 2014), the initialisation PPO and A2C use."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.orthogonal_(layer.weight, gain)
            nn.init.zeros_(layer.bias)
    return module


class MlpTorso(nn.Module):
    """Fully connected layers with an activation after each, for classic-control and MuJoCo observations."""

    def __init__(self, input_size: int, hidden_sizes: Sequence[int] = (64, 64), activation: type[nn.Module] = nn.ReLU):
        super().__init__()
        if input_size < 1 or not hidden_sizes or min(hidden_sizes) < 1:
            raise ValueError(f'MlpTorso needs input_size >= 1 and positive hidden_sizes, got {input_size}, {hidden_sizes}')
        layers: list[nn.Module] = []
        for size in hidden_sizes:
            layers += [nn.Linear(input_size, size), activation()]
            input_size = size
        self.body = nn.Sequential(*layers)
        self.output_size = input_size

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        return self.body(observation.flatten(1).float())


class NatureCnnTorso(nn.Module):
    """The convolutional torso of Nature DQN (Mnih et al. 2015): 3 conv layers and a 512-unit linear layer.

    Input: uint8 frame stacks [B, C, 84, 84]; they are scaled to [0, 1] here. With `fully_connected=False`
    it ends after the convolutions (3,136 features for 84x84 frames), for heads that hold the 512-unit layer
    themselves (IQN's f after psi(s) * phi(tau), Rainbow's noisy streams, DRQN's LSTM).
    """

    def __init__(self, in_channels: int = 4, frame_size: int = 84, fully_connected: bool = True):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(in_channels, 32, kernel_size=8, stride=4),
            nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2),
            nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():
            conv_size = self.convs(torch.zeros(1, in_channels, frame_size, frame_size)).shape[1]
        if fully_connected:
            self.fc = nn.Sequential(nn.Linear(conv_size, 512), nn.ReLU())
            self.output_size = 512
        else:
            self.fc = nn.Identity()
            self.output_size = conv_size

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        if not in_bf16_torsos():
            return self.fc(self.convs(scaled_frames(frames)))
        with torch.autocast(frames.device.type, dtype=torch.bfloat16):
            # Scaled straight to bfloat16: the numbers autocast would cast float32 frames to, half the bytes to write.
            features = self.fc(self.convs(scaled_frames(frames, torch.bfloat16)))
        return features.float()


class ImpalaResidualBlock(nn.Module):
    """ReLU, conv 3x3, ReLU, conv 3x3, plus the input: the residual block of IMPALA's deep network."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Not in-place: the first ReLU must leave x intact for the skip connection.
        out = self.conv0(torch.relu(x))
        out = self.conv1(torch.relu(out))
        return x + out


class ImpalaResNetTorso(nn.Module):
    """The deep residual torso of IMPALA (Espeholt et al. 2018, figure 3, the large architecture: 15 conv layers).

    Input: uint8 frame stacks [B, C, frame_size, frame_size], scaled to [0, 1] here like NatureCnnTorso.
    One section per entry of `channels`: conv 3x3 (stride 1), max-pool 3x3 (stride 2, padding 1), then two
    residual blocks (ReLU, conv 3x3, ReLU, conv 3x3, plus skip). Then ReLU, flatten and a linear layer of
    `output_size` units with a ReLU. With the paper's channels (16, 32, 32) each max-pool halves the frame
    (rounding up): 84 -> 42 -> 21 -> 11, so the linear layer sees 32 * 11 * 11 = 3,872 features.
    The paper's LSTM and its reward/action inputs are left to the heads.
    """

    def __init__(
        self,
        in_channels: int = 4,
        frame_size: int = 84,
        channels: Sequence[int] = (16, 32, 32),
        output_size: int = 256,
    ):
        super().__init__()
        if in_channels < 1 or frame_size < 1 or not channels or min(channels) < 1 or output_size < 1:
            raise ValueError(
                'ImpalaResNetTorso needs positive in_channels, frame_size and output_size and a non-empty '
                f'channels of positive sizes, got in_channels={in_channels}, frame_size={frame_size}, '
                f'channels={tuple(channels)}, output_size={output_size}'
            )
        layers: list[nn.Module] = []
        for section_channels in channels:
            layers += [
                nn.Conv2d(in_channels, section_channels, kernel_size=3, stride=1, padding=1),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
                ImpalaResidualBlock(section_channels),
                ImpalaResidualBlock(section_channels),
            ]
            in_channels = section_channels
        layers += [nn.ReLU(), nn.Flatten()]
        self.convs = nn.Sequential(*layers)
        with torch.no_grad():
            conv_size = self.convs(torch.zeros(1, layers[0].in_channels, frame_size, frame_size)).shape[1]
        self.fc = nn.Sequential(nn.Linear(conv_size, output_size), nn.ReLU())
        self.output_size = output_size

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.fc(self.convs(scaled_frames(frames)))
