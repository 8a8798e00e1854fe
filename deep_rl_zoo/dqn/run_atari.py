"""Train DQN on Atari with the Nature DQN hyperparameters (frames = 4 x env steps).

    python -m deep_rl_zoo.dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_obscured_observations()  # flickering observations, for the comparison with DRQN and R2D2
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
