"""Watch a C51 checkpoint play (epsilon-greedy on the expected Q-values, 0.01), print its scores and record an mp4.

    python -m deep_rl_zoo.c51_dqn.eval_agent --load_checkpoint_file=checkpoints/C51_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.c51_dqn.agent import make_network
from deep_rl_zoo.c51_dqn.settings import C51Settings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'C51', C51Settings, make_network, evaluation.epsilon_greedy)


if __name__ == '__main__':
    flags.run(main)
