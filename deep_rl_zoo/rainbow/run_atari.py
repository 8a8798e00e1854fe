"""Train Rainbow on Atari with the paper's hyperparameters (Hessel et al. 2018, Table 1; frames = 4 x env steps):
Adam lr 6.25e-5 and eps 1.5e-4, target network every 32K frames (2,000 updates), learning from 80K frames,
n = 3, 51 atoms on [-10, 10], sigma_0 0.5, priorities ** 0.5 and beta 0.4 -> 1 over the run, no epsilon.

    python -m deep_rl_zoo.rainbow.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.rainbow import agent

flags.define_common('Pong', atari=True)
flags.define_value_learning()
flags.define_prioritized_replay()
flags.define_categorical()
flags.define_noisy_dueling()
flags.set_defaults(**flags.VALUE_ATARI_DEFAULTS)  # Nature DQN's Atari settings, shared by the family
flags.set_defaults(
    learning_rate=6.25e-5,
    adam_eps=1.5e-4,
    min_replay_size=20_000,
    n_step=3,
    target_network_update_interval=2_000,
    exploration_epsilon_begin_value=0.0,
    exploration_epsilon_end_value=0.0,
    eval_exploration_epsilon=0.0,
    priority_exponent=0.5,
    importance_sampling_exponent_begin_value=0.4,
    importance_sampling_exponent_end_value=1.0,
    importance_sampling_exponent_decay_step=12_500_000,
    num_atoms=51,
    v_min=-10.0,
    v_max=10.0,
    noisy_sigma=0.5,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
