"""Train Double DQN on Atari with the "tuned" settings of van Hasselt et al. 2016 (frames = 4 x env steps).

Nature DQN's hyperparameters (as in `deep_rl_zoo.dqn.run_atari`) except that the target network is refreshed
three times less often (the paper's 10,000 -> 30,000) and epsilon ends at 0.01 in training and 0.001 in evaluation.

    python -m deep_rl_zoo.double_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.double_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.set_defaults(
    num_iterations=50,
    num_train_steps=250_000,
    num_eval_steps=125_000,
    learning_rate=1e-4,
    max_grad_norm=10.0,
    discount=0.99,
    replay_capacity=1_000_000,
    min_replay_size=50_000,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=7_500,
    exploration_epsilon_decay_step=1_000_000,
    exploration_epsilon_end_value=0.01,
    eval_exploration_epsilon=0.001,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
