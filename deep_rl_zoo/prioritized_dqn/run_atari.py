"""Train prioritized DQN on Atari with the settings of Schaul et al. 2016 (frames = 4 x env steps).

The paper's baseline is tuned Double DQN (`deep_rl_zoo.double_dqn.run_atari`); proportional prioritization
adds alpha 0.6 and beta annealed linearly from 0.4 to 1 over the whole run, and divides the step size by 4
(larger-error transitions are replayed more often, so gradients are larger).

    python -m deep_rl_zoo.prioritized_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.prioritized_dqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
