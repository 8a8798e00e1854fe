"""DRQN: "Deep Recurrent Q-Learning for Partially Observable MDPs" (Hausknecht & Stone 2015).

DQN whose first fully connected layer is an LSTM, fed one frame per step. The agent acts epsilon-greedily
with one LSTM state per environment, advanced on every step (random ones included) and zeroed where an
episode ends. Its replay stores sequences of consecutive steps (`replay.SequenceReplay`); each update unrolls
the online and target networks over B sampled sequences (the paper's "bootstrapped random updates", section 4)
and minimises the DQN loss (section 2) at every step t of every sequence b:

    L(theta) = mean_{b,t} m_bt * huber( r_t + gamma (1 - terminal_t) max_a Q(o_{t+1}, a; theta^-) - Q(o_t, a_t; theta) )

where m_bt is 0 on the padding after an episode's end and, with `burn_in` > 0 (R2D2, Kapturowski et al.
2019), on the first burn_in steps of sequences that start mid-episode: those only warm the state up, without
gradient. A sequence that starts an episode needs no warm-up (zero is its true state) and learns at every step.
Targets are one-step, as in the paper (`n_step` is not used). A truncated episode bootstraps from its last
observation, kept after the sequence's last step; a terminal one does not.

Unlike the paper, which unrolls from a zero state, the unrolls start from the LSTM state the actor had before
each sequence's first step, kept in replay: R2D2's "stored state" (Kapturowski et al. 2019, section 3). From
zero states the network only ever learns at the first T steps of an unroll, while it acts with a state carried
through the whole episode (500 steps in CartPole) and bootstraps from a state one step deeper than it learns
at; on CartPole its values then diverged (with T = 1, Q reached 500 where returns are bounded by 100).
Acting schedule, optimiser step and target refreshes are shared with the family (`deep_rl_zoo.replay_agent`).
"""

from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import main_loop, replay_agent, value_learning
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.greedy_actors import RecurrentEpsilonGreedyActor, as_tensor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.value import mlp_recurrent_q_network, nature_cnn_recurrent_q_network
from deep_rl_zoo.sequence_learning import pad_first, sequence_layout
from deep_rl_zoo.drqn.settings import DrqnSettings


class SequenceBatch(NamedTuple):
    """Replayed sequences as time-major tensors on the learner's device (see `replay.Sequences`)."""

    observation: torch.Tensor  # [T + 1, B, *observation_shape]
    action: torch.Tensor  # [T, B] int64
    reward: torch.Tensor  # [T, B] float32
    discount: torch.Tensor  # [T, B] float32, gamma * (1 - terminal), 0 on padding
    first: torch.Tensor  # [T, B] bool
    mask: torch.Tensor  # [T, B] bool, False on padding
    initial_state: tuple[torch.Tensor, torch.Tensor]  # (h, c), each [B, hidden_size]: the actor's before step 0


