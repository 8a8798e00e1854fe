"""Agent57: "Agent57: Outperforming the Atari Human Benchmark" (Badia et al. 2020), on NGU (`deep_rl_zoo.ngu`).

What Agent57 changes in NGU (sections 3 and 4):

1. Two recurrent Q networks that share no parameter (section 4: theta_e and theta_i; `networks.ngu.TwoQNetworks`),
   extrinsic Q^e and intrinsic Q^i, each with its own torso, LSTM, dueling head and target network copy, each
   learned by transformed Retrace on its own reward (r^e for Q^e, r^i for Q^i; the original zoo trained both on the
   mixed reward: wrong) with policy j's discount gamma_j. Both evaluate the same greedy target policy, that of the
   combined values below. Each network's gradient is clipped on its own, so the intrinsic one's cannot shrink the
   extrinsic one's.
2. The agent acts (and its Retrace target policy is greedy) on Q(x, a, j) = h(h^-1(Q^e) + beta_j h^-1(Q^i)), whose
   argmax is that of h^-1(Q^e) + beta_j h^-1(Q^i) (`combined_values`).
3. Each environment's policy j is chosen anew at every episode start by its own sliding-window UCB meta-controller
   (`meta_controller.SlidingWindowUcb`), rewarded by the episode's extrinsic return (Agent57's actors are our
   environments).

A sequence's priority gives each network's TD errors an equal say (`Agent57Learner.row_priorities`). As NGU's, the
learner also learns policy 0 from every sampled sequence (`NguLearner.with_policy_zero_copies`). Evaluation plays
the meta-controllers' best arm: the policy with the highest mean extrinsic return over the episodes of all
environments in their windows (`best_arm`, kept by the learner in the networks' `best_arm` buffer).
"""

import collections
from typing import Any, Iterable

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import transformed_returns
from deep_rl_zoo.agent57.settings import Agent57Settings
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.meta_controller import SlidingWindowUcb
from deep_rl_zoo.networks.ngu import NguNetworks, ngu_networks
from deep_rl_zoo.ngu import agent as ngu
from deep_rl_zoo.ngu import replay as ngu_replay
from deep_rl_zoo.sequence_learning import apex_epsilons

EXTRINSIC, INTRINSIC = 0, 1


def best_arm(history: Iterable[tuple[int, float]], num_arms: int) -> int:
    """The arm with the highest mean return over `history` (arm, episode return) pairs; the lowest such arm on a tie,
    arm 0 when `history` is empty. Arms absent from it do not count (a bandit's UCB would try them first)."""
    counts, sums = np.zeros(num_arms), np.zeros(num_arms)
    for arm, episode_return in history:
        counts[arm] += 1
        sums[arm] += episode_return
    if not counts.any():
        return 0
    means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
    return int(np.argmax(means))


def combined_values(q_values: torch.Tensor, beta: torch.Tensor, eps: float = transformed_returns.VALUE_RESCALING_EPS) -> torch.Tensor:
    """h^-1(Q^e) + beta_j h^-1(Q^i) [..., A] from both heads' values [..., 2, A] (h-space) and beta [...]: the
    values, in return units, whose argmax is the greedy action of policy j."""
    q_extrinsic = transformed_returns.signed_parabolic(q_values[..., EXTRINSIC, :], eps)
    q_intrinsic = transformed_returns.signed_parabolic(q_values[..., INTRINSIC, :], eps)
    return q_extrinsic + beta.unsqueeze(-1) * q_intrinsic


