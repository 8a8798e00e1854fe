"""Watch a PPO checkpoint play its most likely actions (the mean for continuous control), print its scores
and record an mp4.

    python -m deep_rl_zoo.ppo.eval_agent --load_checkpoint_file=checkpoints/PPO_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.ppo.agent import make_network
from deep_rl_zoo.ppo.settings import PpoSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'PPO', PpoSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
