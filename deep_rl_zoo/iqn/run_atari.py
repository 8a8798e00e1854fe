"""Train IQN on Atari with the paper's hyperparameters (Dabney et al. 2018: N = N' = 64, K = 32, n = 64 cosines,
kappa = 1, Adam with learning rate 5e-5 and epsilon 0.01/32; the rest as QR-DQN and Nature DQN; frames = 4 x env
steps).

    python -m deep_rl_zoo.iqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.iqn import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
