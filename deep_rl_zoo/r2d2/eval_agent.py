"""Watch an R2D2 checkpoint play (epsilon-greedy, 0.01, with its LSTM state), print its scores and record an mp4.

    python -m deep_rl_zoo.r2d2.eval_agent --load_checkpoint_file=checkpoints/R2D2_CartPole-v1_9.ckpt

The environment is built as in training, flickering included (`obscure_probability` is read from the checkpoint).
"""

import functools

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.r2d2.agent import R2d2Policy, make_network
from deep_rl_zoo.r2d2.settings import R2d2Settings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'R2D2', R2d2Settings, make_network, functools.partial(evaluation.epsilon_greedy, actor_class=R2d2Policy))


if __name__ == '__main__':
    flags.run(main)