class Drqn(replay_agent.ReplayAgent):
    """DRQN over a vector of environments (usually one), learning in the acting process."""

    agent_name = 'DRQN'

    def __init__(self, *, burn_in: int = 0, **options: Any):
        super().__init__(**options)
        self.burn_in = burn_in
        self.actor = RecurrentEpsilonGreedyActor(self.online_network, self.epsilon, options['seed'], self.device)
        self._state_before_step: np.ndarray | None = None
        self._episode_ended: np.ndarray | None = None  # [N] bool: the env starts an episode at the next act

    def act(self, observation: np.ndarray) -> np.ndarray:
        """Epsilon-greedy actions; every environment's LSTM state advances, whichever action is taken."""
        self._last_observation = observation
        self._state_before_step = self._acting_state(len(observation))
        self.actor.epsilon = self.epsilon
        return self.actor.act(observation)

    def _acting_state(self, num_envs: int) -> np.ndarray:
        """The actor's (h, c) that the next step starts from, [N, 2 * hidden_size]: zeros at an episode's start."""
        if self.actor.state is None:
            return np.zeros((num_envs, 2 * self.online_network.hidden_size), np.float32)
        state = torch.cat(self.actor.state, dim=1).cpu().numpy()
        state[self._episode_ended] = 0.0
        return state

    def store(self, action: np.ndarray, step: VectorStep) -> None:
        """Stores the step with the LSTM state it started from, and zeroes the state where an episode ended."""
        self.actor.observe(action, step)
        self._episode_ended = step.terminated | step.truncated
        self.replay.add(
            self._last_observation,
            action,
            step.reward,
            self.learning_terminal(step),
            self._episode_ended,
            step.final_observation,
            recurrent_state=self._state_before_step,
        )

    def batch_tensors(self, sequences: replay_lib.Sequences) -> SequenceBatch:
        def time_major(array: np.ndarray) -> torch.Tensor:
            return as_tensor(array, self.device).transpose(0, 1)

        fields = {name: time_major(field) for name, field in sequences._asdict().items() if name != 'initial_state'}
        initial_state = as_tensor(sequences.initial_state, self.device)
        return SequenceBatch(**fields, initial_state=tuple(initial_state.chunk(2, dim=1)))

    def losses(self, batch: SequenceBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Q-learning at every step of each sequence (section 2); per-sequence loss [B], mean over its T steps."""
        num_steps = batch.action.shape[0]
        q_tm1 = self._online_q(batch)
        with torch.no_grad():
            q_t = self.target_network(batch.observation, batch.initial_state, pad_first(batch.first))[0][1:]
        output = value_learning.qlearning(
            q_tm1.flatten(0, 1),
            batch.action.flatten(),
            batch.reward.flatten(),
            batch.discount.flatten(),
            q_t.flatten(0, 1),
            loss='huber',
        )
        learns = batch.mask & ((torch.arange(num_steps, device=self.device) >= self.burn_in)[:, None] | batch.first[0])
        weights = learns.float()
        step_loss = output.loss.view(num_steps, -1) * weights
        td_error = output.extra.td_error.view(num_steps, -1).abs() * weights
        return step_loss.mean(dim=0), td_error.amax(dim=0)

    def _online_q(self, batch: SequenceBatch) -> torch.Tensor:
        """Online Q-values [T, B, A] at the sequences' steps, unrolled from their stored states; the state after
        the burn-in steps is detached in sequences that start mid-episode (no gradient into their warm-up)."""
        observation, first = batch.observation[:-1], batch.first
        if self.burn_in == 0:
            return self.online_network(observation, batch.initial_state, first)[0]
        q_burn_in, state = self.online_network(observation[: self.burn_in], batch.initial_state, first[: self.burn_in])
        starts_episode = batch.first[0].unsqueeze(1)
        state = tuple(torch.where(starts_episode, part, part.detach()) for part in state)
        q_rest, _ = self.online_network(observation[self.burn_in :], state, first[self.burn_in :])
        return torch.cat([q_burn_in, q_rest])


def build_drqn(network: nn.Module, env: VectorEnvironment, settings: DrqnSettings, device: torch.device) -> Drqn:
    """A DRQN agent from the run's `settings`.

    Sequences are burn_in + unroll_length steps long and start ceil(unroll_length / 2) steps apart in an episode
    (the learned parts of consecutive ones overlap by half), so each step is learned from in about two sequences
    and warms up the state of later ones. `replay_capacity` and `min_replay_size` count steps (the replay keeps
    replay_capacity / ceil(unroll_length / 2) sequences); `batch_size` counts sequences. Each sequence keeps the
    acting LSTM state (h, c) before its first step.
    """
    sequence_length, overlap = sequence_layout(settings.burn_in, settings.unroll_length)
    observation_space = env.single_observation_space
    replay = replay_lib.SequenceReplay(
        capacity=max(1, settings.replay_capacity // (sequence_length - overlap)),
        sequence_length=sequence_length,
        overlap=overlap,
        observation_shape=observation_space.shape,
        observation_dtype=observation_space.dtype,
        discount=settings.discount,
        num_streams=env.num_envs,
        compress=settings.compress_replay,
        seed=settings.seed,
        state_size=2 * network.hidden_size,
    )
    return replay_agent.build_agent(Drqn, network, env, settings, device, replay=replay, burn_in=settings.burn_in)


def make_network(env: VectorEnvironment, settings: DrqnSettings) -> nn.Module:
    """The paper's conv + LSTM network on single Atari frames; a small MLP + LSTM for vector observations."""
    observation_shape, num_actions = env.single_observation_space.shape, env.single_action_space.n
    if len(observation_shape) == 3:
        return nature_cnn_recurrent_q_network(num_actions, observation_shape[0])
    return mlp_recurrent_q_network(observation_shape[0], num_actions)


def train(run_settings: DrqnSettings) -> None:
    """Entry point of DRQN's run scripts: environments, agent and iterations from the run's settings."""
    main_loop.train_value_agent(
        run_settings,
        lambda env, settings, device: build_drqn(make_network(env, settings), env, settings, device),
        make_eval_actor=RecurrentEpsilonGreedyActor,
    )
