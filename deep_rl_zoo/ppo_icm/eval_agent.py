"""Watch a PPO-ICM checkpoint play its most likely actions, print its scores and record an mp4.

    python -m deep_rl_zoo.ppo_icm.eval_agent --load_checkpoint_file=checkpoints/PPO_ICM_MontezumaRevenge_9.ckpt
"""

import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.greedy_actors import PolicyGreedyActor
from deep_rl_zoo.ppo_icm.agent import make_network

flags.define_eval('')


def main() -> None:
    main_loop.evaluate_checkpoint('PPO_ICM', make_network, lambda network, env, seed: PolicyGreedyActor(network, torch.device('cpu')))


if __name__ == '__main__':
    flags.run(main)
