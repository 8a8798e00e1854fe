"""Train Rainbow on Atari with the paper's hyperparameters (Hessel et al. 2018, Table 1; frames = 4 x env steps):
Adam lr 6.25e-5 and eps 1.5e-4, target network every 32K frames (2,000 updates), learning from 80K frames,
n = 3, 51 atoms on [-10, 10], sigma_0 0.5, priorities ** 0.5 and beta 0.4 -> 1 over the run, no epsilon.

    python -m deep_rl_zoo.rainbow.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.rainbow import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
