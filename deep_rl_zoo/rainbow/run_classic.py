"""Train Rainbow on classic control.

    python -m deep_rl_zoo.rainbow.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.rainbow import agent

flags.define_common('CartPole-v1')
flags.define_value_learning()
flags.define_prioritized_replay()
flags.define_categorical()
flags.define_noisy_dueling()
flags.set_defaults(**flags.VALUE_CLASSIC_DEFAULTS)  # DQN's CartPole settings, shared by the family
flags.set_defaults(
    n_step=3,
    exploration_epsilon_begin_value=0.0,
    exploration_epsilon_end_value=0.0,
    eval_exploration_epsilon=0.0,
    priority_exponent=0.5,
    importance_sampling_exponent_begin_value=0.4,
    importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=200_000,
    num_atoms=51,
    v_min=0.0,
    v_max=100.0,  # CartPole pays 1 per step: returns discounted by 0.99 stay below 1 / (1 - 0.99) = 100
    noisy_sigma=0.5,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
