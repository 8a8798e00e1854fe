"""Watch an NGU checkpoint play its exploitative policy (j = 0, epsilon-greedy 0.01), print its scores and record an mp4.

    python -m deep_rl_zoo.ngu.eval_agent --load_checkpoint_file=checkpoints/NGU_CartPole-v1_9.ckpt

The Q network also sees the previous intrinsic reward, so the episodic memory and RND run as in training (their
settings come from the checkpoint).
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.ngu import agent
from deep_rl_zoo.ngu.settings import NguSettings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(
        eval_settings, 'NGU', NguSettings, agent.make_network,
        lambda network, env, eval_settings, train_settings: agent.eval_policy(network, train_settings, eval_settings.eval_exploration_epsilon, eval_settings.seed),
    )


if __name__ == '__main__':
    flags.run(main)
