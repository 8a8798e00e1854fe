"""On-policy rollouts shared by the actors + learner agents (PPO, A2C): the actor that samples the current
policy for a vector of environments and writes fixed-length rollouts into shared-memory buffers.

Each `collect` fills one rollout of `unroll_length` steps per environment: observations, sampled actions, their
log-probabilities, the values V(s_0) ... V(s_T) (the last one bootstraps the end of the unroll), rewards and
discounts gamma * (1 - terminal). A time-limit truncation is not a true end: the actor adds gamma * V(final
observation) to the last reward so the return is bootstrapped rather than cut (Pardo et al. 2018).

`RecurrentOnPolicyActor` does the same for a policy with an LSTM core (IMPALA's `--use_lstm`): it carries the core
state across steps and rollouts and writes the state each rollout starts from (`recurrent_rollout_spec`).

`PolicySetActor` samples Sample Factory's sets of independent policies (APPO), recurrent or not, and leaves the
bootstrap value and the time limits to the learner (`policy_set_rollout_spec`).

Off-policy agents with actor processes (discrete SAC) use `TransitionActor` instead: it writes the plain steps
(`transition_spec`) that the learner adds to its replay.

On Montezuma's Revenge the agents that report the rooms their episodes visit (PPO's curiosity agents, R2D2's family)
add 'visited_rooms' to their rollouts (`visited_rooms_spec`), written from a `gym_env.RoomCounter`
(`write_visited_rooms`).
"""

from typing import Any

import numpy as np
import torch
from torch import nn

from deep_rl_zoo.greedy_actors import as_tensor
from deep_rl_zoo.gym_env import RoomCounter, VectorEnvironment
from deep_rl_zoo.normalizer import RewardScaler
from deep_rl_zoo.trackers import EpisodeTracker


def policy_distribution(output: Any) -> torch.distributions.Distribution:
    """The action distribution of a network output: categorical logits, or a diagonal Gaussian."""
    if hasattr(output, 'logits'):
        return torch.distributions.Categorical(logits=output.logits, validate_args=False)
    return torch.distributions.Independent(torch.distributions.Normal(output.mean, output.log_std.exp(), validate_args=False), 1)


