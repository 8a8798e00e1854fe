"""Watch a discrete SAC checkpoint play its policy's most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.sac.eval_agent --load_checkpoint_file=checkpoints/SAC_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.sac.agent import make_network
from deep_rl_zoo.sac.settings import SacSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'SAC', SacSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
