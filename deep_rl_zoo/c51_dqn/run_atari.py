"""Train C51 on Atari with the paper's hyperparameters: Adam lr 0.00025, eps 0.01/32, 51 atoms on [-10, 10],
otherwise Nature DQN's (frames = 4 x env steps).

    python -m deep_rl_zoo.c51_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.c51_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_categorical()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    learning_rate=0.00025,
    adam_eps=0.01 / 32,
    num_atoms=51,
    v_min=-10.0,
    v_max=10.0,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
