"""Train QR-DQN on Atari with the paper's hyperparameters (Dabney et al. 2017: N = 200, kappa = 1, Adam with
learning rate 5e-5 and epsilon 0.01/32; the rest as Nature DQN; frames = 4 x env steps).

    python -m deep_rl_zoo.qr_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.qr_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_quantile()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    learning_rate=5e-5,
    adam_eps=0.01 / 32,
    exploration_epsilon_end_value=0.01,
    num_quantiles=200,
    huber_param=1.0,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
