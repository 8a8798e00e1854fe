"""NGU: "Never Give Up: Learning Directed Exploration Strategies" (Badia et al. 2020), on R2D2's actors and learner
(`deep_rl_zoo.r2d2`: asynchronous actor processes, prioritized replay of overlapping sequences with stored LSTM
states, burn-in, value rescaling h).

What NGU adds (section 2, appendices A, E and F):

1. N policies (beta_j, gamma_j) learned by one network (`episodic_novelty.policy_family`); environment i of the run's
   S always plays policy j = i mod N, epsilon-greedy with R2D2's Ape-X epsilon of its rung: each policy acts on
   rungs spread over the ladder (policy 0, the one evaluated, on rungs 0, N, 2N, ...).
2. Its Q network (`networks.ngu.NguQNetwork`) sees the one-hot j, the previous action and the previous extrinsic
   and intrinsic rewards beside the observation.
3. Each step's intrinsic reward, computed by the actor for the observation the step reaches:
   r^i = r^episodic * min(max(1 + (err - mu) / sigma, 1), L) (`episodic_novelty`): the k-nearest-neighbour bonus
   over this episode's embeddings f(x) (memory cleared at every episode start, per environment) scaled by the RND
   error standardised by the actor's running moments of it.
4. The learner learns policy j from r = r^e + beta_j r^i with discount gamma_j by transformed Retrace with the
   greedy target policy, and policy 0 from every sequence: each sampled sequence of a policy j != 0 is also learned
   relabelled for policy 0 (`with_policy_zero_copies`: one-hot 0, beta_0 = 0 so r^e alone, gamma_0; the greedy
   target cuts the traces where j's actions leave policy 0's), so the exploitative policy learns from the episodes
   the exploratory ones find the goal in (`transformed_returns.transformed_retrace_targets`), importance-weighted 0.5 td^2 summed over
   the learned steps (R2D2's `sequence_loss`), R2D2's sequence priorities; the target network is copied every `target_network_update_interval`.
5. A sampled sequence's new priority is the larger of R2D2's priorities of its row and of its policy-0 copy.
6. It also trains the embedding f by inverse dynamics (cross-entropy of a_t from f(x_t), f(x_t+1)) and RND's
   predictor on the last `intrinsic_train_steps` real steps of each sequence (the paper: the last 5), with their
   own Adam; RND's observation normaliser is updated with every step the actors send.

The replay (`ngu.replay.ExtrasSequenceReplay`) stores each step's intrinsic reward, policy index and previous
action and rewards beside R2D2's fields. Evaluation plays policy 0 (beta 0, the exploitative one). On Montezuma's
Revenge the actors count the rooms each episode visits (`visited_rooms_mean` / `visited_rooms_max`, as PPO-RND).
"""

from typing import Any, Callable, NamedTuple

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import curiosity, episodic_novelty, gym_env, main_loop, transformed_returns
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.greedy_actors import as_tensor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.networks.ngu import NguNetworks, StepInputs, ngu_networks
from deep_rl_zoo.networks.recurrent_value import lstm_size
from deep_rl_zoo.ngu import replay as ngu_replay
from deep_rl_zoo.ngu.settings import NguSettings
from deep_rl_zoo.rollouts import transition_spec, visited_rooms_spec, write_visited_rooms
from deep_rl_zoo.schedule import LinearSchedule
from deep_rl_zoo.sequence_learning import (
    SequenceLearner,
    apex_epsilons,
    learned_steps,
    pad_first,
    prioritized_sequence_replay,
    sequence_loss,
    time_major,
)
from deep_rl_zoo.trackers import EpisodeTracker


def policy_family(settings: NguSettings) -> tuple[np.ndarray, np.ndarray]:
    """The run's (betas, discounts) of its N policies."""
    return episodic_novelty.policy_family(settings.num_policies, settings.intrinsic_reward_beta, settings.gamma_max, settings.gamma_min)


