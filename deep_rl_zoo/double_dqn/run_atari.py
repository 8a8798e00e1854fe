"""Train Double DQN on Atari with the "tuned" settings of van Hasselt et al. 2016 (frames = 4 x env steps).

Nature DQN's hyperparameters (as in `deep_rl_zoo.dqn.run_atari`) except that the target network is refreshed
three times less often (the paper's 10,000 -> 30,000) and epsilon ends at 0.01 in training and 0.001 in evaluation.

    python -m deep_rl_zoo.double_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.double_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    target_network_update_interval=7_500,
    exploration_epsilon_end_value=0.01,
    eval_exploration_epsilon=0.001,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
