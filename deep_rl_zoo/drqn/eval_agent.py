"""Watch a DRQN checkpoint play (epsilon-greedy, 0.01, with its LSTM state), print its scores and record an mp4.

    python -m deep_rl_zoo.drqn.eval_agent --load_checkpoint_file=checkpoints/DRQN_CartPole-v1_5.ckpt

The environment is built as in training, flickering included (`obscure_probability` is read from the checkpoint).
"""

import functools

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.drqn.agent import make_network
from deep_rl_zoo.greedy_actors import RecurrentEpsilonGreedyActor
from deep_rl_zoo.drqn.settings import DrqnSettings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'DRQN', DrqnSettings, make_network, functools.partial(evaluation.epsilon_greedy, actor_class=RecurrentEpsilonGreedyActor))


if __name__ == '__main__':
    flags.run(main)
