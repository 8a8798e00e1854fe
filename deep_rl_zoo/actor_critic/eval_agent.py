"""Watch an actor-critic checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.actor_critic.eval_agent --load_checkpoint_file=checkpoints/ActorCritic_CartPole-v1_9.ckpt
"""

from deep_rl_zoo import evaluation, flags, settings
from deep_rl_zoo.actor_critic.agent import make_network
from deep_rl_zoo.actor_critic.settings import ActorCriticSettings

flags.define_settings(settings.EVALUATION)


def main(eval_settings: settings.Evaluation) -> None:
    evaluation.evaluate_checkpoint(eval_settings, 'ActorCritic', ActorCriticSettings, make_network, evaluation.most_likely_action)


if __name__ == '__main__':
    flags.run(main)
