"""Train PPO on Atari with the paper's hyperparameters (Schulman et al. 2017, Table 5).

    python -m deep_rl_zoo.ppo.run_atari --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
