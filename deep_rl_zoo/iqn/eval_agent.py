"""Watch an IQN checkpoint play (epsilon-greedy, 0.01, on Q, the mean of K sampled quantiles), print its scores and
record an mp4.

    python -m deep_rl_zoo.iqn.eval_agent --load_checkpoint_file=checkpoints/IQN_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.iqn.agent import make_network
from deep_rl_zoo.iqn.settings import IqnSettings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'IQN', IqnSettings, make_network, evaluation.epsilon_greedy)


if __name__ == '__main__':
    flags.run(main)
