"""Train IQN on classic control.

    python -m deep_rl_zoo.iqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.iqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_quantile()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family
flags.set_defaults(
    tau_samples_s_tm1=8,
    tau_samples_s_t=8,
    tau_samples_policy=8,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
