"""Train NGU on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.ngu.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.ngu.run_classic --environment_name=MiniGrid-DoorKey-5x5-v0

R2D2's CartPole settings (`r2d2.run_classic`) with NGU's parts: 8 environments (2 actors of 4) play the N = 8 policies
one each; shorter horizons than the paper's Atari ones (gamma 0.99 for policy 0 down to 0.97) for short episodes.
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ngu import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
