"""Watch a REINFORCE checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.reinforce.eval_agent --load_checkpoint_file=checkpoints/REINFORCE_CartPole-v1_9.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.reinforce.agent import make_network
from deep_rl_zoo.reinforce.settings import ReinforceSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'REINFORCE', ReinforceSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
