"""Watch a Double DQN checkpoint play (epsilon-greedy, 0.01), print its scores and record an mp4.

    python -m deep_rl_zoo.double_dqn.eval_agent --load_checkpoint_file=checkpoints/DoubleDQN_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.double_dqn.agent import make_network
from deep_rl_zoo.double_dqn.settings import DoubleDqnSettings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'DoubleDQN', DoubleDqnSettings, make_network, evaluation.epsilon_greedy)


if __name__ == '__main__':
    flags.run(main)
