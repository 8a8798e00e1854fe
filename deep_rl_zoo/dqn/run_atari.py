"""Train DQN on Atari with the Nature DQN hyperparameters (frames = 4 x env steps).

    python -m deep_rl_zoo.dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.dqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
