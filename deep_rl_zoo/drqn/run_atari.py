"""Train DRQN on Atari (Hausknecht & Stone 2015): single frames into a conv + LSTM network, 10-step sequences.

    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong
    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong --obscure_probability=0.5   # Flickering Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
