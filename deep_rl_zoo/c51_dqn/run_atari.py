"""Train C51 on Atari with the paper's hyperparameters: Adam lr 0.00025, eps 0.01/32, 51 atoms on [-10, 10],
otherwise Nature DQN's (frames = 4 x env steps).

    python -m deep_rl_zoo.c51_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.c51_dqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
