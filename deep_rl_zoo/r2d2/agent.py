"""R2D2: "Recurrent Experience Replay in Distributed Reinforcement Learning" (Kapturowski et al. 2019).

Actor processes never wait for the learner (the asynchronous mode of `main_loop.run_actors_and_learner`). Each steps
a vector of environments with its copy of a recurrent dueling Q network (`networks.recurrent_value`: its LSTM sees
the observation's features, the previous action one-hot and the previous reward, as the paper's), epsilon-greedy
with a fixed epsilon per environment from the Ape-X ladder (Horgan et al. 2018): environment i of all N acts with
epsilon_i = 0.4^(1 + 7 i / (N - 1)) (Ape-X's actors are our environments; one environment of one actor acts with
0.4). The LSTM state advances on every step, random ones included; it and the previous action and reward are zeroed
at episode starts. A rollout is `actor_update_interval` steps per environment: the steps and the actor's carried
state before each ((h, c), a_t-1, r_t-1), written to shared memory; between rollouts the actor takes the newest
parameters (the paper pulls them every 400 steps).

The learner adds each rollout's steps to one prioritized replay of sequences (`replay.PrioritizedSequenceReplay`),
one stream per actor environment: sequences of burn_in + unroll_length steps, starting ceil(unroll_length / 2) steps
apart within an episode (the paper: 80 steps, overlapping by 40), padded at an episode's end without repeating the
overlap, each with the actor's carried state before its first step (section 3, "stored state"; with the previous
action and reward, the network's inputs at that step). Once the replay
holds `min_replay_size` sequences it takes one gradient step per `learn_interval` env steps added:

1. draw B sequences with probability p^alpha / sum p^alpha, importance weights w = (N P)^-beta / max w;
2. unroll the online network from the stored states over the sequences and the observation after their last step;
   the first burn_in steps only warm the state up (no gradient flows into the stored state through them, and they
   are not learned) in sequences that start mid-episode; a sequence that starts an episode learns every step (its
   zero state is exact). The target network unrolls the same way, without gradient;
3. targets y_t: transformed n-step double-Q (`transformed_returns.transformed_n_step_q_targets`: h^-1 of the target
   network's value of the online argmax, n-step discounted, back through h);
4. loss: mean over sequences of w_b * sum over the learned steps of 0.5 (y_t - Q(s_t, a_t))^2 (`sequence_loss`: summed
   over time as acme's R2D2, the scale the paper's Adam eps 1e-3 was tuned for); Adam, gradient norm clipped;
5. new priorities eta max_t |delta_t| + (1 - eta) mean_t |delta_t| (`transformed_returns.sequence_priorities`);
6. every `target_network_update_interval` gradient steps the target network is copied from the online one.

Steps 1, 2, 4 and 6 and the Adam step are `sequence_learning`'s, shared with NGU and Agent57; this file holds the
actors, the network's inputs and the targets.

Time-limit truncations are bootstrapped from the observation that ended the episode; terminals (and lost lives with
--terminal_on_life_loss) are not. Checkpoints hold the replay only with --save_replay; otherwise a resumed run refills
it before it learns again. On Montezuma's Revenge the actors count the rooms each episode visits
(`visited_rooms_mean` / `visited_rooms_max`, as NGU and PPO-RND): the baseline without intrinsic reward.
"""

from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import gym_env, main_loop, transformed_returns
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.greedy_actors import as_tensor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.recurrent_value import (
    PreviousStep,
    RecurrentDuelingQNetwork,
    lstm_size,
    minigrid_recurrent_dueling_q_network,
    mlp_recurrent_dueling_q_network,
    nature_cnn_recurrent_dueling_q_network,
)
from deep_rl_zoo.r2d2.settings import R2d2Settings
from deep_rl_zoo.rollouts import transition_spec, visited_rooms_spec, write_visited_rooms
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.sequence_learning import (
    SequenceLearner,
    apex_epsilons,
    learned_steps,
    pad_first,
    prioritized_sequence_replay,
    sequence_layout,
    sequence_loss,
    time_major,
)
from deep_rl_zoo.trackers import EpisodeTracker