def rollout_spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Shapes of one actor's rollout buffer for `num_envs` environments like `env`: [T, N, ...] per step,
    values [T + 1, N] with the bootstrap value."""
    steps = unroll_length
    observation_space, action_space = env.single_observation_space, env.single_action_space
    return {
        'observation': ((steps, num_envs, *observation_space.shape), torch.from_numpy(np.empty(0, observation_space.dtype)).dtype),
        'action': ((steps, num_envs, *action_space.shape), torch.int64 if not action_space.shape else torch.float32),
        'log_prob': ((steps, num_envs), torch.float32),
        'value': ((steps + 1, num_envs), torch.float32),
        'reward': ((steps, num_envs), torch.float32),
        'discount': ((steps, num_envs), torch.float32),
    }


def visited_rooms_spec(num_envs: int, steps: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """'visited_rooms' [T, N]: the rooms of the episode that ended at a step (Montezuma's Revenge), else 0."""
    return {'visited_rooms': ((steps, num_envs), torch.float32)}


def write_visited_rooms(env: VectorEnvironment, buffer: dict[str, torch.Tensor]) -> None:
    """Fills a rollout's 'visited_rooms' from a `gym_env.RoomCounter`'s counts (zeros for any other environment)."""
    if isinstance(env, RoomCounter):
        buffer['visited_rooms'].copy_(torch.from_numpy(env.take_counts()))
    else:
        buffer['visited_rooms'].zero_()


class SamplingActor:
    """What the actors below share: the network on its device, the environments (reset at once), the episodes they
    finish, the seed of torch's sampler, and the bounds continuous actions are clipped to before being played."""

    def __init__(
        self,
        network: nn.Module,
        env: VectorEnvironment,
        unroll_length: int,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
    ):
        self.network = network.to(device)
        self.env = env
        self.unroll_length = unroll_length
        self.terminal_on_life_loss = terminal_on_life_loss
        self.device = device
        self._episodes = EpisodeTracker(env.num_envs)
        self._observation = env.reset()
        torch.manual_seed(seed)
        space = env.single_action_space
        self._action_bounds = (space.low, space.high) if space.shape else None


class OnPolicyActor(SamplingActor):
    """Samples actions from the current policy for a vector of environments; fills one rollout per `collect`."""

    def __init__(
        self,
        network: nn.Module,
        env: VectorEnvironment,
        unroll_length: int,
        discount: float,
        terminal_on_life_loss: bool,
        seed: int,
        device: torch.device = torch.device('cpu'),
        scale_rewards: bool = False,
    ):
        super().__init__(network, env, unroll_length, terminal_on_life_loss, seed, device)
        self.reward_scaler = RewardScaler(env.num_envs, discount) if scale_rewards else None
        self.discount = discount

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        for t in range(self.unroll_length):
            observation = as_tensor(self._observation, self.device)
            output = self.network(observation)
            distribution = policy_distribution(output)
            action = distribution.sample()
            log_prob = distribution.log_prob(action)
            env_action = action.cpu().numpy()
            if self._action_bounds is not None:
                env_action = np.clip(env_action, *self._action_bounds)
            step = self.env.step(env_action)
            reward = step.reward
            if self.reward_scaler is not None:
                reward = self.reward_scaler.scale(reward, step.terminated | step.truncated)
            reward = torch.from_numpy(reward.astype(np.float32))
            truncated = step.truncated & ~step.terminated
            if truncated.any():  # bootstrap a time limit instead of treating it as the end of the world
                final = as_tensor(step.final_observation[truncated], self.device)
                reward[truncated] += self.discount * self.network(final).value.float().cpu()
            terminal = step.terminated | step.truncated | (step.life_loss & self.terminal_on_life_loss)
            buffer['observation'][t] = observation.cpu()
            buffer['action'][t] = action.cpu()
            buffer['log_prob'][t] = log_prob.cpu()
            buffer['value'][t] = output.value.cpu()
            buffer['reward'][t] = reward
            buffer['discount'][t] = torch.from_numpy(self.discount * (1.0 - terminal.astype(np.float32)))
            finished += self._episodes.step(step.raw_reward, step.terminated | step.truncated)
            self._observation = step.observation
        last_observation = as_tensor(self._observation, self.device)
        buffer['value'][self.unroll_length] = self.network(last_observation).value.cpu()
        if 'last_observation' in buffer:  # learners that bootstrap with their own values (IMPALA's V-trace)
            buffer['last_observation'].copy_(last_observation)
        if 'visited_rooms' in buffer:
            write_visited_rooms(self.env, buffer)
        return finished


def bootstrapped_rollout_spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """`rollout_spec` and the observation after the last step ([N, ...]), for learners that compute the bootstrap
    value with their own, newer parameters (IMPALA)."""
    spec = rollout_spec(env, num_envs, unroll_length)
    observation_shape, observation_dtype = spec['observation']
    return {**spec, 'last_observation': (observation_shape[1:], observation_dtype)}


def room_counting_rollout_spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """`bootstrapped_rollout_spec` and 'visited_rooms' (`visited_rooms_spec`): the rollouts of PPO's curiosity agents."""
    return {**bootstrapped_rollout_spec(env, num_envs, unroll_length), **visited_rooms_spec(num_envs, unroll_length)}


def recurrent_rollout_spec(core_size: int):
    """The spec function (env, num_envs, unroll_length) -> shapes of `RecurrentOnPolicyActor`'s buffers:
    `bootstrapped_rollout_spec`, the core state (h, c) at the start of the rollout ('core_h', 'core_c' [N,
    core_size]), and per step the previous action, the previous reward and whether the step starts an episode
    ('prev_action', 'prev_reward', 'episode_start' [T + 1, N]: the T steps, then the step of the last observation
    for the bootstrap)."""

    def spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {
            **bootstrapped_rollout_spec(env, num_envs, unroll_length),
            'core_h': ((num_envs, core_size), torch.float32),
            'core_c': ((num_envs, core_size), torch.float32),
            'prev_action': ((unroll_length + 1, num_envs), torch.int64),
            'prev_reward': ((unroll_length + 1, num_envs), torch.float32),
            'episode_start': ((unroll_length + 1, num_envs), torch.bool),
        }

    return spec


class RecurrentOnPolicyActor(OnPolicyActor):
    """`OnPolicyActor` for a recurrent policy (`networks.policy.RecurrentActorCritic`): it carries, per environment
    and across rollouts, the core state, the previous action and reward (the learning reward) and whether the next
    step starts an episode; all three are zeroed when an episode ends (a lost life is no episode end). Each
    `collect` writes what `OnPolicyActor` writes, the core state the rollout started from and the network's
    per-step inputs (see `recurrent_rollout_spec`), so the learner can unroll the core over the same steps."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        num_envs = self.env.num_envs
        self._state = self.network.initial_state(num_envs)
        self._prev_action = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        self._prev_reward = torch.zeros(num_envs, device=self.device)
        self._episode_start = torch.ones(num_envs, dtype=torch.bool, device=self.device)

    def _inputs(self, t: int, buffer: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Records the network's inputs of step t besides the observation and returns them as [1, N] sequences."""
        buffer['prev_action'][t] = self._prev_action.cpu()
        buffer['prev_reward'][t] = self._prev_reward.cpu()
        buffer['episode_start'][t] = self._episode_start.cpu()
        return self._prev_action[None], self._prev_reward[None], self._episode_start[None]

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        buffer['core_h'].copy_(self._state[0])
        buffer['core_c'].copy_(self._state[1])
        for t in range(self.unroll_length):
            observation = as_tensor(self._observation, self.device)
            output = self.network(observation[None], *self._inputs(t, buffer), self._state)
            distribution = policy_distribution(output)
            action = distribution.sample()[0]
            log_prob = distribution.log_prob(action[None])[0]
            step = self.env.step(action.cpu().numpy())
            reward = step.reward
            if self.reward_scaler is not None:
                reward = self.reward_scaler.scale(reward, step.terminated | step.truncated)
            reward = torch.from_numpy(reward.astype(np.float32))
            played_reward = torch.from_numpy(step.reward.astype(np.float32)).to(self.device)
            truncated = step.truncated & ~step.terminated
            if truncated.any():  # bootstrap a time limit from the core state the episode would have gone on with
                rows = torch.from_numpy(truncated).to(self.device)
                final = as_tensor(step.final_observation[truncated], self.device)
                state = (output.state[0][rows], output.state[1][rows])
                inputs = (action[rows][None], played_reward[rows][None], torch.zeros_like(action[rows][None], dtype=torch.bool))
                reward[truncated] += self.discount * self.network(final[None], *inputs, state).value[0].float().cpu()
            episode_end = step.terminated | step.truncated
            terminal = episode_end | (step.life_loss & self.terminal_on_life_loss)
            buffer['observation'][t] = observation.cpu()
            buffer['action'][t] = action.cpu()
            buffer['log_prob'][t] = log_prob.cpu()
            buffer['value'][t] = output.value[0].cpu()
            buffer['reward'][t] = reward
            buffer['discount'][t] = torch.from_numpy(self.discount * (1.0 - terminal.astype(np.float32)))
            finished += self._episodes.step(step.raw_reward, episode_end)
            self._observation = step.observation
            # The next step's inputs: zeros where the episode ended and the next step starts a new one.
            ended = torch.from_numpy(episode_end).to(self.device)
            keep = (~ended).to(output.state[0].dtype)[:, None]
            self._state = (output.state[0] * keep, output.state[1] * keep)
            self._prev_action = torch.where(ended, 0, action)
            self._prev_reward = torch.where(ended, 0.0, played_reward)
            self._episode_start = ended
        last_observation = as_tensor(self._observation, self.device)
        # V(x_T) with the carried state; the state it returns is dropped (the next rollout starts at x_T).
        inputs = self._inputs(self.unroll_length, buffer)
        buffer['value'][self.unroll_length] = self.network(last_observation[None], *inputs, self._state).value[0].cpu()
        buffer['last_observation'].copy_(last_observation)
        return finished


def transition_spec(env: VectorEnvironment, num_envs: int, unroll_length: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Shapes of one off-policy actor's buffer (`TransitionActor`): [T, N, ...] per step, everything
    `replay.UniformReplay.add` takes: the observation acted on, the action, the learning reward, the learning
    terminal, whether the episode ended, and the observation that followed within the episode (used where a time
    limit truncated it)."""
    steps = unroll_length
    observation_space, action_space = env.single_observation_space, env.single_action_space
    observation_dtype = torch.from_numpy(np.empty(0, observation_space.dtype)).dtype
    return {
        'observation': ((steps, num_envs, *observation_space.shape), observation_dtype),
        'action': ((steps, num_envs, *action_space.shape), torch.int64 if not action_space.shape else torch.float32),
        'reward': ((steps, num_envs), torch.float32),
        'terminal': ((steps, num_envs), torch.bool),
        'episode_end': ((steps, num_envs), torch.bool),
        'final_observation': ((steps, num_envs, *observation_space.shape), observation_dtype),
    }


class TransitionActor(SamplingActor):
    """Samples actions from the current policy for a vector of environments and writes the steps, not rollouts to
    learn from on-policy, for a replay on the learner side (off-policy agents: discrete SAC).

    Each `collect` fills `unroll_length` steps per environment (see `transition_spec`). The learning terminal is the
    true end of the game, or a lost life when `terminal_on_life_loss` (as in `replay_agent.ReplayAgent`); a time
    limit is an episode end but no terminal, so the replay bootstraps from its final observation."""

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        for t in range(self.unroll_length):
            observation = as_tensor(self._observation, self.device)
            action = policy_distribution(self.network(observation)).sample().cpu()
            env_action = action.numpy()
            if self._action_bounds is not None:
                env_action = np.clip(env_action, *self._action_bounds)
                action = torch.from_numpy(env_action.astype(np.float32))  # replay learns from the action played
            step = self.env.step(env_action)
            episode_end = step.terminated | step.truncated
            buffer['observation'][t] = torch.from_numpy(np.asarray(self._observation))
            buffer['action'][t] = action
            buffer['reward'][t] = torch.from_numpy(step.reward.astype(np.float32))
            buffer['terminal'][t] = torch.from_numpy(step.terminated | (step.life_loss & self.terminal_on_life_loss))
            buffer['episode_end'][t] = torch.from_numpy(episode_end)
            buffer['final_observation'][t] = torch.from_numpy(np.asarray(step.final_observation))
            finished += self._episodes.step(step.raw_reward, episode_end)
            self._observation = step.observation
        return finished


def policy_set_rollout_spec(env: VectorEnvironment, num_envs: int, unroll_length: int, state_size: int = 0) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """The buffers of `PolicySetActor`: `bootstrapped_rollout_spec` with the behaviour values of the T steps only ([T,
    N]: the learner computes the bootstrap value V(x_T) itself, as APPO's does), plus the behaviour logits, the
    time-limit truncations and which policy acted ([T + 1, N]: the last row is the policy of the bootstrap value);
    with a recurrent core (`state_size` > 0) also the core state before each step and whether the step starts an
    episode ([T + 1, N]: the last row is the bootstrap step's)."""
    spec = {
        **bootstrapped_rollout_spec(env, num_envs, unroll_length),
        'value': ((unroll_length, num_envs), torch.float32),
        'logits': ((unroll_length, num_envs, int(env.single_action_space.n)), torch.float32),
        'time_out': ((unroll_length, num_envs), torch.bool),
        'policy': ((unroll_length + 1, num_envs), torch.int64),
    }
    if state_size:
        spec['core_state'] = ((unroll_length + 1, num_envs, state_size), torch.float32)
        spec['episode_start'] = ((unroll_length + 1, num_envs), torch.bool)
    return spec


class PolicySetActor(SamplingActor):
    """Sample Factory's sampling (Petrenko et al. 2020) of a set of independent policies
    (`networks.sample_factory.PolicySet`): each environment plays one policy, drawn at random at the start and redrawn
    every `POLICY_REDRAW_EPISODES` episodes. Fills one rollout (`policy_set_rollout_spec`) per `collect`. Rewards are
    stored as the environment gives them (the learner scales and clips them); discounts are gamma * (1 - terminal).
    A recurrent policy keeps one core state per environment, zeroed when an episode starts, and stores the state
    each step starts from (the learner unrolls its chunks from them)."""

    POLICY_REDRAW_EPISODES = 10

    def __init__(self, network: nn.Module, env: VectorEnvironment, unroll_length: int, discount: float, terminal_on_life_loss: bool, seed: int, device: torch.device = torch.device('cpu')):
        super().__init__(network, env, unroll_length, terminal_on_life_loss, seed, device)
        self.discount = discount
        self._random = np.random.default_rng(seed)
        self.policy = self._random.integers(len(network), size=env.num_envs)
        self._episodes_played = np.zeros(env.num_envs, dtype=np.int64)
        if network.is_recurrent:
            self._core_state = network.policies[0].initial_state(env.num_envs).to(device)
            self._episode_start = torch.ones(env.num_envs, dtype=torch.bool, device=device)

    def _after_episodes(self, ended: np.ndarray) -> None:
        """Every 10th episode of an environment ends with a new random policy for it."""
        self._episodes_played += ended
        redraw = ended & (self._episodes_played % self.POLICY_REDRAW_EPISODES == 0)
        if redraw.any() and len(self.network) > 1:
            self.policy[redraw] = self._random.integers(len(self.network), size=int(redraw.sum()))

    @torch.no_grad()
    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        finished: list[tuple[float, int]] = []
        recurrent = self.network.is_recurrent
        for t in range(self.unroll_length):
            observation = as_tensor(self._observation, self.device)
            policy = torch.from_numpy(self.policy.copy())
            if recurrent:
                output, self._core_state = self.network.step(observation, self._starting_state(buffer, t))
            else:
                output = self.network(observation, policy.to(self.device))
            distribution = torch.distributions.Categorical(logits=output.logits, validate_args=False)
            action = distribution.sample()
            step = self.env.step(action.cpu().numpy())
            terminal = step.terminated | step.truncated | (step.life_loss & self.terminal_on_life_loss)
            buffer['observation'][t] = observation.cpu()
            buffer['action'][t] = action.cpu()
            buffer['log_prob'][t] = distribution.log_prob(action).cpu()
            buffer['logits'][t] = output.logits.cpu()
            buffer['value'][t] = output.value.cpu()
            buffer['policy'][t] = policy
            buffer['reward'][t] = torch.from_numpy(step.reward.astype(np.float32))
            buffer['discount'][t] = torch.from_numpy(self.discount * (1.0 - terminal.astype(np.float32)))
            buffer['time_out'][t] = torch.from_numpy(step.truncated & ~step.terminated)
            ended = step.terminated | step.truncated
            finished += self._episodes.step(step.raw_reward, ended)
            self._after_episodes(ended)
            self._observation = step.observation
            if recurrent:
                self._episode_start = torch.from_numpy(ended).to(self.device)
        if recurrent:  # the bootstrap step's state; the next rollout's first step starts from it too
            self._starting_state(buffer, self.unroll_length)
        buffer['policy'][self.unroll_length] = torch.from_numpy(self.policy.copy())
        buffer['last_observation'].copy_(as_tensor(self._observation, self.device))
        return finished

    def _starting_state(self, buffer: dict[str, torch.Tensor], t: int) -> torch.Tensor:
        """The core state step t starts from (zero where an episode starts), stored in the rollout with the flag."""
        state = self._core_state * (~self._episode_start).to(self._core_state.dtype).unsqueeze(-1)
        buffer['core_state'][t] = state.cpu()
        buffer['episode_start'][t] = self._episode_start.cpu()
        return state