class NguPolicy:
    """Acts for a vector of N environments with NGU's networks (an actor's, or the evaluation's): epsilon-greedy on
    each environment's policy's Q-values (`acting_values`), with the LSTM state, the previous action and rewards and
    the policy index carried from step to step (zeroed, and the policy chosen again, at episode starts), and the
    intrinsic reward of every step (`last_intrinsic_reward` after `observe`; `last_episode_return`: the extrinsic
    return of the episodes that step ended, 0 elsewhere)."""

    def __init__(
        self,
        networks: NguNetworks,
        epsilons: np.ndarray,
        policies: np.ndarray,
        memory: episodic_novelty.EpisodicMemory,
        max_modulation: float,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        self.networks = networks
        self.epsilon = np.asarray(epsilons, np.float64)
        self.num_envs = len(self.epsilon)
        self.fixed_policies = np.asarray(policies, np.int64)
        self.memory = memory
        self.max_modulation = max_modulation
        self.error_moments = episodic_novelty.RunningMoments()
        self.device = device
        self._random = np.random.default_rng(seed)
        self.state: tuple[torch.Tensor, torch.Tensor] | None = None
        self.reset()

    def reset(self) -> None:
        """Forgets every environment's episode: the next `act` starts them all."""
        self.state = None
        self.previous_action = np.zeros(self.num_envs, np.int64)
        self.previous_reward = np.zeros(self.num_envs, np.float32)
        self.previous_intrinsic_reward = np.zeros(self.num_envs, np.float32)
        self.policy = np.array([self.next_policy(env, None) for env in range(self.num_envs)], np.int64)
        self.last_intrinsic_reward = np.zeros(self.num_envs, np.float32)
        self.last_episode_return = np.zeros(self.num_envs, np.float32)
        self._first = np.ones(self.num_envs, bool)
        self._returns = np.zeros(self.num_envs)

    def next_policy(self, env: int, episode_return: float | None) -> int:
        """The policy of environment `env`'s next episode (`episode_return`: the extrinsic return of the episode it
        just finished, None at a reset): NGU's environments keep theirs."""
        return int(self.fixed_policies[env])

    def acting_values(self, q_values: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
        """The values [B, A] whose argmax is the greedy action: NGU's one head."""
        return q_values

    @torch.no_grad()
    def _embed(self, observation: np.ndarray) -> np.ndarray:
        return self.networks.embedding(as_tensor(observation, self.device)).double().cpu().numpy()

    @torch.no_grad()
    def act(self, observation: np.ndarray) -> np.ndarray:
        if self._first.any():  # episode starts: each memory begins with the episode's first observation
            embeddings = self._embed(observation)
            for env in np.flatnonzero(self._first):
                self.memory.reset(env, embeddings[env])
        inputs = StepInputs(*(as_tensor(value, self.device).unsqueeze(0) for value in (self.previous_action, self.previous_reward, self.previous_intrinsic_reward, self.policy)))
        q_values, self.state = self.networks.q(as_tensor(observation, self.device).unsqueeze(0), inputs, self.state, as_tensor(self._first, self.device).unsqueeze(0))
        actions = self.acting_values(q_values.squeeze(0), inputs.policy.squeeze(0)).argmax(dim=-1).cpu().numpy()
        explore = self._random.random(self.num_envs) < self.epsilon
        actions[explore] = self._random.integers(self.networks.q.num_actions, size=int(explore.sum()))
        self._first = np.zeros(self.num_envs, bool)
        return actions

    @torch.no_grad()
    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        """The intrinsic reward of the observation each step reached (before any reset), then the next step's inputs."""
        reached = np.asarray(step.final_observation)
        embeddings = self._embed(reached)
        prediction, target = self.networks.rnd(as_tensor(reached, self.device))
        errors = curiosity.rnd_prediction_error(prediction, target).double().cpu().numpy()
        self.error_moments.update(errors)
        modulator = episodic_novelty.lifelong_modulator(errors, self.error_moments.mean, self.error_moments.std, self.max_modulation)
        episodic = np.array([self.memory.reward(env, embeddings[env]) for env in range(self.num_envs)])
        self.last_intrinsic_reward = episodic_novelty.intrinsic_reward(episodic, modulator).astype(np.float32)
        self._returns += step.raw_reward
        ended = step.terminated | step.truncated
        self.previous_action = np.where(ended, 0, action).astype(np.int64)
        self.previous_reward = np.where(ended, 0.0, step.reward).astype(np.float32)
        self.previous_intrinsic_reward = np.where(ended, 0.0, self.last_intrinsic_reward).astype(np.float32)
        self.last_episode_return = np.where(ended, self._returns, 0.0).astype(np.float32)
        for env in np.flatnonzero(ended):
            self.policy[env] = self.next_policy(int(env), float(self._returns[env]))
            self._returns[env] = 0.0
        self._first = ended.copy()

    def state_before_step(self) -> np.ndarray:
        """The (h, c) the next step starts from, [N, 2 * hidden_size]: zeros where an episode starts."""
        if self.state is None:
            return np.zeros((self.num_envs, 2 * self.networks.hidden_size), np.float32)
        state = torch.cat(self.state, dim=1).cpu().numpy()
        state[self._first] = 0.0
        return state


def rollout_spec(steps: int, kind: str, num_q_networks: int = 1) -> Callable[..., dict[str, tuple[tuple[int, ...], torch.dtype]]]:
    """The spec function (env, num_envs, _) -> an `NguActor`'s buffer of `steps` steps per environment: R2D2's
    (`rollouts.transition_spec`, 'recurrent_state' of `num_q_networks` LSTMs (Agent57: 2), 'first_stream'), each step's
    extras [T, N, NUM_EXTRAS] (columns of `ngu.replay`), 'episode_return' [T, N] (the extrinsic return of the episode
    ending there, else 0; read by Agent57's learner) and 'visited_rooms' [T, N] (Montezuma's Revenge: the rooms of the
    episode ending there, else 0)."""

    def spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {
            **transition_spec(env, num_envs, steps),
            'recurrent_state': ((steps, num_envs, 2 * lstm_size(kind) * num_q_networks), torch.float32),
            'first_stream': ((1,), torch.int64),
            'extras': ((steps, num_envs, ngu_replay.NUM_EXTRAS), torch.float32),
            'episode_return': ((steps, num_envs), torch.float32),
            **visited_rooms_spec(num_envs, steps),
        }

    return spec


class NguActor:
    """Steps a vector of environments with an `NguPolicy` and writes `unroll_length` steps per environment per
    `collect` (see `rollout_spec`)."""

    def __init__(self, policy: NguPolicy, env: VectorEnvironment, unroll_length: int, first_stream: int, terminal_on_life_loss: bool):
        self.policy = policy
        self.network = policy.networks
        self.env = env
        self.unroll_length = unroll_length
        self.first_stream = first_stream
        self.terminal_on_life_loss = terminal_on_life_loss
        self._episodes = EpisodeTracker(env.num_envs)
        self._observation = env.reset()

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        buffer['first_stream'].fill_(self.first_stream)
        policy = self.policy
        for t in range(self.unroll_length):
            buffer['recurrent_state'][t] = torch.from_numpy(policy.state_before_step())
            extras = np.zeros((self.env.num_envs, ngu_replay.NUM_EXTRAS), np.float32)
            extras[:, ngu_replay.PREVIOUS_ACTION] = policy.previous_action
            extras[:, ngu_replay.PREVIOUS_REWARD] = policy.previous_reward
            extras[:, ngu_replay.PREVIOUS_INTRINSIC_REWARD] = policy.previous_intrinsic_reward
            extras[:, ngu_replay.POLICY] = policy.policy
            action = policy.act(self._observation)
            step = self.env.step(action)
            policy.observe(action, step)
            extras[:, ngu_replay.INTRINSIC_REWARD] = policy.last_intrinsic_reward
            episode_end = step.terminated | step.truncated
            buffer['observation'][t] = torch.from_numpy(np.asarray(self._observation))
            buffer['action'][t] = torch.from_numpy(action)
            buffer['reward'][t] = torch.from_numpy(step.reward.astype(np.float32))
            buffer['terminal'][t] = torch.from_numpy(step.terminated | (step.life_loss & self.terminal_on_life_loss))
            buffer['episode_end'][t] = torch.from_numpy(episode_end)
            buffer['final_observation'][t] = torch.from_numpy(np.asarray(step.final_observation))
            buffer['extras'][t] = torch.from_numpy(extras)
            buffer['episode_return'][t] = torch.from_numpy(policy.last_episode_return)
            finished += self._episodes.step(step.raw_reward, episode_end)
            self._observation = step.observation
        write_visited_rooms(self.env, buffer)
        return finished


def step_inputs(action: torch.Tensor, reward: torch.Tensor, extras: torch.Tensor) -> StepInputs:
    """The Q network's inputs [T + 1, B] at a batch of sequences' T + 1 observations, from their actions [T, B],
    extrinsic rewards [T, B] and extras [T, B, NUM_EXTRAS]: the stored previous action and rewards at the first
    step, the sequence's own after it (the observation after the last real step follows that step)."""
    previous_action = torch.cat([extras[:1, :, ngu_replay.PREVIOUS_ACTION].long(), action])
    previous_reward = torch.cat([extras[:1, :, ngu_replay.PREVIOUS_REWARD], reward])
    previous_intrinsic = torch.cat([extras[:1, :, ngu_replay.PREVIOUS_INTRINSIC_REWARD], extras[:, :, ngu_replay.INTRINSIC_REWARD]])
    policy = extras[:1, :, ngu_replay.POLICY].long().expand(action.shape[0] + 1, -1)
    return StepInputs(previous_action, previous_reward, previous_intrinsic, policy)


class LearnerBatch(NamedTuple):
    """A batch of R sequence rows, time-major: what `NguLearner.head_losses` learns from."""

    observation: torch.Tensor  # [T + 1, R, ...]: the T steps' observations and the one after the last
    action: torch.Tensor  # [T, R] int64
    reward: torch.Tensor  # [T, R] extrinsic
    intrinsic_reward: torch.Tensor  # [T, R]
    not_terminal: torch.Tensor  # [T, R]: 0 where the step ended the episode by a terminal
    first: torch.Tensor  # [T, R] bool: the step starts an episode
    mask: torch.Tensor  # [T, R] bool: real steps (not padding)
    inputs: StepInputs  # [T + 1, R] each: the Q network's inputs at the T + 1 observations
    state: tuple[torch.Tensor, torch.Tensor]  # the stored (h, c) before the first step, [R, hidden] each
    importance_weights: torch.Tensor  # [R]
    source: torch.Tensor  # [R] int64: the index in the prioritized sample of the sequence each row comes from


class NguLearner(SequenceLearner):
    """The learner: adds the actors' steps to the replay, then takes the gradient steps owed (see the module
    docstring); `value_targets`, `taken_values`, `clip_gradients` and `row_priorities` are the parts Agent57 changes."""

    agent_name = 'NGU'
    head_names = ('mixed',)

    def __init__(
        self,
        network: NguNetworks,
        replay: ngu_replay.ExtrasSequenceReplay,
        *,
        betas: np.ndarray,
        discounts: np.ndarray,
        intrinsic_learning_rate: float,
        retrace_lambda: float,
        intrinsic_train_steps: int,
        **sequence_learner_settings: Any,
    ):
        super().__init__(network, replay, **sequence_learner_settings)
        intrinsic_parameters = list(self.network.embedding.parameters()) + list(self.network.rnd.predictor.parameters())
        self.intrinsic_optimizer = torch.optim.Adam(intrinsic_parameters, lr=intrinsic_learning_rate, eps=sequence_learner_settings['adam_eps'])
        self.betas = torch.as_tensor(betas, dtype=torch.float32, device=self.device)
        self.discounts = torch.as_tensor(discounts, dtype=torch.float32, device=self.device)
        self.retrace_lambda = retrace_lambda
        self.intrinsic_train_steps = intrinsic_train_steps

    @property
    def q_network(self) -> nn.Module:
        return self.network.q

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """Folds each rollout's observations into RND's normaliser, then `SequenceLearner.update`: its steps and
        extras into the replay, the gradient steps owed."""
        rnd = self.network.rnd
        for buffer in buffers:
            rnd.observation_normalizer.update(rnd.flat_inputs(buffer['observation'].flatten(0, 1).to(self.device)))
        super().update(buffers)

    def value_targets(self, q_all: torch.Tensor, q_target: torch.Tensor, action, reward, intrinsic, discount, mask, beta) -> list[torch.Tensor]:
        """NGU: one head learns r^e + beta_j r^i by transformed Retrace; its targets [T, B]."""
        mixed = episodic_novelty.mixed_reward(reward, intrinsic, beta)
        return [transformed_returns.transformed_retrace_targets(q_all, q_target, action, mixed, discount, mask, self.retrace_lambda, self.value_rescaling_eps)]

    def taken_values(self, q_all: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        """Q(x_t, a_t) [T, B] of each head."""
        return [q_all[:-1].gather(-1, action.unsqueeze(-1)).squeeze(-1)]

    def learner_batch(self, sample: replay_lib.PrioritizedSequenceSample) -> LearnerBatch:
        """The sampled sequences as time-major tensors, each row the sequence of that index in the sample."""
        sequences, device = sample.sequences, self.device
        action = time_major(sequences.action, device).long()
        reward, not_terminal, first, mask = (time_major(field, device) for field in (sequences.reward, sequences.discount, sequences.first, sequences.mask))
        extras = time_major(self.replay.extras_at(sample.keys[0]), device)
        return LearnerBatch(
            observation=time_major(sequences.observation, device), action=action, reward=reward, intrinsic_reward=extras[:, :, ngu_replay.INTRINSIC_REWARD],
            not_terminal=not_terminal, first=first, mask=mask, inputs=step_inputs(action, reward, extras),
            state=tuple(as_tensor(sequences.initial_state, self.device).chunk(2, dim=1)), importance_weights=as_tensor(sample.weights, self.device),
            source=torch.arange(len(sample.weights), device=self.device),
        )  # fmt: skip

    def with_policy_zero_copies(self, batch: LearnerBatch) -> LearnerBatch:
        """`batch` followed by a copy of each of its rows whose policy j is not 0, relabelled for policy 0: one-hot 0 at
        every step (so `head_losses` learns it with beta_0 = 0, r^e alone, and gamma_0), the same steps, stored state,
        importance weight and source. Policy 0 learns from every sequence, not only the ones it played."""
        copied = torch.nonzero(batch.inputs.policy[0] != 0).flatten()

        def extended(tensor: torch.Tensor, dim: int = 1) -> torch.Tensor:
            return torch.cat([tensor, tensor.index_select(dim, copied)], dim=dim)

        policy = batch.inputs.policy
        inputs = StepInputs(
            *(extended(tensor) for tensor in batch.inputs[:3]), torch.cat([policy, torch.zeros_like(policy.index_select(1, copied))], dim=1)
        )
        return LearnerBatch(
            observation=extended(batch.observation), action=extended(batch.action), reward=extended(batch.reward),
            intrinsic_reward=extended(batch.intrinsic_reward), not_terminal=extended(batch.not_terminal), first=extended(batch.first),
            mask=extended(batch.mask), inputs=inputs, state=tuple(extended(part, 0) for part in batch.state),
            importance_weights=extended(batch.importance_weights, 0), source=extended(batch.source, 0),
        )  # fmt: skip

    def head_losses(self, batch: LearnerBatch) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """Each head's loss (R2D2's `sequence_loss` of its Retrace TD errors), TD errors [T, R], Q(x_t, a_t) [T, R] and
        the learned steps [T, R] of a batch of R rows: policy j = each row's policy input learns with beta_j, gamma_j."""
        policy = batch.inputs.policy[0]
        beta, discount = self.betas[policy], batch.not_terminal * self.discounts[policy]  # the replay's discount is 1
        q_all, q_target = self.unroll(batch.observation, batch.inputs, batch.state, pad_first(batch.first))
        with torch.no_grad():
            targets = self.value_targets(q_all.detach(), q_target, batch.action, batch.reward, batch.intrinsic_reward, discount, batch.mask, beta)
        q_taken = self.taken_values(q_all, batch.action)
        td_errors = [target - taken for target, taken in zip(targets, q_taken)]
        learned = learned_steps(batch.mask, batch.first, self.burn_in)
        losses = [sequence_loss(td_error, learned, batch.importance_weights) for td_error in td_errors]
        return losses, td_errors, q_taken, learned

    def row_priorities(self, td_errors: list[torch.Tensor], learned: torch.Tensor) -> torch.Tensor:
        """R2D2's sequence priorities [R] of NGU's one head."""
        return transformed_returns.sequence_priorities(td_errors[0].detach(), learned, self.priority_eta)

    def learn(self) -> None:
        """One gradient step of the Q network (`SequenceLearner.gradient_step`), then one of the embedding and RND
        predictor, on a prioritized batch."""
        sample = self.sample()
        sampled = self.learner_batch(sample)
        batch = self.with_policy_zero_copies(sampled)
        losses, td_errors, q_taken, learned = self.head_losses(batch)
        # A sequence's priority: the larger of its own row's and its policy-0 copy's.
        priorities = torch.zeros_like(sampled.importance_weights).scatter_reduce(0, batch.source, self.row_priorities(td_errors, learned), 'amax', include_self=False)
        self.gradient_step(
            sample, sum(losses), priorities, mean_q=q_taken[0].detach()[learned].mean(), intrinsic_reward_mean=sampled.intrinsic_reward[sampled.mask].mean(),
            policy_zero_rows=float(batch.source.numel() - sampled.source.numel()), **{f'loss_{name}': head_loss.detach() for name, head_loss in zip(self.head_names, losses)},
        )  # fmt: skip
        inverse_loss, rnd_loss = self._learn_intrinsic(sampled.observation, sampled.action, sampled.mask)
        self.statistics.record(inverse_dynamics_loss=inverse_loss, rnd_loss=rnd_loss)

    def _learn_intrinsic(self, observation: torch.Tensor, action: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One Adam step on the inverse-dynamics cross-entropy of f and RND's prediction error, over the last
        `intrinsic_train_steps` real steps of each sequence (x_t, a_t, x_t+1)."""
        count = mask.sum(dim=0, keepdim=True)
        index = torch.arange(mask.shape[0], device=self.device)[:, None]
        chosen = mask & (index >= count - self.intrinsic_train_steps)
        current, following, taken = observation[:-1][chosen], observation[1:][chosen], action[chosen]
        embedding = self.network.embedding
        logits = embedding.action_logits(embedding(current), embedding(following))
        inverse_loss = nn.functional.cross_entropy(logits, taken)
        rnd_loss = curiosity.rnd_prediction_error(*self.network.rnd(following)).mean()
        self.intrinsic_optimizer.zero_grad(set_to_none=True)
        (inverse_loss + rnd_loss).backward()
        self.intrinsic_optimizer.step()
        return inverse_loss.detach(), rnd_loss.detach()

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), 'intrinsic_optimizer': self.intrinsic_optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.intrinsic_optimizer.load_state_dict(state['intrinsic_optimizer'])


def make_network(env: VectorEnvironment, settings: NguSettings) -> NguNetworks:
    """NGU's networks (one Q network) for the run's environment."""
    return ngu_networks(settings.environment_kind, env.single_observation_space.shape, int(env.single_action_space.n), settings.num_policies)


def build_learner_of(learner_class: type, extra_settings: Callable[[NguSettings], dict[str, Any]] = lambda settings: {}) -> Callable[..., NguLearner]:
    """build_learner(network, env, settings, total_updates, device) of NGU's or Agent57's learner class, its replay
    shaped by `env`'s observation space (`extra_settings`: the keyword arguments of the class beyond NGU's, from the
    run's settings)."""

    def build_learner(network: NguNetworks, env: VectorEnvironment, settings: NguSettings, total_updates: int, device: torch.device) -> NguLearner:
        replay = prioritized_sequence_replay(
            settings, env.single_observation_space, ngu_replay.ExtrasSequenceReplay, discount=1.0, state_size=2 * network.hidden_size
        )
        betas, discounts = policy_family(settings)
        return learner_class(
            network, replay, betas=betas, discounts=discounts, learning_rate=settings.learning_rate, intrinsic_learning_rate=settings.intrinsic_learning_rate,
            adam_eps=settings.adam_eps, batch_size=settings.batch_size, min_replay_size=settings.min_replay_size, learn_interval=settings.learn_interval,
            target_network_update_interval=settings.target_network_update_interval, burn_in=settings.burn_in, retrace_lambda=settings.retrace_lambda,
            intrinsic_train_steps=settings.intrinsic_train_steps, priority_eta=settings.priority_eta, value_rescaling_eps=settings.value_rescaling_eps,
            importance_sampling_exponent=LinearSchedule(
                settings.importance_sampling_exponent_begin_value, settings.importance_sampling_exponent_end_value, settings.importance_sampling_exponent_decay_step
            ),
            max_grad_norm=settings.max_grad_norm, count_rooms=gym_env.is_montezuma_revenge(settings.environment_kind, settings.environment_name),
            bf16_learning=settings.bf16_learning, device=device, **extra_settings(settings),
        )  # fmt: skip

    return build_learner


build_learner = build_learner_of(NguLearner)


def episodic_memory(settings: NguSettings, num_envs: int, embedding_size: int) -> episodic_novelty.EpisodicMemory:
    return episodic_novelty.EpisodicMemory(
        num_envs, embedding_size, settings.episodic_memory_capacity, settings.num_neighbours, settings.kernel_epsilon, settings.pseudo_count_constant,
        settings.cluster_distance, settings.max_similarity,
    )  # fmt: skip


def make_policy(network: NguNetworks, settings: NguSettings, epsilons: np.ndarray, policies: np.ndarray, seed: int, device: torch.device) -> NguPolicy:
    network = network.to(device)
    memory = episodic_memory(settings, len(epsilons), network.embedding.embedding_size)
    return NguPolicy(network, epsilons, policies, memory, settings.max_lifelong_modulation, seed, device)


def policy_ladder(streams: np.ndarray, num_policies: int) -> np.ndarray:
    """The policy j = i mod N of each environment i of the run: each policy acts on rungs spread over the Ape-X ladder
    (policy 0 with N = 8 of 16 environments: on rungs 0 and 8, epsilon 0.4 and 0.013), not only on one end of it."""
    return np.asarray(streams, np.int64) % num_policies


def build_actor(network: NguNetworks, env: VectorEnvironment, settings: NguSettings, seed: int, device: torch.device) -> NguActor:
    """Actor of the run's `settings`: its environments' streams, Ape-X epsilons and policies follow from their
    index among all of the run (`seed - settings.seed`, as R2D2's `build_actor`)."""
    first_stream = seed - settings.seed
    num_envs = env.num_envs
    epsilons = apex_epsilons(settings.num_actors * num_envs, settings.exploration_epsilon_base, settings.exploration_epsilon_alpha)[first_stream : first_stream + num_envs]
    policies = policy_ladder(first_stream + np.arange(num_envs), settings.num_policies)
    policy = make_policy(network, settings, epsilons, policies, seed, device)
    return NguActor(policy, env, settings.actor_update_interval, first_stream, settings.life_loss_is_terminal)


def eval_policy(network: NguNetworks, settings: NguSettings, epsilon: float, seed: int, device: torch.device = torch.device('cpu')) -> NguPolicy:
    """The evaluation's policy: policy 0 (beta 0, the exploitative one), epsilon-greedy, one environment."""
    return make_policy(network, settings, np.array([epsilon]), np.zeros(1, np.int64), seed, device)


def train(
    run_settings: NguSettings, build_learner: Callable[..., NguLearner] = build_learner, build_actor: Callable[..., Any] = build_actor,
    make_network=make_network, make_eval_policy=eval_policy, num_q_networks: int = 1,
) -> None:
    """Entry point of the run scripts (NGU's, and Agent57's with its own parts) from the run's settings: run_classic
    also takes MiniGrid."""
    main_loop.train_actors_and_learner(
        run_settings, make_network, build_learner, build_actor,
        rollout_spec(run_settings.actor_update_interval, run_settings.environment_kind, num_q_networks), asynchronous=True,
        make_eval_actor=lambda network, device: make_eval_policy(network, run_settings, run_settings.eval_exploration_epsilon, run_settings.seed, device),
        count_rooms=True,
    )  # fmt: skip
