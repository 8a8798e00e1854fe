"""Train discrete SAC on Atari with the hyperparameters of Christodoulou (2019, table 1): Adam at 3e-4 for critics,
policy and temperature, batch 64, replay of 1M steps, 20,000 steps before learning starts (the first policy is
near uniform, so they are close to the paper's random steps), gamma 0.99, one update every 4 env steps, target
critics copied every 8,000 env steps (2,000 updates, tau 1), target entropy 0.98 log|A|, no gradient clipping.
The paper's budget is 100k env steps (Atari 100k): 5 iterations of 20k. Frames are stored snappy-compressed.

    python -m deep_rl_zoo.sac.run_atari --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.sac import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
