"""Actor-critic networks: a policy head (categorical logits or a diagonal Gaussian) and a state-value head; IMPALA's
variant with an LSTM core between the torso and the heads."""

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
    With an `observation_normalizer` (vector observations), inputs pass through it first; the learner updates it.
    """

    def __init__(
        self,
        torso: nn.Module,
        num_actions: int,
        value_torso: nn.Module | None = None,
        observation_normalizer: ObservationNormalizer | None = None,
    ):
        super().__init__()
        if num_actions < 1:
            raise ValueError(f'num_actions must be >= 1, got {num_actions}')
        self.observation_normalizer = observation_normalizer
        self.torso = orthogonal_init(torso)
        self.value_torso = orthogonal_init(value_torso) if value_torso is not None else None
        self.policy_head = orthogonal_init(nn.Linear(torso.output_size, num_actions), gain=0.01)
        value_size = (value_torso or torso).output_size
        self.value_head = orthogonal_init(nn.Linear(value_size, 1), gain=1.0)

    def forward(self, observation: torch.Tensor) -> CategoricalActorCriticOutput:
        if self.observation_normalizer is not None:
            observation = self.observation_normalizer(observation)
        features = self.torso(observation)
        value_features = features if self.value_torso is None else self.value_torso(observation)
        return CategoricalActorCriticOutput(self.policy_head(features), self.value_head(value_features).squeeze(-1))



class RecurrentActorCriticOutput(NamedTuple):
    logits: torch.Tensor  # [T, B, A]
    value: torch.Tensor  # [T, B]
    state: tuple[torch.Tensor, torch.Tensor]  # (h, c) after the last step, each [B, core_size]


class RecurrentActorCritic(nn.Module):
    """IMPALA's network with its LSTM core (Espeholt et al. 2018, figure 3): the torso's output, the one-hot
    previous action and the previous reward clipped to [-1, 1] feed an LSTM of `core_size` units whose output feeds
    the policy logits and the value V(s).

    `forward(observation [T, B, ...], prev_action [T, B], prev_reward [T, B], episode_start [T, B], state)` unrolls
    the core over the T steps from `state` = (h, c), each [B, core_size], and returns logits [T, B, A], values
    [T, B] and the state after the last step. Where `episode_start[t, b]` is True, step t is the first of an
    episode of environment b: its state is zeroed before that step (state * (1 - episode_start)), and so are its
    previous action and reward (there are none). The heads have `CategoricalActorCritic`'s initialisation.
    """

    def __init__(self, torso: nn.Module, num_actions: int, core_size: int = 256):
        super().__init__()
        if num_actions < 1 or core_size < 1:
            raise ValueError(f'num_actions and core_size must be >= 1, got {num_actions} and {core_size}')
        self.torso = orthogonal_init(torso)
        self.core = nn.LSTMCell(torso.output_size + num_actions + 1, core_size)
        self.policy_head = orthogonal_init(nn.Linear(core_size, num_actions), gain=0.01)
        self.value_head = orthogonal_init(nn.Linear(core_size, 1), gain=1.0)
        self.num_actions = num_actions
        self.core_size = core_size

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The zero state (h, c) of `batch_size` environments, each [batch_size, core_size], on the network's device."""
        zeros = torch.zeros(batch_size, self.core_size, device=self.value_head.weight.device)
        return zeros, zeros.clone()

    def forward(
        self,
        observation: torch.Tensor,
        prev_action: torch.Tensor,
        prev_reward: torch.Tensor,
        episode_start: torch.Tensor,
        state: tuple[torch.Tensor, torch.Tensor],
    ) -> RecurrentActorCriticOutput:
        num_steps, batch_size = observation.shape[:2]
        for name, value in (('prev_action', prev_action), ('prev_reward', prev_reward), ('episode_start', episode_start)):
            if value.shape != (num_steps, batch_size):
                raise ValueError(f'{name} must have shape [T, B]=({num_steps}, {batch_size}), got {tuple(value.shape)}')
        features = self.torso(observation.flatten(0, 1)).view(num_steps, batch_size, -1)
        keep = 1.0 - episode_start.to(features.dtype).unsqueeze(-1)  # [T, B, 1]: 0 at an episode's first step
        one_hot_action = nn.functional.one_hot(prev_action.long(), self.num_actions).to(features.dtype)
        reward = prev_reward.to(features.dtype).clamp(-1.0, 1.0).unsqueeze(-1)
        core_input = torch.cat([features, one_hot_action * keep, reward * keep], dim=-1)
        h, c = state
        outputs = []
        for t in range(num_steps):
            h, c = self.core(core_input[t], (h * keep[t], c * keep[t]))
            outputs.append(h)
        core_output = torch.stack(outputs)
        return RecurrentActorCriticOutput(self.policy_head(core_output), self.value_head(core_output).squeeze(-1), (h, c))


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


def mlp_actor_critic(observation_size: int, num_actions: int, hidden_sizes=(64, 64), normalize_observations: bool = False) -> CategoricalActorCritic:
    """Separate tanh MLPs for the policy and the value, as in the PPO paper's classic-control setup; with
    `normalize_observations`, a running-statistics `ObservationNormalizer` in front of both."""
    return CategoricalActorCritic(
        MlpTorso(observation_size, hidden_sizes, nn.Tanh),
        num_actions,
        MlpTorso(observation_size, hidden_sizes, nn.Tanh),
        ObservationNormalizer(observation_size) if normalize_observations else None,
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


def discrete_inputs(env, agent_name: str) -> tuple[tuple[int, ...], int]:
    """(observation shape, number of actions) of `env`; continuous actions are refused, naming `agent_name`."""
    action_space = env.single_action_space
    if action_space.shape:
        raise ValueError(f'{agent_name} takes discrete actions only; for continuous control use deep_rl_zoo.ppo.run_continuous')
    return env.single_observation_space.shape, int(action_space.n)


def actor_critic_for(env, agent_name: str) -> CategoricalActorCritic:
    """The categorical actor-critic of the policy-gradient agents for `env` (a vector environment): one Nature CNN
    torso under both heads for Atari frame stacks, separate tanh MLPs for vector observations."""
    observation_shape, num_actions = discrete_inputs(env, agent_name)
    if len(observation_shape) == 3:
        return nature_cnn_actor_critic(num_actions, observation_shape[0])
    return mlp_actor_critic(observation_shape[0], num_actions)


def policy_for(env, agent_name: str) -> CategoricalPolicy:
    """A categorical policy without value head for `env`: the Nature CNN for Atari frame stacks, a tanh MLP for
    vector observations."""
    observation_shape, num_actions = discrete_inputs(env, agent_name)
    if len(observation_shape) == 3:
        return nature_cnn_policy(num_actions, observation_shape[0])
    return mlp_policy(observation_shape[0], num_actions)


def recurrent_actor_critic_for(env, agent_name: str, torso: nn.Module | None = None, core_size: int = 256) -> RecurrentActorCritic:
    """`RecurrentActorCritic` for `env` (a vector environment): `torso`, or by default the Nature CNN for Atari frame
    stacks and a tanh MLP (64, 64) for vector observations, under an LSTM core of `core_size` units."""
    observation_shape, num_actions = discrete_inputs(env, agent_name)
    if torso is None:
        torso = NatureCnnTorso(observation_shape[0]) if len(observation_shape) == 3 else MlpTorso(observation_shape[0], (64, 64), nn.Tanh)
    return RecurrentActorCritic(torso, num_actions, core_size)
