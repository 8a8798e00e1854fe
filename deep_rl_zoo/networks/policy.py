"""Actor-critic networks: a policy head (categorical logits or a diagonal Gaussian) and a state-value head."""

from typing import NamedTuple

import torch
from torch import nn

from deep_rl_zoo.networks.common import MlpTorso, NatureCnnTorso, orthogonal_init
from deep_rl_zoo.normalizer import ObservationNormalizer


class CategoricalActorCriticOutput(NamedTuple):
    logits: torch.Tensor  # [B, A]
    value: torch.Tensor  # [B]


class GaussianActorCriticOutput(NamedTuple):
    mean: torch.Tensor  # [B, D]
    log_std: torch.Tensor  # [B, D]
    value: torch.Tensor  # [B]


class CategoricalActorCritic(nn.Module):
    """pi(.|s) as logits and V(s); the two heads share `torso`, or each has its own when `value_torso` is given.

    Heads use the small-gain orthogonal initialisation of the PPO implementations (Andrychowicz et al. 2021,
    "What matters in on-policy RL"): 0.01 for the policy so the first policy is near uniform, 1 for the value.
    """

    def __init__(self, torso: nn.Module, num_actions: int, value_torso: nn.Module | None = None):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.torso = orthogonal_init(torso)
        self.value_torso = orthogonal_init(value_torso) if value_torso is not None else None
        self.policy_head = orthogonal_init(nn.Linear(torso.output_size, num_actions), gain=0.01)
        value_size = (value_torso or torso).output_size
        self.value_head = orthogonal_init(nn.Linear(value_size, 1), gain=1.0)

    def forward(self, observation: torch.Tensor) -> CategoricalActorCriticOutput:
        features = self.torso(observation)
        value_features = features if self.value_torso is None else self.value_torso(observation)
        return CategoricalActorCriticOutput(self.policy_head(features), self.value_head(value_features).squeeze(-1))


class GaussianActorCritic(nn.Module):
    """A diagonal Gaussian policy with a state-independent learned log std, and V(s), on separate MLP torsos.

    The mean is unbounded; the environment clips actions to their bounds (the usual PPO continuous setup).
    With `normalize_observations`, inputs pass through a running-statistics `ObservationNormalizer` first.
    """

    def __init__(
        self,
        observation_size: int,
        action_size: int,
        hidden_sizes=(64, 64),
        initial_log_std: float = 0.0,
        normalize_observations: bool = False,
    ):
        super().__init__()
        self.observation_normalizer = ObservationNormalizer(observation_size) if normalize_observations else None
        self.policy_torso = orthogonal_init(MlpTorso(observation_size, hidden_sizes, nn.Tanh))
        self.value_torso = orthogonal_init(MlpTorso(observation_size, hidden_sizes, nn.Tanh))
        self.mean_head = orthogonal_init(nn.Linear(self.policy_torso.output_size, action_size), gain=0.01)
        self.value_head = orthogonal_init(nn.Linear(self.value_torso.output_size, 1), gain=1.0)
        self.log_std = nn.Parameter(torch.full((action_size,), float(initial_log_std)))

    def forward(self, observation: torch.Tensor) -> GaussianActorCriticOutput:
        if self.observation_normalizer is not None:
            observation = self.observation_normalizer(observation)
        mean = self.mean_head(self.policy_torso(observation))
        value = self.value_head(self.value_torso(observation)).squeeze(-1)
        return GaussianActorCriticOutput(mean, self.log_std.expand_as(mean), value)


def mlp_actor_critic(observation_size: int, num_actions: int, hidden_sizes=(64, 64)) -> CategoricalActorCritic:
    """Separate tanh MLPs for the policy and the value, as in the PPO paper's classic-control setup."""
    return CategoricalActorCritic(
        MlpTorso(observation_size, hidden_sizes, nn.Tanh), num_actions, MlpTorso(observation_size, hidden_sizes, nn.Tanh)
    )


def nature_cnn_actor_critic(num_actions: int, frame_stack: int = 4) -> CategoricalActorCritic:
    """One shared Nature CNN torso for both heads, as in the PPO paper's Atari setup."""
    return CategoricalActorCritic(NatureCnnTorso(frame_stack), num_actions)


class CategoricalPolicyOutput(NamedTuple):
    logits: torch.Tensor  # [B, A]


class CategoricalPolicy(nn.Module):
    """pi(.|s) as logits, with no value head (REINFORCE without a baseline).

    The head has the small-gain (0.01) orthogonal initialisation of `CategoricalActorCritic`, so the first policy
    is near uniform."""

    def __init__(self, torso: nn.Module, num_actions: int):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.torso = orthogonal_init(torso)
        self.policy_head = orthogonal_init(nn.Linear(torso.output_size, num_actions), gain=0.01)

    def forward(self, observation: torch.Tensor) -> CategoricalPolicyOutput:
        return CategoricalPolicyOutput(self.policy_head(self.torso(observation)))


def mlp_policy(observation_size: int, num_actions: int, hidden_sizes=(64, 64)) -> CategoricalPolicy:
    """The policy half of `mlp_actor_critic`: a tanh MLP and logits."""
    return CategoricalPolicy(MlpTorso(observation_size, hidden_sizes, nn.Tanh), num_actions)


def nature_cnn_policy(num_actions: int, frame_stack: int = 4) -> CategoricalPolicy:
    """A Nature CNN torso and logits."""
    return CategoricalPolicy(NatureCnnTorso(frame_stack), num_actions)


def _discrete_inputs(env, agent_name: str) -> tuple[tuple[int, ...], int]:
    """(observation shape, number of actions) of `env`; continuous actions are refused, naming `agent_name`."""
    action_space = env.single_action_space
    if action_space.shape:
        raise ValueError(f'{agent_name} takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    return env.single_observation_space.shape, int(action_space.n)


def actor_critic_for(env, agent_name: str) -> CategoricalActorCritic:
    """The categorical actor-critic of the policy-gradient agents for `env` (a vector environment): one Nature CNN
    torso under both heads for Atari frame stacks, separate tanh MLPs for vector observations."""
    observation_shape, num_actions = _discrete_inputs(env, agent_name)
    if len(observation_shape) == 3:
        return nature_cnn_actor_critic(num_actions, observation_shape[0])
    return mlp_actor_critic(observation_shape[0], num_actions)


def policy_for(env, agent_name: str) -> CategoricalPolicy:
    """A categorical policy without value head for `env`: the Nature CNN for Atari frame stacks, a tanh MLP for
    vector observations."""
    observation_shape, num_actions = _discrete_inputs(env, agent_name)
    if len(observation_shape) == 3:
        return nature_cnn_policy(num_actions, observation_shape[0])
    return mlp_policy(observation_shape[0], num_actions)
