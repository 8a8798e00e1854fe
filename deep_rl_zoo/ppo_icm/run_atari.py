"""Train PPO-ICM on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged.

    python -m deep_rl_zoo.ppo_icm.run_atari
    python -m deep_rl_zoo.ppo_icm.run_atari --environment_name=Pong --extrinsic_reward_coef=0   # curiosity alone
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_icm import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
