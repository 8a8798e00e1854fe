"""Train A2C on classic control with actor processes.

    python -m deep_rl_zoo.a2c.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.a2c import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_a2c()
# 8 environments x 5 steps per update, RMSProp at 7e-4 decayed linearly to 0 over the run (10 x 50k = 500k steps),
# no entropy bonus (CartPole explores enough with a near-uniform first policy).
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=7e-4,
    discount=0.99,
    unroll_length=5,
    entropy_coef=0.0,
    value_coef=0.5,
    max_grad_norm=0.5,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