def rollout_spec(steps: int, kind: str) -> Callable[..., dict[str, tuple[tuple[int, ...], torch.dtype]]]:
    """The spec function (env, num_envs, _) -> shapes of an `R2d2Actor`'s buffer for rollouts of `steps` steps per
    environment (`actor_update_interval`; the core's third argument, the learned sequence length, is not the rollout
    length here) of an environment of `kind`: `rollouts.transition_spec`, the actor's carried state before each step
    ('recurrent_state' [T, N, 2 * lstm_size(kind) + 2]: the LSTM's (h, c), a_t-1, r_t-1; `R2d2Policy.carried_state`), the index of the actor's first environment among all of the run
    ('first_stream' [1]) and 'visited_rooms' [T, N] (Montezuma's Revenge: the rooms of the episode ending there, else
    0; never replayed)."""

    def spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {
            **transition_spec(env, num_envs, steps),
            'recurrent_state': ((steps, num_envs, carried_state_size(lstm_size(kind))), torch.float32),
            'first_stream': ((1,), torch.int64),
            **visited_rooms_spec(num_envs, steps),
        }

    return spec


def carried_state_size(hidden_size: int) -> int:
    """Floats of an R2D2 actor's carried state: the LSTM's h and c, the previous action and the previous reward."""
    return 2 * hidden_size + 2


class R2d2Policy:
    """Epsilon-greedy acting with R2D2's network for a vector of environments (an actor's, one epsilon each, or the
    evaluation's): it carries each environment's LSTM state and previous action and reward from step to step, all
    zeroed where an episode starts and at `reset()`, and the state advances on random (epsilon) steps too."""

    def __init__(self, network: RecurrentDuelingQNetwork, epsilon: float | np.ndarray, seed: int = 0, device: torch.device = torch.device('cpu')):
        self.network = network
        self.epsilon = epsilon
        self.device = device
        self._random = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        """Forgets every environment's episode: the next `act` starts them all."""
        self.state: tuple[torch.Tensor, torch.Tensor] | None = None
        self._previous: tuple[np.ndarray, np.ndarray] | None = None  # (action, reward) [N] each
        self._first: np.ndarray | None = None  # [N] bool: the env starts an episode at the next act

    def _start(self, num_envs: int) -> None:
        if self._previous is None:
            self._previous = (np.zeros(num_envs, np.int64), np.zeros(num_envs, np.float32))
            self._first = np.ones(num_envs, bool)

    @torch.no_grad()
    def act(self, observation: np.ndarray) -> np.ndarray:
        self._start(len(observation))
        previous = PreviousStep(*(as_tensor(value, self.device).unsqueeze(0) for value in self._previous))
        first = as_tensor(self._first, self.device).unsqueeze(0)
        q_values, self.state = self.network(as_tensor(observation, self.device).unsqueeze(0), previous, self.state, first)
        actions = q_values.squeeze(0).argmax(dim=-1).cpu().numpy()
        explore = self._random.random(len(actions)) < self.epsilon
        actions[explore] = self._random.integers(self.network.num_actions, size=int(explore.sum()))
        self._first = np.zeros(len(actions), bool)
        return actions

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """The next step's previous action and reward (zeros where the episode ended: the next step starts one)."""
        ended = step.terminated | step.truncated
        self._previous = (np.where(ended, 0, action).astype(np.int64), np.where(ended, 0.0, step.reward).astype(np.float32))
        self._first = ended.copy()

    def carried_state(self, num_envs: int) -> np.ndarray:
        """What the next step starts from, [N, 2 * hidden_size + 2]: (h, c), zeros where an episode starts, then the
        previous action and reward."""
        self._start(num_envs)
        if self.state is None:
            lstm_state = np.zeros((num_envs, 2 * self.network.hidden_size), np.float32)
        else:
            lstm_state = torch.cat(self.state, dim=1).cpu().numpy()
            lstm_state[self._first] = 0.0
        return np.concatenate([lstm_state, np.stack(self._previous, axis=1).astype(np.float32)], axis=1)


def split_carried_state(carried: torch.Tensor, hidden_size: int) -> tuple[tuple[torch.Tensor, torch.Tensor], PreviousStep]:
    """(h, c) [B, hidden_size] each and the previous action and reward [1, B] of carried states [B, 2 * hidden + 2]."""
    state = (carried[:, :hidden_size], carried[:, hidden_size : 2 * hidden_size])
    return state, PreviousStep(carried[None, :, 2 * hidden_size].long(), carried[None, :, 2 * hidden_size + 1])


