"""Watch a PPO-RND checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.ppo_rnd.eval_agent --load_checkpoint_file=checkpoints/PPO_RND_MontezumaRevenge_9.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.ppo_rnd.agent import make_network
from deep_rl_zoo.ppo_rnd.settings import PpoRndSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'PPO_RND', PpoRndSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
