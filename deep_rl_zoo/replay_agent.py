"""What every replay-based Q agent does the same way, so that each agent's file holds only its algorithm.

A `ReplayAgent` acts on a vector of environments (usually one) with one batched forward pass, stores every
step in its replay, and every `learn_interval` env steps (once the replay holds `min_replay_size`
transitions) draws a minibatch and takes one optimizer step on

    mean_b( w_b * loss_b )

where `loss_b` are the per-sample losses its subclass computes in `losses(batch)` and `w_b` are the
importance-sampling weights of a prioritized replay (Schaul et al. 2016, Algorithm 1, line 13) or 1 for a
uniform one. The weights multiply each sample's loss before the average, so they really scale each
sample's gradient. A prioritized replay then gets the new priorities `losses` returned for the batch.
The target network is refreshed from the online one every `target_network_update_interval` updates. With
`bf16_learning` the update's Nature CNN torsos run under bfloat16 autocast (`networks.common.bf16_torsos`); acting,
heads, losses, gradients and Adam stay float32.

A subclass sets `agent_name` and implements `losses`; it overrides `act` when it does not explore
epsilon-greedily on `online_network(observation)` (which returns Q-values [B, A] for every Q network here,
distributional ones included, so the same evaluation actor plays them all).
"""

import copy
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo import distributed, trackers
from deep_rl_zoo.greedy_actors import as_tensor, epsilon_greedy
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.common import bf16_torsos
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.settings import Replay, ValueLearning


class TransitionBatch(NamedTuple):
    """A replayed minibatch as tensors on the learner's device (see `replay.Transition`)."""

    s_tm1: torch.Tensor  # [B, *observation_shape]
    a_tm1: torch.Tensor  # [B] int64
    r_t: torch.Tensor  # [B] float32, discounted sum of the n-step rewards
    discount_t: torch.Tensor  # [B] float32, gamma**n * (1 - terminal)
    s_t: torch.Tensor  # [B, *observation_shape]


