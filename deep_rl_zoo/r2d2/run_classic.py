"""Train R2D2 on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.r2d2.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.r2d2.run_classic --obscure_probability=0.5    # flickering CartPole
    python -m deep_rl_zoo.r2d2.run_classic --environment_name=MiniGrid-MultiRoom-N4-S5-v0
"""

from deep_rl_zoo import flags
from deep_rl_zoo.r2d2 import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=2)
flags.define_asynchronous(batch_rollouts=1, max_policy_lag=1_000_000)  # replay is off-policy anyway: drop nothing
flags.define_r2d2()
flags.set_defaults(**agent.CLASSIC_SETTINGS)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
