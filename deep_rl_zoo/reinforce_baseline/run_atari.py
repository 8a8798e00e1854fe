"""Train REINFORCE with baseline on Atari (it runs end to end; Monte-Carlo policy gradient learns Atari games only slowly).

    python -m deep_rl_zoo.reinforce_baseline.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.reinforce_baseline import agent

flags.define_common('Pong', atari=True)
flags.define_reinforce()
# Untuned: PPO's Atari learning rate, entropy bonus and gradient clipping, 8 games per update, standardised
# returns/advantages (Pong's scores span -21..21).
flags.set_defaults(
    num_iterations=10,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    learning_rate=2.5e-4,
    discount=0.99,
    max_grad_norm=0.5,
    num_envs=8,
    num_episodes_per_update=8,
    entropy_coef=0.01,
    normalize_advantages=True,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
