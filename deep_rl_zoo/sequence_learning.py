"""Learning from a prioritized replay of sequences with stored recurrent states: what R2D2 ("Recurrent Experience
Replay in Distributed Reinforcement Learning", Kapturowski et al. 2019) and the agents built on it (NGU, Agent57)
share, and the sequence layout DRQN shares with them.

- the actors' exploration: Ape-X's epsilon ladder (`apex_epsilons`);
- the replay: sequences of burn_in + unroll_length steps, half of the learned steps overlapping (`sequence_layout`,
  `prioritized_sequence_replay`);
- the loss: burn-in unrolls from the stored state (`unroll_with_burn_in`), the steps a sequence learns
  (`learned_steps`), importance-weighted squared TD errors summed over time (`sequence_loss`);
- `SequenceLearner`: the actors' rollouts into the replay, the gradient steps they are owed, the step itself once an
  agent's loss is known (`gradient_step`), statistics and checkpoint state.
"""

from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo import trackers
from deep_rl_zoo.greedy_actors import as_tensor
from deep_rl_zoo.networks.common import NatureCnnTorso, bf16_torsos, channels_last_steps
from deep_rl_zoo.replay_agent import frozen_copy
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.settings import RecurrentReplay


def apex_epsilons(num_actors: int, base: float = 0.4, alpha: float = 7.0) -> np.ndarray:
    """Ape-X's exploration ladder (Horgan et al. 2018, section 4.1): actor i of N acts with base^(1 + alpha i / (N - 1)),
    [N] float64; a single actor acts with `base`."""
    if num_actors < 1:
        raise ValueError(f'num_actors must be >= 1, got {num_actors}')
    if num_actors == 1:
        return np.array([base])
    return base ** (1.0 + alpha * np.arange(num_actors) / (num_actors - 1))


def sequence_layout(burn_in: int, unroll_length: int) -> tuple[int, int]:
    """(sequence length, overlap): burn_in + unroll_length steps; consecutive sequences of an episode start
    ceil(unroll_length / 2) steps apart, so their learned parts overlap by half (R2D2's 80 steps, 40 apart)."""
    return burn_in + unroll_length, burn_in + unroll_length // 2


def prioritized_sequence_replay(
    settings: RecurrentReplay, observation_space: Any, replay_class: type[replay_lib.PrioritizedSequenceReplay] = replay_lib.PrioritizedSequenceReplay, **options: Any
) -> replay_lib.PrioritizedSequenceReplay:
    """The learner's replay from the run's `settings` (`r2d2/settings.py`'s R2d2Settings: `settings.RecurrentReplay`'s,
    `Replay`'s, `PrioritizedReplay`'s, the actors'): `sequence_layout`'s sequences of observations of
    `observation_space`, one stream per actor environment; `options` are the rest of `replay_class`'s arguments
    (discount, state size)."""
    if settings.min_replay_size > settings.replay_capacity:
        raise ValueError(f'--min_replay_size ({settings.min_replay_size}) must be at most --replay_capacity ({settings.replay_capacity}) (both in sequences)')
    sequence_length, overlap = sequence_layout(settings.burn_in, settings.unroll_length)
    return replay_class(
        priority_exponent=settings.priority_exponent, priority_eps=settings.priority_eps, capacity=settings.replay_capacity,
        sequence_length=sequence_length, overlap=overlap, observation_shape=observation_space.shape, observation_dtype=observation_space.dtype,
        num_streams=settings.num_actors * settings.num_envs_per_actor, compress=settings.compress_replay, seed=settings.seed, **options,
    )  # fmt: skip


def pad_first(first: torch.Tensor) -> torch.Tensor:
    """The [T, B] episode-start mask of a sequence's steps, extended by a False row for its T + 1-th observation."""
    return torch.cat([first, torch.zeros_like(first[:1])])


