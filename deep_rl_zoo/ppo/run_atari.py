"""Train PPO on Atari with the paper's hyperparameters (Schulman et al. 2017, Table 5).

    python -m deep_rl_zoo.ppo.run_atari --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo import agent

flags.define_common('Pong', atari=True)
# Two actors of 4 environments rather than one of 8: on 2 cores one actor's forward pass overlaps the other's
# emulator steps (benchmarks/atari_throughput.py: 372 agent steps/s against SB3's 294 in the same run).
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_ppo()
flags.set_defaults(
    num_iterations=10,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    learning_rate=2.5e-4,
    discount=0.99,
    unroll_length=128,
    num_epochs=4,
    num_minibatches=4,
    clip_epsilon=0.1,
    entropy_coef=0.01,
    value_coef=0.5,
    gae_lambda=0.95,
    max_grad_norm=0.5,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
