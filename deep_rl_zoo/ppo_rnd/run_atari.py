"""Train PPO-RND on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged.

    python -m deep_rl_zoo.ppo_rnd.run_atari
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_rnd import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
