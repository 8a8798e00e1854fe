"""Watch an APPO checkpoint play its most likely actions (Sample Factory's "enjoy"), print its scores and record an
mp4; --policy_index picks one of several policies.

    python -m deep_rl_zoo.appo.eval_agent --load_checkpoint_file=checkpoints/APPO_CartPole-v1_3.ckpt
    python -m deep_rl_zoo.appo.eval_agent --environment_name=atari_pong --policy_index=1 --load_checkpoint_file=...
"""

from deep_rl_zoo import evaluation, flags
from deep_rl_zoo.appo import sample_factory_config, settings
from deep_rl_zoo.appo.agent import greedy_actor, make_network
from deep_rl_zoo.appo.settings import AppoSettings

flags.define_settings(settings.EVALUATION)


def chosen_policy_actor(network, env, eval_settings, train_settings):
    """The most likely action of the policy --policy_index (recurrent or not)."""
    if eval_settings.policy_index >= len(network):
        raise ValueError(f'--policy_index={eval_settings.policy_index}: the checkpoint holds {len(network)} policies (0 .. {len(network) - 1})')
    network.eval_policy = eval_settings.policy_index
    return greedy_actor(network)


def main(eval_settings: settings.AppoEvaluation) -> None:
    if eval_settings.environment_name:
        eval_settings = eval_settings.replace(environment_name=sample_factory_config.atari_environment_name(eval_settings.environment_name))
    evaluation.evaluate_checkpoint(eval_settings, 'APPO', AppoSettings, make_network, chosen_policy_actor)


if __name__ == '__main__':
    flags.run(main)