def time_major(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A replay batch's [B, T, ...] array as a [T, B, ...] tensor on `device`."""
    return as_tensor(array, device).transpose(0, 1)


def unroll_with_burn_in(
    network: nn.Module, observation: torch.Tensor, inputs: tuple, state: tuple[torch.Tensor, torch.Tensor], first: torch.Tensor, burn_in: int
) -> torch.Tensor:
    """Q-values [T, B, ...] of `network(observation, inputs, state, first)` unrolled from `state` over `observation` [T,
    B, ...] with its per-step `inputs` (a NamedTuple of [T, B] tensors: R2D2's `PreviousStep`, NGU's `StepInputs`); the
    state after the first `burn_in` steps is detached in sequences that do not start an episode (`first[0]` False), so
    no gradient reaches their stored state through the warm-up (R2D2's burn-in)."""
    if burn_in == 0:
        return network(observation, inputs, state, first)[0]
    q_burn_in, state = network(observation[:burn_in], type(inputs)(*(x[:burn_in] for x in inputs)), state, first[:burn_in])
    starts_episode = first[0].unsqueeze(1)
    state = tuple(torch.where(starts_episode, part, part.detach()) for part in state)
    q_rest, _ = network(observation[burn_in:], type(inputs)(*(x[burn_in:] for x in inputs)), state, first[burn_in:])
    return torch.cat([q_burn_in, q_rest])


def learned_steps(mask: torch.Tensor, first: torch.Tensor, burn_in: int) -> torch.Tensor:
    """The steps [T, B] a batch of sequences learns (`mask`, `first` [T, B]): the real steps after the burn-in, and
    every real step of a sequence that starts an episode (its zero state is exact)."""
    return mask & ((torch.arange(mask.shape[0], device=mask.device) >= burn_in)[:, None] | first[0])


def sequence_loss(td_error: torch.Tensor, learned: torch.Tensor, importance_weights: torch.Tensor) -> torch.Tensor:
    """The loss [] of TD errors [T, B] on the `learned` steps [T, B] of B sequences with importance weights [B]:
    mean_b w_b sum_t 0.5 td_t,b^2. Summed over time as acme's R2D2 learner (averaging over time instead shrinks every
    gradient component below Adam's eps 1e-3 on Atari sequences: a first step 21.5x smaller than acme's on Pong)."""
    return (importance_weights * (0.5 * td_error**2 * learned.to(td_error.dtype)).sum(dim=0)).mean()


class SequenceLearner:
    """The learner of R2D2's family on a prioritized sequence replay: `update` adds the actors' rollouts to the replay
    (one stream per actor environment) and calls the agent's `learn` once per `learn_interval` env steps added since
    the replay first held `min_replay_size` sequences; an agent's `learn` samples (`sample`), unrolls (`unroll`),
    computes its loss and priorities and ends with `gradient_step`. The Q network (`q_network`; NGU's is one part of its networks) is
    learned by Adam and copied to the target network every `target_network_update_interval` gradient steps. With
    `bf16_learning` the Nature CNN torsos of both unrolls run under bfloat16 autocast (`networks.common.bf16_torsos`);
    the LSTM, heads, losses, gradients and Adam stay float32, as does whatever an agent learns outside `unroll`."""

    def __init__(
        self,
        network: nn.Module,
        replay: replay_lib.PrioritizedSequenceReplay,
        *,
        learning_rate: float,
        adam_eps: float,
        batch_size: int,
        min_replay_size: int,
        learn_interval: int,
        target_network_update_interval: int,
        burn_in: int,
        priority_eta: float,
        value_rescaling_eps: float,
        importance_sampling_exponent: LinearSchedule,
        max_grad_norm: float,
        count_rooms: bool = False,
        bf16_learning: bool = False,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        self.target_network = frozen_copy(self.q_network)
        self.optimizer = torch.optim.Adam(self.q_network.parameters(), lr=learning_rate, eps=adam_eps)
        self.replay = replay
        self.batch_size = batch_size
        self.min_replay_size = min_replay_size
        self.learn_interval = learn_interval
        self.target_network_update_interval = target_network_update_interval
        self.burn_in = burn_in
        self.priority_eta = priority_eta
        self.value_rescaling_eps = value_rescaling_eps
        self.importance_sampling_exponent = importance_sampling_exponent
        self.max_grad_norm = max_grad_norm
        self.bf16_learning = bf16_learning
        self.frame_torsos = any(isinstance(module, NatureCnnTorso) for module in self.q_network.modules())  # Atari's
        self.device = device
        self.rooms = trackers.RoomStatistics(active=count_rooms)
        self.env_steps = 0  # steps added to replay
        self.learning_env_steps = 0  # steps added while the replay held min_replay_size sequences
        self.learner_steps = 0  # gradient steps
        self.statistics = trackers.LearnerStatistics()

    @property
    def q_network(self) -> nn.Module:
        """The network the loss learns and the target network copies."""
        return self.network

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """Adds each rollout's steps (with their 'extras' where the rollouts have them) to its environments' replay
        streams, then takes the gradient steps owed."""
        for buffer in buffers:
            self.rooms.record(buffer)  # statistics only: the replay takes the fields learning needs
            fields = {name: tensor.numpy() for name, tensor in buffer.items()}
            num_steps, num_envs = fields['reward'].shape
            streams = int(fields['first_stream'][0]) + np.arange(num_envs)
            extras = fields.get('extras')
            for t in range(num_steps):
                self.replay.add(
                    fields['observation'][t], fields['action'][t], fields['reward'][t], fields['terminal'][t], fields['episode_end'][t],
                    fields['final_observation'][t], recurrent_state=fields['recurrent_state'][t], streams=streams,
                    extras=None if extras is None else extras[t],
                )  # fmt: skip
                self.env_steps += num_envs
                if self.replay.num_sequences >= self.min_replay_size:
                    self.learning_env_steps += num_envs
        while self.learner_steps < self.learning_env_steps // self.learn_interval:
            self.learn()

    def sample(self) -> replay_lib.PrioritizedSequenceSample:
        """B sequences drawn by priority, with importance weights of the exponent scheduled at this env step."""
        return self.replay.sample_prioritized(self.batch_size, self.importance_sampling_exponent(self.env_steps))

    def unroll(self, observation: torch.Tensor, inputs: tuple, state: tuple[torch.Tensor, torch.Tensor], first_all: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Q-values [T + 1, B, ...] of the online network (with burn-in) and, without gradient, of the target
        network, both unrolled from the stored `state` over a batch's T + 1 observations with their `inputs` and
        episode starts (`first_all`: `pad_first` of the steps'); their torsos in bfloat16 with `bf16_learning`. Atari
        frames are laid out channels-last once for the three unrolls that fold them (`channels_last_steps`)."""
        if self.frame_torsos:
            observation = channels_last_steps(observation)
        with bf16_torsos(self.bf16_learning):
            q_all = unroll_with_burn_in(self.q_network, observation, inputs, state, first_all, self.burn_in)
            with torch.no_grad():
                q_target, _ = self.target_network(observation, inputs, state, first_all)
        return q_all, q_target

    def clip_gradients(self) -> dict[str, torch.Tensor]:
        """Clips the Q network's gradient norm to `max_grad_norm` (none when 0); {'grad_norm': its norm before}."""
        limit = self.max_grad_norm if self.max_grad_norm > 0 else float('inf')
        return {'grad_norm': nn.utils.clip_grad_norm_(self.q_network.parameters(), limit)}

    def gradient_step(self, sample: replay_lib.PrioritizedSequenceSample, loss: torch.Tensor, priorities: torch.Tensor, **statistics: Any) -> None:
        """Adam on `loss` with the clipped gradient, the sampled sequences' new `priorities` [B], the target network's
        copy when due; records the loss, `statistics`, the priorities' mean and the smallest importance weight."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norms = self.clip_gradients()
        self.optimizer.step()
        self.replay.update_priorities(sample.keys, priorities.cpu().numpy())
        self.learner_steps += 1
        if self.learner_steps % self.target_network_update_interval == 0:
            self.target_network.load_state_dict(self.q_network.state_dict())
        self.statistics.record(
            loss=loss.detach(), **statistics, priority_mean=priorities.mean(), importance_weight_min=float(sample.weights.min()), **grad_norms
        )

    def learner_statistics(self) -> dict[str, float]:
        return self.statistics.means()

    def agent_statistics(self) -> dict[str, float]:
        """Replay size in sequences and its memory: per sequence, and for a full replay (MiB); Montezuma's rooms."""
        per_sequence = self.replay.bytes_per_sequence()
        return {
            'replay_sequences': float(self.replay.num_sequences),
            'replay_bytes_per_sequence': per_sequence,
            'replay_full_mib': per_sequence * self.replay.capacity / 2**20,
            **self.rooms.statistics(),
        }

    def state_dict(self) -> dict[str, Any]:
        """Networks, optimizer and counters (the replay is saved beside them only with --save_replay)."""
        return {
            'network': self.network.state_dict(),
            'target_network': self.target_network.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'env_steps': self.env_steps,
            'learning_env_steps': self.learning_env_steps,
            'learner_steps': self.learner_steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.network.load_state_dict(state['network'])
        self.target_network.load_state_dict(state['target_network'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.env_steps = int(state['env_steps'])
        self.learning_env_steps = int(state['learning_env_steps'])
        self.learner_steps = int(state['learner_steps'])
