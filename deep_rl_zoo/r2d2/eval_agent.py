"""Watch an R2D2 checkpoint play (epsilon-greedy, 0.01, with its LSTM state), print its scores and record an mp4.

    python -m deep_rl_zoo.r2d2.eval_agent --load_checkpoint_file=checkpoints/R2D2_CartPole-v1_9.ckpt

The environment is built as in training, flickering included (`obscure_probability` is read from the checkpoint).
"""

from deep_rl_zoo import flags, main_loop
from deep_rl_zoo.r2d2.agent import R2d2Policy, make_network

flags.define_eval('', epsilon_greedy=True)


def main() -> None:
    main_loop.evaluate_checkpoint(
        'R2D2',
        make_network,
        lambda network, env, seed: R2d2Policy(network, flags.FLAGS.eval_exploration_epsilon, seed),
    )


if __name__ == '__main__':
    flags.run(main)
