"""Train A2C on Atari: 16 environments x t_max 5 steps per update, gamma 0.99, entropy weight 0.01 and RMSProp
(alpha 0.99) with the learning rate annealed to 0 as in Mnih et al. (2016, section 8 and supplement); learning rate
7e-4, RMSProp epsilon 1e-5, value weight 0.5 and gradient norm clip 0.5 as in OpenAI Baselines' A2C (the paper
tuned the learning rate per game). 10 iterations of 1M agent steps are Baselines' 40M frames.

    python -m deep_rl_zoo.a2c.run_atari --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.a2c import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
