"""Train A2C on Atari with actors that compute the gradients; the learner only averages and applies them
(`agent.GradientActor`, `agent.A2cGradientLearner`). Every flag and default is run_atari's, plus
--gradient_compression.

    python -m deep_rl_zoo.a2c.run_atari_grad --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.a2c import agent, settings

flags.define_settings(settings.ATARI_GRAD, settings.GRAD_PRESETS)

if __name__ == '__main__':
    flags.run(agent.train_with_actor_gradients)
