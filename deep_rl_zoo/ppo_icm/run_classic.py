"""Train PPO-ICM on classic control or a MiniGrid task with actor processes.

    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MountainCar-v0
    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MiniGrid-DoorKey-8x8-v0
    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MountainCar-v0 --intrinsic_reward_coef=0   # plain PPO
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_icm import agent, settings

flags.define_settings(settings.CLASSIC, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
