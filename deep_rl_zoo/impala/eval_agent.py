"""Watch an IMPALA checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.impala.eval_agent --load_checkpoint_file=checkpoints/IMPALA_CartPole-v1_9.ckpt
"""

import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.greedy_actors import PolicyGreedyActor, RecurrentPolicyGreedyActor
from deep_rl_zoo.impala.agent import make_network
from deep_rl_zoo.networks.policy import RecurrentActorCritic

flags.define_eval('')


def greedy_actor(network: torch.nn.Module, env, seed: int) -> PolicyGreedyActor | RecurrentPolicyGreedyActor:
    """The most likely action; a checkpoint trained with --use_lstm carries its core state from step to step."""
    actor_class = RecurrentPolicyGreedyActor if isinstance(network, RecurrentActorCritic) else PolicyGreedyActor
    return actor_class(network, torch.device('cpu'))


def main() -> None:
    main_loop.evaluate_checkpoint('IMPALA', make_network, greedy_actor)


if __name__ == '__main__':
    flags.run(main)
