"""Probe of a trained NGU or Agent57 checkpoint: what does policy 0 (beta 0, NGU's greedy evaluation) believe along the
trajectories each policy of the family plays?

    python -m benchmarks.ngu_policy_zero_values --checkpoint PATH/NGU_MiniGrid-MultiRoom-N4-S5-v0_9.ckpt --steps 2500

Plays one environment per policy j (epsilon-greedy on policy j's own Q values, as an actor does) and, beside it, a
second LSTM state fed the same observations and previous action and rewards but the one-hot of policy 0: the values a
relabelled policy-0 copy of that sequence would see in training (Agent57: its extrinsic network's Q^e for policy 0). It prints, per policy, the episodes played and the
goals reached, and the level of max_a Q_0 (the network's output, in value-rescaled space, and h^-1 of it in return
units); then, for the first episodes that reached the goal, max_a Q_0 over their last 25 steps. On a sparse-reward
task policy 0's true values are 0 wherever the goal is out of reach, so a high, flat level means policy 0's values
come from elsewhere than its own rewards.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from deep_rl_zoo import checkpoint, main_loop, transformed_returns
from deep_rl_zoo.greedy_actors import as_tensor
from deep_rl_zoo.agent57 import agent as agent57
from deep_rl_zoo.agent57.settings import Agent57Settings
from deep_rl_zoo.networks.ngu import StepInputs
from deep_rl_zoo.ngu import agent as ngu
from deep_rl_zoo.ngu.settings import NguSettings


class FixedPolicies(agent57.Agent57Policy):
    """Agent57's acting (on h^-1(Q^e) + beta_j h^-1(Q^i)) with environment j always playing policy j."""

    def next_policy(self, env: int, episode_return: float | None) -> int:
        return env


def family_policy(agent_name: str, network: ngu.NguNetworks, settings: NguSettings, epsilon: float, seed: int) -> ngu.NguPolicy:
    """One environment per policy j, each on policy j, epsilon-greedy."""
    num_policies = settings.num_policies
    epsilons = np.full(num_policies, epsilon)
    if agent_name == 'NGU':
        return ngu.make_policy(network, settings, epsilons, np.arange(num_policies), seed, torch.device('cpu'))
    memory = ngu.episodic_memory(settings, num_policies, network.embedding.embedding_size)
    betas, _ = ngu.policy_family(settings)
    return FixedPolicies(
        network, epsilons, np.arange(num_policies), memory, settings.max_lifelong_modulation, seed,
        betas=betas, bandits=None, value_rescaling_eps=settings.value_rescaling_eps,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--checkpoint', required=True, help='an NGU or Agent57 .ckpt written by training')
    parser.add_argument('--steps', type=int, default=2500, help='vector steps (one environment per policy)')
    parser.add_argument('--epsilon', type=float, default=0.05, help="every policy's exploration epsilon")
    parser.add_argument('--seed', type=int, default=123)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cpu = torch.device('cpu')
    loaded = checkpoint.load_checkpoint(args.checkpoint, agent_name=('NGU', 'Agent57'))
    agent_name = loaded['agent_name']
    train_settings = (NguSettings if agent_name == 'NGU' else Agent57Settings)().with_values(loaded['flags'])
    num_policies = train_settings.num_policies
    env = main_loop.create_environment(train_settings, num_policies, args.seed, use_python_wrappers=True)
    network = (ngu.make_network if agent_name == 'NGU' else agent57.make_network)(env, train_settings)
    checkpoint.load_state(network, loaded['state']['network'], args.checkpoint)
    network.eval()
    policy = family_policy(agent_name, network, train_settings, args.epsilon, args.seed)
    observation = env.reset()
    policy_zero = np.zeros(num_policies, np.int64)
    shadow_state = None
    episode_values: list[list[float]] = [[] for _ in range(num_policies)]
    all_values: list[list[float]] = [[] for _ in range(num_policies)]
    episodes, goals, goal_tails = np.zeros(num_policies, int), np.zeros(num_policies, int), []
    for _ in range(args.steps):
        with torch.no_grad():
            arrays = (policy.previous_action, policy.previous_reward, policy.previous_intrinsic_reward, policy_zero)
            inputs = StepInputs(*(as_tensor(array, cpu).unsqueeze(0) for array in arrays))
            first = as_tensor(policy._first, cpu).unsqueeze(0)  # pylint: disable=protected-access
            q_zero, shadow_state = network.q(as_tensor(observation, cpu).unsqueeze(0), inputs, shadow_state, first)
        q_zero = q_zero.squeeze(0) if agent_name == 'NGU' else q_zero.squeeze(0)[:, agent57.EXTRINSIC]
        best = q_zero.max(dim=-1).values.numpy()
        action = policy.act(observation)
        step = env.step(action)
        policy.observe(action, step)
        for j in range(num_policies):
            episode_values[j].append(float(best[j]))
            all_values[j].append(float(best[j]))
        for j in np.flatnonzero(step.terminated | step.truncated):
            episodes[j] += 1
            if step.raw_reward[j] > 0:
                goals[j] += 1
                goal_tails.append((j, len(episode_values[j]), episode_values[j][-25:]))
            episode_values[j] = []
        observation = step.observation
    eps = train_settings.value_rescaling_eps
    print(f'{agent_name} {args.checkpoint}: {args.steps} steps per policy, epsilon {args.epsilon}')
    print('| policy | episodes | goals | max Q_0 median (h) | p99 (h) | median in returns | p99 in returns |')
    print('|---:|---:|---:|---:|---:|---:|---:|')
    for j in range(num_policies):
        level = np.array(all_values[j])
        median, p99 = float(np.median(level)), float(np.percentile(level, 99))
        in_returns = transformed_returns.signed_parabolic(torch.tensor([median, p99]), eps).tolist()
        print(f'| {j} | {episodes[j]} | {goals[j]} | {median:.3f} | {p99:.3f} | {in_returns[0]:.2f} | {in_returns[1]:.2f} |')
    for j, length, tail in goal_tails[:10]:
        print(f'goal by policy {j} after {length} steps; max Q_0 over its last 25 steps: {np.round(tail, 3).tolist()}')


if __name__ == '__main__':
    main()
