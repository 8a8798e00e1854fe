"""Train DRQN on Atari (Hausknecht & Stone 2015): single frames into a conv + LSTM network, 10-step sequences.

    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong
    python -m deep_rl_zoo.drqn.run_atari --environment_name=Pong --obscure_probability=0.5   # Flickering Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_recurrent_replay()
flags.set_defaults(
    environment_frame_stack=1,
    num_iterations=50,
    num_train_steps=250_000,
    num_eval_steps=125_000,
    learning_rate=1e-4,
    max_grad_norm=10.0,
    discount=0.99,
    replay_capacity=400_000,
    min_replay_size=50_000,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=2_500,
    exploration_epsilon_decay_step=1_000_000,
    exploration_epsilon_end_value=0.1,
    unroll_length=10,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
