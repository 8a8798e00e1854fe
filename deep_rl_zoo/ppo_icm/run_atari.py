"""Train PPO-ICM on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged.

    python -m deep_rl_zoo.ppo_icm.run_atari
    python -m deep_rl_zoo.ppo_icm.run_atari --environment_name=Pong --extrinsic_reward_coef=0   # curiosity alone
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_icm import agent

flags.define_common('MontezumaRevenge', atari=True)
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_ppo_icm()
# PPO's Atari settings (Schulman et al. 2017, Table 5) and the paper's module (beta 0.2, Adam 1e-3).
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