class ReplayAgent:
    """Epsilon-greedy acting, replay, the learning schedule, target refreshes and checkpoint state."""

    agent_name = ''

    def __init__(
        self,
        network: nn.Module,
        optimizer: torch.optim.Optimizer,
        replay: replay_lib.UniformReplay,
        exploration_epsilon: LinearSchedule,
        min_replay_size: int,
        learn_interval: int,
        target_network_update_interval: int,
        batch_size: int,
        max_grad_norm: float,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
        importance_sampling_exponent: LinearSchedule | None = None,
        bf16_learning: bool = False,
    ):
        if min_replay_size < batch_size:
            raise ValueError(f'--min_replay_size ({min_replay_size}) must be at least --batch_size ({batch_size})')
        self.prioritized = isinstance(replay, replay_lib.PrioritizedReplay)
        if self.prioritized and importance_sampling_exponent is None:
            raise ValueError('a prioritized replay needs an importance_sampling_exponent schedule')
        self.online_network = network.to(device)
        self.target_network = frozen_copy(self.online_network)
        self.optimizer = optimizer
        self.replay = replay
        self.exploration_epsilon = exploration_epsilon
        self.importance_sampling_exponent = importance_sampling_exponent
        self.min_replay_size = min_replay_size
        self.learn_interval = learn_interval
        self.target_network_update_interval = target_network_update_interval
        self.batch_size = batch_size
        self.max_grad_norm = max_grad_norm
        self.terminal_on_life_loss = terminal_on_life_loss
        self.device = device
        self.bf16_learning = bf16_learning
        self._random = np.random.default_rng(seed)
        self._last_observation: np.ndarray | None = None
        self.env_steps = 0
        self.learner_steps = 0
        self.statistics = trackers.LearnerStatistics()

    @property
    def epsilon(self) -> float:
        return self.exploration_epsilon(self.env_steps)

    def act(self, observation: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions for every environment, from one forward pass."""
        self._last_observation = observation
        return epsilon_greedy(self.online_network, observation, self.epsilon, self._random, self.device)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """Stores the step in replay and learns every `learn_interval` steps once replay holds enough."""
        self.store(action, step)
        self.env_steps += len(action)
        if self.env_steps % self.learn_interval < len(action) and self.replay.size >= self.min_replay_size:
            self.learn()

    def store(self, action: np.ndarray, step: VectorStep) -> None:
        """Adds the step to replay; a lost life is a learning terminal only with `terminal_on_life_loss`."""
        self.replay.add(
            self._last_observation,
            action,
            step.reward,
            self.learning_terminal(step),
            step.terminated | step.truncated,
            step.final_observation,
        )

    def learning_terminal(self, step: VectorStep) -> np.ndarray:
        """[N] bool: no bootstrapping past this step (game over, or a lost life when lives count)."""
        return step.terminated | (step.life_loss & self.terminal_on_life_loss)

    def losses(self, batch: TransitionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The algorithm: per-sample losses [B] (with gradient) and new priorities [B] (detached, >= 0)."""
        raise NotImplementedError

    def learn(self) -> None:
        """One gradient step on a replayed minibatch; refreshes the target network on schedule."""
        if self.prioritized:
            beta = self.importance_sampling_exponent(self.env_steps)
            sample = self.replay.sample_prioritized(self.batch_size, beta)
            transitions, weights = sample.transitions, as_tensor(sample.weights, self.device)
        else:
            transitions, weights = self.replay.sample(self.batch_size), None
        with bf16_torsos(self.bf16_learning):
            per_sample_loss, priorities = self.losses(self.batch_tensors(transitions))
        loss = (weights * per_sample_loss).mean() if weights is not None else per_sample_loss.mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.online_network.parameters(), self.max_grad_norm)
        self.optimizer.step()
        if self.prioritized:
            self.replay.update_priorities(sample.keys, priorities.cpu().numpy())
        self.learner_steps += 1
        self.statistics.record(loss=loss.item())
        if self.learner_steps % self.target_network_update_interval == 0:
            self.target_network.load_state_dict(self.online_network.state_dict())

    def batch_tensors(self, transitions: replay_lib.Transition) -> TransitionBatch:
        """The replayed batch as tensors on the learner's device."""
        return batch_tensors(transitions, self.device)

    def agent_statistics(self) -> dict[str, float]:
        statistics = {'exploration_epsilon': self.epsilon, 'replay_size': float(self.replay.size)}
        if self.prioritized:
            statistics['importance_sampling_exponent'] = self.importance_sampling_exponent(self.env_steps)
        return statistics

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def state_dict(self) -> dict[str, Any]:
        return {
            'network': self.online_network.state_dict(),
            'target_network': self.target_network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'env_steps': self.env_steps,
            'learner_steps': self.learner_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.online_network.load_state_dict(state['network'])
        self.target_network.load_state_dict(state['target_network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.env_steps = int(state['env_steps'])
        self.learner_steps = int(state['learner_steps'])


def batch_tensors(transitions: replay_lib.Transition, device: torch.device) -> TransitionBatch:
    """A replayed batch as tensors on `device` (discrete actions as int64)."""
    return TransitionBatch(
        s_tm1=as_tensor(transitions.s_tm1, device),
        a_tm1=as_tensor(transitions.a_tm1, device).long(),
        r_t=as_tensor(transitions.r_t, device),
        discount_t=as_tensor(transitions.discount_t, device),
        s_t=as_tensor(transitions.s_t, device),
    )


def frozen_copy(network: nn.Module) -> nn.Module:
    """A copy of `network` that takes no gradient (a target network)."""
    target = copy.deepcopy(network)
    target.requires_grad_(False)
    return target


def build_replay(env: VectorEnvironment, settings: Replay, prioritized: bool = False, num_streams: int | None = None) -> replay_lib.UniformReplay:
    """The replay of a run's `settings` (`settings.Replay` with `settings.Common`'s): uniform, or proportional
    prioritized (`settings.PrioritizedReplay`); one stream per environment of `env`, or `num_streams` (a learner fed
    by several actors' environments)."""
    observation_space = env.single_observation_space
    frame_stack = settings.environment_frame_stack if settings.environment_kind == 'atari' else 1  # only Atari's observations are frame stacks
    need = replay_lib.uniform_replay_bytes(settings.replay_capacity, observation_space.shape, observation_space.dtype, frame_stack, settings.compress_replay)
    available = distributed.available_memory_bytes()
    if need > available:
        compress = '' if settings.compress_replay else ' or pass --compress_replay'
        raise ValueError(
            f'--replay_capacity={settings.replay_capacity:,}: the replay would need {need / 2**30:,.1f} GiB of memory but {available / 2**30:,.1f} GiB '
            f'is available: lower it{compress}'
        )
    options = dict(
        capacity=settings.replay_capacity,
        observation_shape=observation_space.shape,
        observation_dtype=observation_space.dtype,
        n_step=settings.n_step,
        discount=settings.discount,
        num_streams=env.num_envs if num_streams is None else num_streams,
        frame_stack=frame_stack,
        compress=settings.compress_replay,
        seed=settings.seed,
    )
    if not prioritized:
        return replay_lib.UniformReplay(**options)
    return replay_lib.PrioritizedReplay(
        priority_exponent=settings.priority_exponent, priority_eps=settings.priority_eps, **options
    )


def build_agent(
    agent_class: type[ReplayAgent],
    network: nn.Module,
    env: VectorEnvironment,
    settings: ValueLearning,
    device: torch.device,
    prioritized: bool = False,
    replay: Any = None,
    **agent_options: Any,
) -> ReplayAgent:
    """An `agent_class` for `env` from the run's `settings` (its agent's class: `settings.ValueLearning` and, with
    `prioritized`, `settings.PrioritizedReplay`); `replay` replaces the one `build_replay` would make (e.g. DRQN's
    sequence replay); `agent_options` are the algorithm's own constructor arguments (e.g. the atoms of C51)."""
    importance_sampling_exponent = None
    if prioritized:
        importance_sampling_exponent = LinearSchedule(
            settings.importance_sampling_exponent_begin_value,
            settings.importance_sampling_exponent_end_value,
            settings.importance_sampling_exponent_decay_step,
        )
    return agent_class(
        network=network,
        optimizer=torch.optim.Adam(network.parameters(), lr=settings.learning_rate, eps=settings.adam_eps, fused=True),
        replay=build_replay(env, settings, prioritized) if replay is None else replay,
        exploration_epsilon=LinearSchedule(
            settings.exploration_epsilon_begin_value,
            settings.exploration_epsilon_end_value,
            settings.exploration_epsilon_decay_step,
        ),
        min_replay_size=settings.min_replay_size,
        learn_interval=settings.learn_interval,
        target_network_update_interval=settings.target_network_update_interval,
        batch_size=settings.batch_size,
        max_grad_norm=settings.max_grad_norm,
        terminal_on_life_loss=settings.life_loss_is_terminal,
        seed=settings.seed,
        device=device,
        importance_sampling_exponent=importance_sampling_exponent,
        bf16_learning=settings.bf16_learning,
        **agent_options,
    )
