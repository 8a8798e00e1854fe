"""Train the n-step actor-critic on Atari with A3C/A2C's settings (Mnih et al. 2016: n = 5, entropy 0.01).

    python -m deep_rl_zoo.actor_critic.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.actor_critic import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
