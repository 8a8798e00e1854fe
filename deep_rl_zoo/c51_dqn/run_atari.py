"""Train C51 on Atari with the paper's hyperparameters: Adam lr 0.00025, eps 0.01/32, 51 atoms on [-10, 10],
otherwise Nature DQN's (frames = 4 x env steps).

    python -m deep_rl_zoo.c51_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.c51_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_categorical()
flags.set_defaults(
    num_iterations=50,
    num_train_steps=250_000,
    num_eval_steps=125_000,
    learning_rate=0.00025,
    adam_eps=0.01 / 32,
    max_grad_norm=10.0,
    discount=0.99,
    replay_capacity=1_000_000,
    min_replay_size=50_000,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=2_500,
    exploration_epsilon_decay_step=1_000_000,
    exploration_epsilon_end_value=0.1,
    num_atoms=51,
    v_min=-10.0,
    v_max=10.0,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
