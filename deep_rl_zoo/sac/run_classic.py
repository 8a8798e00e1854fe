"""Train discrete SAC on classic control with actor processes and a replay on the learner.

    python -m deep_rl_zoo.sac.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.sac import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
