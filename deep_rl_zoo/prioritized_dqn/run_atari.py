"""Train prioritized DQN on Atari with the settings of Schaul et al. 2016 (frames = 4 x env steps).

The paper's baseline is tuned Double DQN (`deep_rl_zoo.double_dqn.run_atari`); proportional prioritization
adds alpha 0.6 and beta annealed linearly from 0.4 to 1 over the whole run, and divides the step size by 4
(larger-error transitions are replayed more often, so gradients are larger).

    python -m deep_rl_zoo.prioritized_dqn.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.prioritized_dqn import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_prioritized_replay()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    learning_rate=2.5e-5,
    target_network_update_interval=7_500,
    exploration_epsilon_end_value=0.01,
    eval_exploration_epsilon=0.001,
    priority_exponent=0.6,
    importance_sampling_exponent_begin_value=0.4,
    importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=50 * 250_000,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
