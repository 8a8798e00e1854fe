"""Train prioritized DQN on classic control.

    python -m deep_rl_zoo.prioritized_dqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.prioritized_dqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_prioritized_replay()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family
flags.set_defaults(
    priority_exponent=0.6,
    importance_sampling_exponent_begin_value=0.4,
    importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=200_000,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
