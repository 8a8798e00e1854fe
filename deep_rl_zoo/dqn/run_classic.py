"""Train DQN on classic control.

    python -m deep_rl_zoo.dqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.dqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_obscured_observations()  # flickering observations, for the comparison with DRQN and R2D2
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
