"""Watch an A2C checkpoint (of run_* or of the gradient variant run_*_grad) play its most likely actions, print its
scores and record an mp4.

    python -m deep_rl_zoo.a2c.eval_agent --load_checkpoint_file=checkpoints/A2C_CartPole-v1_9.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.a2c.agent import make_network
from deep_rl_zoo.a2c.settings import A2cSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, ('A2C', 'A2C-grad'), A2cSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
