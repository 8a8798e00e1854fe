"""Train DRQN on classic control.

    python -m deep_rl_zoo.drqn.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.drqn.run_classic --obscure_probability=0.5    # a partially observed CartPole
"""

from deep_rl_zoo import flags
from deep_rl_zoo.drqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_recurrent_replay()
flags.set_defaults(
    num_iterations=6,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=5e-4,
    max_grad_norm=10.0,
    replay_capacity=50_000,
    min_replay_size=1_000,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=250,
    exploration_epsilon_decay_step=20_000,
    unroll_length=8,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
