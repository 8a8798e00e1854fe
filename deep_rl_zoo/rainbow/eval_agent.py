"""Watch a Rainbow checkpoint play, print its scores and record an mp4.

Rainbow explores with its noisy layers, which stay noisy here: it plays the greedy action of its noisy network,
as it does in training and in the evaluations during training. --eval_exploration_epsilon (default 0) adds
uniformly random actions on top.

    python -m deep_rl_zoo.rainbow.eval_agent --load_checkpoint_file=checkpoints/Rainbow_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.rainbow.agent import make_network
from deep_rl_zoo.rainbow.settings import RainbowSettings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION.replace(eval_exploration_epsilon=0.0))


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'Rainbow', RainbowSettings, make_network, evaluation.epsilon_greedy)


if __name__ == '__main__':
    flags.run(main)
