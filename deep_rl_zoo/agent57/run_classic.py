"""Train Agent57 on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.agent57.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.agent57.run_classic --environment_name=MiniGrid-DoorKey-5x5-v0

NGU's settings (`ngu.run_classic`) with Agent57's parts: each of the 8 environments (2 actors of 4) has its own
meta-controller choosing among the N = 8 policies every episode.
"""

from deep_rl_zoo import flags
from deep_rl_zoo.agent57 import agent
from deep_rl_zoo.ngu import agent as ngu_agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_asynchronous(batch_rollouts=1, max_policy_lag=1_000_000)  # replay is off-policy anyway: drop nothing
flags.define_ngu(agent57=True)
flags.set_defaults(**ngu_agent.CLASSIC_SETTINGS)  # NGU's settings


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
