"""Train Double DQN on Atari with the "tuned" settings of van Hasselt et al. 2016 (frames = 4 x env steps).

Nature DQN's hyperparameters (as in `deep_rl_zoo.dqn.run_atari`) except that the target network is refreshed
three times less often (the paper's 10,000 -> 30,000) and epsilon ends at 0.01 in training and 0.001 in evaluation.

    python -m deep_rl_zoo.double_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.double_dqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
