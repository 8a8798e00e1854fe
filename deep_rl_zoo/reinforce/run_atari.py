"""Train REINFORCE on Atari (it runs end to end; Monte-Carlo policy gradient learns Atari games only slowly).

    python -m deep_rl_zoo.reinforce.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.reinforce import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
