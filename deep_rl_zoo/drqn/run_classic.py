"""Train DRQN on classic control.

    python -m deep_rl_zoo.drqn.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.drqn.run_classic --obscure_probability=0.5    # a partially observed CartPole
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
