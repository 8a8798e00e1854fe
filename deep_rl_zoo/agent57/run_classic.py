"""Train Agent57 on classic control or MiniGrid with asynchronous actor processes.

    python -m deep_rl_zoo.agent57.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.agent57.run_classic --environment_name=MiniGrid-DoorKey-5x5-v0

NGU's settings (`ngu.run_classic`) with Agent57's parts: each of the 8 environments (2 actors of 4) has its own
meta-controller choosing among the N = 8 policies every episode.
"""

from deep_rl_zoo import flags
from deep_rl_zoo.agent57 import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
