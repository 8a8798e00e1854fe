"""Train C51 on classic control.

    python -m deep_rl_zoo.c51_dqn.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.c51_dqn import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_categorical()
flags.set_defaults(
    num_iterations=4,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=5e-4,
    max_grad_norm=10.0,
    replay_capacity=50_000,
    min_replay_size=1_000,
    batch_size=64,
    n_step=1,
    learn_interval=1,
    target_network_update_interval=1_000,
    exploration_epsilon_decay_step=20_000,
    num_atoms=51,
    v_min=0.0,
    v_max=100.0,  # CartPole pays 1 per step: returns discounted by 0.99 stay below 1 / (1 - 0.99) = 100
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
