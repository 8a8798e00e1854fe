"""Train REINFORCE with baseline on Atari (it runs end to end; Monte-Carlo policy gradient learns Atari games only
slowly). Every flag and default is REINFORCE's run_atari (the baseline's value loss weight is --value_coef).

    python -m deep_rl_zoo.reinforce_baseline.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.reinforce_baseline import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
