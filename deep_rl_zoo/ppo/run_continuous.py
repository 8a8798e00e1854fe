"""Train PPO with a diagonal Gaussian policy on continuous control (Pendulum-v1, MuJoCo v5 tasks).

    python -m deep_rl_zoo.ppo.run_continuous --environment_name=Pendulum-v1
    python -m deep_rl_zoo.ppo.run_continuous --environment_name=HalfCheetah-v5 --num_iterations=100
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo import agent

flags.define_common('Pendulum-v1')
flags.define_distributed(num_actors=1, num_envs_per_actor=4)
flags.define_ppo()
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_000,
    learning_rate=1e-3,
    discount=0.9,
    unroll_length=256,
    num_epochs=10,
    num_minibatches=16,
    clip_epsilon=0.2,
    entropy_coef=0.0,
    gae_lambda=0.95,
    max_grad_norm=0.5,
    normalize_observations=True,
    scale_rewards=True,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('continuous')


if __name__ == '__main__':
    flags.run(main)
