"""Watch a Double DQN checkpoint play (epsilon-greedy, 0.01), print its scores and record an mp4.

    python -m deep_rl_zoo.double_dqn.eval_agent --load_checkpoint_file=checkpoints/DoubleDQN_CartPole-v1_3.ckpt
"""

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.double_dqn.agent import make_network
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor

flags.define_eval('', epsilon_greedy=True)


def main() -> None:
    main_loop.evaluate_checkpoint(
        'DoubleDQN',
        make_network,
        lambda network, env, seed: EpsilonGreedyActor(network, flags.FLAGS.eval_exploration_epsilon, seed),
    )


if __name__ == '__main__':
    flags.run(main)
