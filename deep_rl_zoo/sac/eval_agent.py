"""Watch a discrete SAC checkpoint play its policy's most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.sac.eval_agent --load_checkpoint_file=checkpoints/SAC_CartPole-v1_3.ckpt
"""

import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.greedy_actors import PolicyGreedyActor
from deep_rl_zoo.sac.agent import make_network

flags.define_eval('')


def main() -> None:
    main_loop.evaluate_checkpoint('SAC', make_network, lambda network, env, seed: PolicyGreedyActor(network, torch.device('cpu')))


if __name__ == '__main__':
    flags.run(main)
