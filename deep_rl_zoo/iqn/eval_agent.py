"""Watch an IQN checkpoint play (epsilon-greedy, 0.01, on Q, the mean of K sampled quantiles), print its scores and
record an mp4.

    python -m deep_rl_zoo.iqn.eval_agent --load_checkpoint_file=checkpoints/IQN_CartPole-v1_3.ckpt
"""

import torch

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor
from deep_rl_zoo.iqn.agent import make_network

flags.define_eval('', epsilon_greedy=True)


def main() -> None:
    torch.manual_seed(flags.FLAGS.seed)  # the taus IQN samples to choose each action
    main_loop.evaluate_checkpoint(
        'IQN', make_network, lambda network, env, seed: EpsilonGreedyActor(network, flags.FLAGS.eval_exploration_epsilon, seed)
    )


if __name__ == '__main__':
    flags.run(main)
