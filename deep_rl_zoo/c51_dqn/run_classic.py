"""Train C51 on classic control.

    python -m deep_rl_zoo.c51_dqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.c51_dqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_categorical()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family
flags.set_defaults(
    num_atoms=51,
    v_min=0.0,
    v_max=100.0,  # CartPole pays 1 per step: returns discounted by 0.99 stay below 1 / (1 - 0.99) = 100
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