class Agent57Policy(ngu.NguPolicy):
    """`NguPolicy` acting on `combined_values`, each environment's policy chosen per episode by its bandit (or fixed,
    without bandits: the evaluation's best arm)."""

    def __init__(self, *args: Any, betas: np.ndarray, bandits: list[SlidingWindowUcb] | None, value_rescaling_eps: float, **kwargs: Any):
        self.bandits = bandits
        self.value_rescaling_eps = value_rescaling_eps
        self._betas = torch.as_tensor(betas, dtype=torch.float32)
        super().__init__(*args, **kwargs)
        self._betas = self._betas.to(self.device)

    def next_policy(self, env: int, episode_return: float | None) -> int:
        """The bandit's arm for the next episode, after recording the return of the one that ended; without bandits
        (evaluation) the networks' `best_arm` as it is at that episode start."""
        if self.bandits is None:
            return int(self.networks.best_arm)
        if episode_return is not None:
            self.bandits[env].update(int(self.policy[env]), episode_return)
        return self.bandits[env].select()

    def acting_values(self, q_values: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
        return combined_values(q_values, self._betas[policy], self.value_rescaling_eps)


class Agent57Learner(ngu.NguLearner):
    """NGU's learner with two Q networks, each on its own reward (see the module docstring)."""

    agent_name = 'Agent57'
    head_names = ('extrinsic', 'intrinsic')

    def __init__(self, *args: Any, arm_window: int, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.arm_returns: collections.deque[tuple[int, float]] = collections.deque(maxlen=arm_window)

    def update(self, buffers: list[dict[str, torch.Tensor]]) -> None:
        """NGU's update, after adding the (arm, extrinsic return) of each episode the rollouts end to the window of the
        last `arm_window` episodes and setting the networks' `best_arm` from it."""
        for buffer in buffers:
            ends = buffer['episode_end'].numpy()
            arms = buffer['extras'][:, :, ngu_replay.POLICY].numpy()[ends].astype(np.int64)
            self.arm_returns.extend(zip(arms.tolist(), buffer['episode_return'].numpy()[ends].tolist()))
        self.network.best_arm.fill_(best_arm(self.arm_returns, self.network.q.num_policies))
        super().update(buffers)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), 'arm_returns': [[arm, episode_return] for arm, episode_return in self.arm_returns]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.arm_returns.clear()
        self.arm_returns.extend((int(arm), float(episode_return)) for arm, episode_return in state['arm_returns'])

    def value_targets(self, q_all, q_target, action, reward, intrinsic, discount, mask, beta) -> list[torch.Tensor]:
        """Transformed Retrace targets [T, B] of Q^e on r^e and of Q^i on r^i, both with the greedy policy of the
        online networks' combined values."""
        selector = combined_values(q_all, beta.expand(q_all.shape[0], -1), self.value_rescaling_eps)
        return [
            transformed_returns.transformed_retrace_targets(
                selector, q_target[:, :, head], action, head_reward, discount, mask, self.retrace_lambda, self.value_rescaling_eps
            )
            for head, head_reward in ((EXTRINSIC, reward), (INTRINSIC, intrinsic))
        ]

    def taken_values(self, q_all: torch.Tensor, action: torch.Tensor) -> list[torch.Tensor]:
        index = action.unsqueeze(-1)
        return [q_all[:-1, :, head].gather(-1, index).squeeze(-1) for head in (EXTRINSIC, INTRINSIC)]

    def clip_gradients(self) -> dict[str, torch.Tensor]:
        """Clips each network's gradient norm to `max_grad_norm` on its own (one joint clip would let the intrinsic
        gradient scale the extrinsic one down: on the MultiRoom batches of `row_priorities` their norms were 150 and
        0.043); their norms before the clip."""
        limit = self.max_grad_norm if self.max_grad_norm > 0 else float('inf')
        q = self.network.q
        return {f'grad_norm_{name}': nn.utils.clip_grad_norm_(network.parameters(), limit) for name, network in (('extrinsic', q.extrinsic), ('intrinsic', q.intrinsic))}

    def row_priorities(self, td_errors: list[torch.Tensor], learned: torch.Tensor) -> torch.Tensor:
        """The mean over the two networks of R2D2's sequence priority of its TD errors divided by its mean over the
        batch: each network decides half of the batch's priority mass, whatever the scale of its rewards. The mean of
        the raw |td| would be decided by Q^i alone: measured on MultiRoom-N4-S5 (a checkpoint of 20k env steps, 8
        batches of its actors' sequences), Q^e's priorities averaged 0.018 and Q^i's 2.5, and the priority of the
        mean |td| correlated 1.000 with Q^i's alone."""
        normalised = []
        for name, td_error in zip(self.head_names, td_errors):
            priority = transformed_returns.sequence_priorities(td_error.detach(), learned, self.priority_eta)
            self.statistics.record(**{f'priority_{name}_mean': priority.mean()})  # before the division: each network's scale
            normalised.append(priority / priority.mean().clamp(min=1e-8))
        return torch.stack(normalised).mean(dim=0)


def make_network(env: VectorEnvironment, settings: Agent57Settings) -> NguNetworks:
    """Agent57's networks: NGU's embedding and RND, and two Q networks apart (Q^e, Q^i)."""
    return ngu_networks(settings.environment_kind, env.single_observation_space.shape, int(env.single_action_space.n), settings.num_policies, two_q_networks=True)


def rollout_spec(steps: int, kind: str):
    """NGU's rollout spec with the state of both Q networks' LSTMs."""
    return ngu.rollout_spec(steps, kind, num_q_networks=2)

# The best arm's window: the episodes the meta-controllers of all environments look back on together.
build_learner = ngu.build_learner_of(
    Agent57Learner, lambda settings: {'arm_window': settings.ucb_window_size * settings.num_actors * settings.num_envs_per_actor}
)


def make_policy(
    network: NguNetworks, settings: Agent57Settings, epsilons: np.ndarray, bandits: list[SlidingWindowUcb] | None, seed: int, device: torch.device
) -> Agent57Policy:
    network = network.to(device)
    memory = ngu.episodic_memory(settings, len(epsilons), network.embedding.embedding_size)
    betas, _ = ngu.policy_family(settings)
    return Agent57Policy(
        network, epsilons, np.zeros(len(epsilons), np.int64), memory, settings.max_lifelong_modulation, seed, device,
        betas=betas, bandits=bandits, value_rescaling_eps=settings.value_rescaling_eps,
    )  # fmt: skip


def build_actor(network: NguNetworks, env: VectorEnvironment, settings: Agent57Settings, seed: int, device: torch.device) -> ngu.NguActor:
    """NGU's actor with a meta-controller per environment (seeded apart) choosing its policies."""
    first_stream = seed - settings.seed
    num_envs = env.num_envs
    epsilons = apex_epsilons(settings.num_actors * num_envs, settings.exploration_epsilon_base, settings.exploration_epsilon_alpha)[first_stream : first_stream + num_envs]
    bandits = [
        SlidingWindowUcb(settings.num_policies, settings.ucb_window_size, settings.ucb_beta, settings.ucb_epsilon, seed=seed + index) for index in range(num_envs)
    ]
    policy = make_policy(network, settings, epsilons, bandits, seed, device)
    return ngu.NguActor(policy, env, settings.actor_update_interval, first_stream, settings.life_loss_is_terminal)


def eval_policy(network: NguNetworks, settings: Agent57Settings, epsilon: float, seed: int, device: torch.device = torch.device('cpu')) -> Agent57Policy:
    """The evaluation's policy: the networks' `best_arm` (read at each episode start), epsilon-greedy, one environment."""
    return make_policy(network, settings, np.array([epsilon]), None, seed, device)


def train(run_settings: Agent57Settings) -> None:
    """Entry point of Agent57's run scripts: NGU's (`ngu.train`) with Agent57's learner, actors, networks and evaluation policy."""
    ngu.train(run_settings, build_learner=build_learner, build_actor=build_actor, make_network=make_network, make_eval_policy=eval_policy, num_q_networks=2)
