"""Watch an IMPALA checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.impala.eval_agent --load_checkpoint_file=checkpoints/IMPALA_CartPole-v1_9.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.impala.agent import make_network
from deep_rl_zoo.impala.settings import ImpalaSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'IMPALA', ImpalaSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
