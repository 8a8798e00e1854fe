"""Train IMPALA on Atari with the paper's hyperparameters (Espeholt et al. 2018, Table D.2 / section 5.1): unrolls of
20 steps, batches of 32 rollouts, RMSProp (lr 6e-4 annealed to 0, decay 0.99, epsilon 0.01, no momentum), entropy
weight 0.01, baseline weight 0.5, global gradient norm clipped at 40, rewards clipped to [-1, 1], discount 0.99; like
the paper's, the loss is summed over the 20 x 32 samples of a batch, the reduction these settings were tuned for. On
2 cores: 2 actor processes of 8 environments, and a batch of 4 rollouts (4 x 8 = 32 unrolls, the paper's batch).

    python -m deep_rl_zoo.impala.run_atari --environment_name=Breakout --torso=impala_resnet
"""

from deep_rl_zoo import flags
from deep_rl_zoo.impala import agent, settings

flags.define_settings(settings.ATARI, settings.PRESETS)

if __name__ == '__main__':
    flags.run(agent.train)
