"""Agent57: "Agent57: Outperforming the Atari Human Benchmark" (Badia et al. 2020), on NGU (`deep_rl_zoo.ngu`).

What Agent57 changes in NGU (sections 3 and 4):

1. Two Q heads on the one recurrent network, extrinsic Q^e and intrinsic Q^i, each learned by transformed Retrace on
   its own reward (r^e for Q^e, r^i for Q^i; the original zoo trained both on the mixed reward: wrong) with policy
   j's discount gamma_j. Both evaluate the same greedy target policy, that of the combined values below.
2. The agent acts (and its Retrace target policy is greedy) on Q(x, a, j) = h(h^-1(Q^e) + beta_j h^-1(Q^i)), whose
   argmax is that of h^-1(Q^e) + beta_j h^-1(Q^i) (`combined_values`).
3. Each environment's policy j is chosen anew at every episode start by its own sliding-window UCB meta-controller
   (`meta_controller.SlidingWindowUcb`), rewarded by the episode's extrinsic return (Agent57's actors are our
   environments).

Priorities are R2D2's of the mean of the two heads' |td|. Evaluation plays policy 0 (beta 0: Q^e alone).
"""

from typing import Any

import numpy as np
import torch

from deep_rl_zoo import transformed_returns
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.meta_controller import SlidingWindowUcb
from deep_rl_zoo.networks.ngu import NguNetworks
from deep_rl_zoo.ngu import agent as ngu
from deep_rl_zoo.r2d2.agent import apex_epsilons

EXTRINSIC, INTRINSIC = 0, 1


def combined_values(q_values: torch.Tensor, beta: torch.Tensor, eps: float = transformed_returns.VALUE_RESCALING_EPS) -> torch.Tensor:
    """h^-1(Q^e) + beta_j h^-1(Q^i) [..., A] from both heads' values [..., 2, A] (h-space) and beta [...]: the
    values, in return units, whose argmax is the greedy action of policy j."""
    q_extrinsic = transformed_returns.signed_parabolic(q_values[..., EXTRINSIC, :], eps)
    q_intrinsic = transformed_returns.signed_parabolic(q_values[..., INTRINSIC, :], eps)
    return q_extrinsic + beta.unsqueeze(-1) * q_intrinsic


class Agent57Policy(ngu.NguPolicy):
    """`NguPolicy` acting on `combined_values`, each environment's policy chosen per episode by its bandit (or fixed,
    without bandits: the evaluation's policy 0)."""

    def __init__(self, *args: Any, betas: np.ndarray, bandits: list[SlidingWindowUcb] | None, value_rescaling_eps: float, **kwargs: Any):
        self.bandits = bandits
        self.value_rescaling_eps = value_rescaling_eps
        self._betas = torch.as_tensor(betas, dtype=torch.float32)
        super().__init__(*args, **kwargs)
        self._betas = self._betas.to(self.device)

    def next_policy(self, env: int, episode_return: float | None) -> int:
        """The bandit's arm for the next episode, after recording the return of the one that ended."""
        if self.bandits is None:
            return super().next_policy(env, episode_return)
        if episode_return is not None:
            self.bandits[env].update(int(self.policy[env]), episode_return)
        return self.bandits[env].select()

    def acting_values(self, q_values: torch.Tensor, policy: torch.Tensor) -> torch.Tensor:
        return combined_values(q_values, self._betas[policy], self.value_rescaling_eps)


class Agent57Learner(ngu.NguLearner):
    """NGU's learner with two heads, each on its own reward (see the module docstring)."""

    agent_name = 'Agent57'

    def value_targets(self, q_all, q_target, action, reward, intrinsic, discount, mask, beta) -> list[torch.Tensor]:
        """Transformed Retrace targets [T, B] of Q^e on r^e and of Q^i on r^i, both with the greedy policy of the
        online network's combined values."""
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


make_network = ngu.make_network_for(2)
build_learner = ngu.build_learner_of(Agent57Learner)


def make_policy(network: NguNetworks, values: dict[str, Any], epsilons: np.ndarray, bandits: list[SlidingWindowUcb] | None, seed: int, device: torch.device) -> Agent57Policy:
    network = network.to(device)
    memory = ngu.episodic_memory(values, len(epsilons), network.embedding.embedding_size)
    betas, _ = ngu.policy_family(values)
    return Agent57Policy(
        network, epsilons, np.zeros(len(epsilons), np.int64), memory, values['max_lifelong_modulation'], seed, device,
        betas=betas, bandits=bandits, value_rescaling_eps=values['value_rescaling_eps'],
    )  # fmt: skip


def build_actor(network: NguNetworks, env: VectorEnvironment, values: dict[str, Any], seed: int, device: torch.device) -> ngu.NguActor:
    """NGU's actor with a meta-controller per environment (seeded apart) choosing its policies."""
    first_stream = seed - values['seed']
    num_envs = env.num_envs
    epsilons = apex_epsilons(values['num_actors'] * num_envs, values['exploration_epsilon_base'], values['exploration_epsilon_alpha'])[first_stream : first_stream + num_envs]
    bandits = [
        SlidingWindowUcb(values['num_policies'], values['ucb_window_size'], values['ucb_beta'], values['ucb_epsilon'], seed=seed + index) for index in range(num_envs)
    ]
    policy = make_policy(network, values, epsilons, bandits, seed, device)
    return ngu.NguActor(policy, ngu.actor_environment(env, values, seed), values['actor_update_interval'], first_stream, values.get('terminal_on_life_loss', False))


def eval_policy(network: NguNetworks, values: dict[str, Any], epsilon: float, seed: int, device: torch.device = torch.device('cpu')) -> Agent57Policy:
    """The evaluation's policy: policy 0 (beta 0: greedy on Q^e), epsilon-greedy, one environment."""
    return make_policy(network, values, np.array([epsilon]), None, seed, device)


def train(kind: str) -> None:
    ngu.train(kind, build_learner=build_learner, build_actor=build_actor, make_network=make_network, make_eval_policy=eval_policy)
