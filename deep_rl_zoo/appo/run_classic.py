"""Train APPO (Sample Factory's asynchronous PPO) on classic control; the flags are Sample Factory's.

    python -m deep_rl_zoo.appo.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.appo.run_classic --num_policies=2 --num_workers=2 --num_envs_per_worker=4
"""

from deep_rl_zoo import flags
from deep_rl_zoo.appo import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
