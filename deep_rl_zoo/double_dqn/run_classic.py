"""Train Double DQN on classic control.

    python -m deep_rl_zoo.double_dqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.double_dqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
