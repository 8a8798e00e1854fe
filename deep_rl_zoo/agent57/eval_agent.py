"""Watch an Agent57 checkpoint play the best arm its learner kept (the policy of the highest mean extrinsic return;
epsilon-greedy 0.01), print its scores and record an mp4.

    python -m deep_rl_zoo.agent57.eval_agent --load_checkpoint_file=checkpoints/Agent57_CartPole-v1_9.ckpt

The Q network also sees the previous intrinsic reward, so the episodic memory and RND run as in training (their
settings come from the checkpoint).
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.agent57 import agent
from deep_rl_zoo.agent57.settings import Agent57Settings

flags.define_settings(settings.EPSILON_GREEDY_EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(
        eval_settings, 'Agent57', Agent57Settings, agent.make_network,
        lambda network, env, eval_settings, train_settings: agent.eval_policy(network, train_settings, eval_settings.eval_exploration_epsilon, eval_settings.seed),
    )


if __name__ == '__main__':
    flags.run(main)
