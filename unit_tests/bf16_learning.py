"""Shared by the --bf16_learning tests of the on-policy learners (PPO, PPO-ICM, PPO-RND, A2C, IMPALA, APPO): a tiny
Atari-shaped rollout, and one learner update from it without and with --bf16_learning that records the dtypes its
network's first convolution computed in and the gradient of its last step.

    float32, bf16 = bf16_learning.updates_without_and_with_bf16(build_learner, [bf16_learning.atari_rollout()])
"""

import dataclasses
import math
import types
from typing import Any, Callable

import gymnasium
import numpy as np
import pytest
import torch

FRAMES = (4, 84, 84)
NUM_ACTIONS = 4
# What builders read of an Atari vector environment: its spaces.
ATARI_SPACES = types.SimpleNamespace(
    single_observation_space=gymnasium.spaces.Box(0, 255, FRAMES, np.uint8), single_action_space=gymnasium.spaces.Discrete(NUM_ACTIONS)
)


def atari_rollout(unroll_length: int = 8, num_envs: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random uint8 frames [T, N, 4, 84, 84] and the frames after them [N, ...], random actions, rewards and old values
    [T + 1, N], old log-probs of a near-uniform policy give or take 0.1 (so the ratios spread around 1), and an episode
    end (env 0 after step 2); no rooms visited."""
    generator = torch.Generator().manual_seed(seed)
    discount = torch.full((unroll_length, num_envs), 0.99)
    discount[2, 0] = 0.0
    return {
        'observation': torch.randint(0, 256, (unroll_length, num_envs, *FRAMES), dtype=torch.uint8, generator=generator),
        'last_observation': torch.randint(0, 256, (num_envs, *FRAMES), dtype=torch.uint8, generator=generator),
        'action': torch.randint(NUM_ACTIONS, (unroll_length, num_envs), generator=generator),
        'log_prob': -math.log(NUM_ACTIONS) + 0.1 * torch.randn(unroll_length, num_envs, generator=generator),
        'value': torch.randn(unroll_length + 1, num_envs, generator=generator),
        'reward': torch.randn(unroll_length, num_envs, generator=generator),
        'discount': discount,
        'visited_rooms': torch.zeros(unroll_length, num_envs),
    }


@dataclasses.dataclass
class Update:
    conv_dtypes: list[torch.dtype]  # of the outputs of the network's first convolution, one per forward pass
    statistics: dict[str, float]  # the learner's statistics of the update
    gradient: torch.Tensor  # the network's gradient of the update's last step, flat

    def cosine_similarity(self, other: 'Update') -> float:
        return torch.nn.functional.cosine_similarity(self.gradient, other.gradient, dim=0).item()


def update_once(learner: Any, buffers: list[dict[str, torch.Tensor]]) -> Update:
    """`learner.update(buffers)`, and what it computed (`Update`)."""
    conv = next(module for module in learner.network.modules() if isinstance(module, torch.nn.Conv2d))
    dtypes = []
    hook = conv.register_forward_hook(lambda module, inputs, output: dtypes.append(output.dtype))
    try:
        learner.update(buffers)
    finally:
        hook.remove()
    gradient = torch.cat([parameter.grad.flatten() for parameter in learner.network.parameters() if parameter.grad is not None])
    return Update(dtypes, learner.learner_statistics(), gradient)


def updates_without_and_with_bf16(build_learner: Callable[[bool], Any], buffers: list[dict[str, torch.Tensor]]) -> tuple[Update, Update]:
    """One update on `buffers` of `build_learner(False)` and one of `build_learner(True)`, two learners that must start
    from the same network."""
    float32, bf16 = (update_once(build_learner(bf16_learning), buffers) for bf16_learning in (False, True))
    return float32, bf16


def check_the_nature_cnn_update(agent: Any, atari_settings: Any) -> None:
    """For a learner of `agent` (its `build_learner` and `make_network`) from `atari_settings` (run_atari's, on one
    minibatch where it has several): one update without and one with --bf16_learning from the same network; the first
    convolution computes in float32, then bfloat16, the loss (policy + value_coef x value - entropy_coef x entropy)
    moves, by under 2%, and the gradient keeps its direction (cosine > 0.99)."""

    def build_learner(bf16: bool) -> Any:
        settings = atari_settings.replace(bf16_learning=bf16)
        torch.manual_seed(0)
        return agent.build_learner(agent.make_network(ATARI_SPACES, settings), ATARI_SPACES, settings, 10, torch.device('cpu'))

    def loss(update: Update) -> float:
        statistics = update.statistics
        return statistics['policy_loss'] + atari_settings.value_coef * statistics['value_loss'] - atari_settings.entropy_coef * statistics['entropy']

    float32, bf16 = updates_without_and_with_bf16(build_learner, [atari_rollout()])
    assert float32.conv_dtypes == [torch.float32] and bf16.conv_dtypes == [torch.bfloat16]
    assert loss(bf16) == pytest.approx(loss(float32), rel=0.02) and loss(bf16) != loss(float32)
    assert bf16.cosine_similarity(float32) > 0.99
