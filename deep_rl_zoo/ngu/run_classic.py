"""Train NGU on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.ngu.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.ngu.run_classic --environment_name=MiniGrid-DoorKey-5x5-v0

R2D2's CartPole settings (`r2d2.run_classic`) with NGU's parts: 8 environments (2 actors of 4) play the N = 8 policies
one each; shorter horizons than the paper's Atari ones (gamma 0.99 for policy 0 down to 0.97) for short episodes.
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ngu import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_asynchronous(batch_rollouts=1, max_policy_lag=1_000_000)  # replay is off-policy anyway: drop nothing
flags.define_ngu()
flags.set_defaults(**agent.CLASSIC_SETTINGS)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
