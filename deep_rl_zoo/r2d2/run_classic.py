"""Train R2D2 on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.r2d2.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.r2d2.run_classic --obscure_probability=0.5    # flickering CartPole
    python -m deep_rl_zoo.r2d2.run_classic --environment_name=MiniGrid-MultiRoom-N4-S5-v0
"""

from deep_rl_zoo import flags
from deep_rl_zoo.r2d2 import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
