"""Train DRQN on Atari (Hausknecht & Stone 2015): single frames into a conv + LSTM network, 10-step sequences.

    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong
    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong --obscure_probability=0.5   # Flickering Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_recurrent_replay()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    environment_frame_stack=1,
    replay_capacity=400_000,
    unroll_length=10,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
