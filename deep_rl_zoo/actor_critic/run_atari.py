"""Train the n-step actor-critic on Atari with A3C/A2C's settings (Mnih et al. 2016: n = 5, entropy 0.01).

    python -m deep_rl_zoo.actor_critic.run_atari --environment_name=Pong
"""

from deep_rl_zoo import flags
from deep_rl_zoo.actor_critic import agent

flags.define_common('Pong', atari=True)
flags.define_actor_critic()
flags.set_defaults(
    num_iterations=10,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    learning_rate=7e-4,
    discount=0.99,
    num_envs=16,
    unroll_length=5,
    entropy_coef=0.01,
    value_coef=0.5,
    max_grad_norm=0.5,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
