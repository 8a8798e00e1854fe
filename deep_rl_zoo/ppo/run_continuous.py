"""Train PPO with a diagonal Gaussian policy on continuous control (Pendulum-v1, MuJoCo v5 tasks).

    python -m deep_rl_zoo.ppo.run_continuous --environment_name=Pendulum-v1
    python -m deep_rl_zoo.ppo.run_continuous --environment_name=HalfCheetah-v5 --num_iterations=100
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo import agent, settings

flags.define_settings(settings.CONTINUOUS, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