def sequence_inputs(first_previous: PreviousStep, action: torch.Tensor, reward: torch.Tensor, first_all: torch.Tensor) -> PreviousStep:
    """The previous action and reward [T + 1, B] at a batch of sequences' T + 1 observations: the stored ones at the
    first, then each step's own action and reward, zeroed where an episode starts (`first_all` [T + 1, B])."""
    previous_action = torch.cat([first_previous.action, action])
    previous_reward = torch.cat([first_previous.reward, reward])
    return PreviousStep(torch.where(first_all, 0, previous_action), torch.where(first_all, 0.0, previous_reward))


class R2d2Actor:
    """Steps a vector of environments epsilon-greedily (one epsilon per environment) with a recurrent Q network and
    writes `unroll_length` steps per environment per `collect` (see `rollout_spec`)."""

    def __init__(
        self,
        network: nn.Module,
        env: VectorEnvironment,
        unroll_length: int,
        epsilons: np.ndarray,
        first_stream: int,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        if len(epsilons) != env.num_envs:
            raise ValueError(f'one epsilon per environment: got {len(epsilons)} for {env.num_envs} environments')
        self.network = network.to(device)
        self.env = env
        self.unroll_length = unroll_length
        self.first_stream = first_stream
        self.terminal_on_life_loss = terminal_on_life_loss
        self.policy = R2d2Policy(self.network, np.asarray(epsilons, np.float64), seed, device)
        self._episodes = EpisodeTracker(env.num_envs)
        self._observation = env.reset()

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        buffer['first_stream'].fill_(self.first_stream)
        for t in range(self.unroll_length):
            buffer['recurrent_state'][t] = torch.from_numpy(self.policy.carried_state(self.env.num_envs))
            action = self.policy.act(self._observation)
            step = self.env.step(action)
            self.policy.observe(action, step)
            episode_end = step.terminated | step.truncated
            buffer['observation'][t] = torch.from_numpy(np.asarray(self._observation))
            buffer['action'][t] = torch.from_numpy(action)
            buffer['reward'][t] = torch.from_numpy(step.reward.astype(np.float32))
            buffer['terminal'][t] = torch.from_numpy(step.terminated | (step.life_loss & self.terminal_on_life_loss))
            buffer['episode_end'][t] = torch.from_numpy(episode_end)
            buffer['final_observation'][t] = torch.from_numpy(np.asarray(step.final_observation))
            finished += self._episodes.step(step.raw_reward, episode_end)
            self._observation = step.observation
        write_visited_rooms(self.env, buffer)
        return finished


class R2d2Learner(SequenceLearner):
    """The learner: adds the actors' steps to the prioritized sequence replay and takes the gradient steps they are
    owed (see the module docstring); `n_step` is the return's length, the rest `SequenceLearner`'s settings."""

    agent_name = 'R2D2'

    def __init__(self, network: RecurrentDuelingQNetwork, replay: replay_lib.PrioritizedSequenceReplay, *, n_step: int, **sequence_learner_settings: Any):
        super().__init__(network, replay, **sequence_learner_settings)
        self.n_step = n_step

    def learn(self) -> None:
        """One gradient step on a prioritized batch of sequences (steps 1-6 of the module docstring)."""
        sample = self.sample()
        sequences = sample.sequences
        observation, action = time_major(sequences.observation, self.device), time_major(sequences.action, self.device).long()
        reward, discount, first, mask = (time_major(field, self.device) for field in (sequences.reward, sequences.discount, sequences.first, sequences.mask))
        state, first_previous = split_carried_state(as_tensor(sequences.initial_state, self.device), self.network.hidden_size)
        first_all = pad_first(first)
        previous = sequence_inputs(first_previous, action, reward, first_all)

        q_all, q_target = self.unroll(observation, previous, state, first_all)  # [T + 1, B, A]
        with torch.no_grad():
            targets = transformed_returns.transformed_n_step_q_targets(
                q_all.detach(), q_target, reward, discount, mask, self.n_step, self.value_rescaling_eps
            )
        q_taken = q_all[:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1)
        td_error = targets - q_taken
        learned = learned_steps(mask, first, self.burn_in)
        loss = sequence_loss(td_error, learned, as_tensor(sample.weights, self.device))
        priorities = transformed_returns.sequence_priorities(td_error.detach(), learned, self.priority_eta)
        self.gradient_step(sample, loss, priorities, mean_q=q_taken.detach()[learned].mean())


def make_network(env: VectorEnvironment, settings: R2d2Settings) -> RecurrentDuelingQNetwork:
    """The paper's network for Atari frames (Nature CNN, 512-unit LSTM, dueling head); the MiniGrid CNN or an MLP
    with a 128-unit LSTM for MiniGrid's grids (`settings.environment_kind`) or vectors."""
    observation_shape, num_actions = env.single_observation_space.shape, int(env.single_action_space.n)
    if settings.environment_kind == 'minigrid':
        return minigrid_recurrent_dueling_q_network(observation_shape, num_actions, lstm_size('minigrid'))
    if len(observation_shape) == 3:
        return nature_cnn_recurrent_dueling_q_network(num_actions, observation_shape[0])
    return mlp_recurrent_dueling_q_network(observation_shape[0], num_actions, lstm_size('classic'))


def build_learner(network: nn.Module, env: VectorEnvironment, settings: R2d2Settings, total_updates: int, device: torch.device) -> R2d2Learner:
    """An R2D2 learner from the run's `settings`; its replay has one stream per actor environment and is shaped by
    `env`'s observation space (`total_updates` is unused: no schedule counts updates)."""
    observation_space = env.single_observation_space
    replay = prioritized_sequence_replay(settings, observation_space, discount=settings.discount, state_size=carried_state_size(network.hidden_size))
    # Compressed observations count only once stored: add their raw size to the empty replay's figure.
    sequence_length, _ = sequence_layout(settings.burn_in, settings.unroll_length)
    observation_bytes = (sequence_length + 1) * int(np.prod(observation_space.shape)) * observation_space.dtype.itemsize
    raw = replay.bytes_per_sequence() + (observation_bytes if settings.compress_replay else 0)
    print(
        f'R2D2 replay: {settings.replay_capacity} sequences of {sequence_length} steps, {raw / 1024:.1f} KiB each uncompressed '
        f'({raw * settings.replay_capacity / 2**30:.2f} GiB full){"; snappy-compressed (logged as replay_bytes_per_sequence)" if settings.compress_replay else ""}',
        flush=True,
    )
    return R2d2Learner(
        network,
        replay,
        learning_rate=settings.learning_rate,
        adam_eps=settings.adam_eps,
        batch_size=settings.batch_size,
        min_replay_size=settings.min_replay_size,
        learn_interval=settings.learn_interval,
        target_network_update_interval=settings.target_network_update_interval,
        burn_in=settings.burn_in,
        n_step=settings.n_step,
        priority_eta=settings.priority_eta,
        value_rescaling_eps=settings.value_rescaling_eps,
        importance_sampling_exponent=LinearSchedule(
            settings.importance_sampling_exponent_begin_value,
            settings.importance_sampling_exponent_end_value,
            settings.importance_sampling_exponent_decay_step,
        ),
        max_grad_norm=settings.max_grad_norm,
        count_rooms=gym_env.is_montezuma_revenge(settings.environment_kind, settings.environment_name),
        bf16_learning=settings.bf16_learning,
        device=device,
    )


def build_actor(network: nn.Module, env: VectorEnvironment, settings: R2d2Settings, seed: int, device: torch.device) -> R2d2Actor:
    """Actor of the run's `settings`. `main_loop`'s actor factory seeds environment j of actor i with seed + i *
    num_envs_per_actor + j, so `seed - settings.seed` is the index of this actor's first environment among all of
    the run: its replay stream and its rung on the epsilon ladder. On Montezuma's Revenge its environments count the
    rooms each episode visits (`train` asks the factory for a `gym_env.RoomCounter`)."""
    first_stream = seed - settings.seed
    epsilons = apex_epsilons(settings.num_actors * settings.num_envs_per_actor, settings.exploration_epsilon_base, settings.exploration_epsilon_alpha)
    return R2d2Actor(
        network, env, settings.actor_update_interval, epsilons[first_stream : first_stream + env.num_envs], first_stream,
        settings.life_loss_is_terminal, seed, device,
    )  # fmt: skip


def train(run_settings: R2d2Settings) -> None:
    """Entry point of R2D2's run scripts: asynchronous actors, the learner with its replay, iterations from the run's
    settings; run_classic also takes MiniGrid (the baseline of NGU's and Agent57's exploration benchmark)."""
    main_loop.train_actors_and_learner(
        run_settings, make_network, build_learner, build_actor, rollout_spec(run_settings.actor_update_interval, run_settings.environment_kind),
        asynchronous=True, make_eval_actor=lambda network, device: R2d2Policy(network, run_settings.eval_exploration_epsilon, run_settings.seed, device),
        count_rooms=True,
    )  # fmt: skip
