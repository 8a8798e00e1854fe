"""Watch a PPO checkpoint play its most likely actions (the mean for continuous control), print its scores
and record an mp4.

    python -m deep_rl_zoo.ppo.eval_agent --load_checkpoint_file=checkpoints/PPO_CartPole-v1_3.ckpt
"""

import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.greedy_actors import PolicyGreedyActor
from deep_rl_zoo.ppo.agent import make_network

flags.define_eval('')


def main() -> None:
    main_loop.evaluate_checkpoint('PPO', make_network, lambda network, env, seed: PolicyGreedyActor(network, torch.device('cpu'), *main_loop.action_bounds(env)))


if __name__ == '__main__':
    flags.run(main)
