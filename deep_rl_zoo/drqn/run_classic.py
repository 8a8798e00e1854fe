"""Train DRQN on classic control.

    python -m deep_rl_zoo.drqn.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.drqn.run_classic --obscure_probability=0.5    # a partially observed CartPole
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_recurrent_replay()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family
flags.set_defaults(
    num_iterations=6,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=250,
    unroll_length=8,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
