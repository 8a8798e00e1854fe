"""Train PPO-ICM on classic control or a MiniGrid task with actor processes.

    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MountainCar-v0
    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MiniGrid-DoorKey-8x8-v0
    python -m deep_rl_zoo.ppo_icm.run_classic --environment_name=MountainCar-v0 --intrinsic_reward_coef=0   # plain PPO
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_icm import agent

flags.define_common('MountainCar-v0')
flags.define_distributed(num_actors=1, num_envs_per_actor=8)
flags.define_ppo_icm()
# One set of PPO settings for MountainCar and MiniGrid (those of the curiosity table in docs/exploration.md): 8 environments x 128
# steps, 4 epochs of 4 minibatches, gamma 0.99, lambda 0.95, a small entropy bonus.
flags.set_defaults(
    num_iterations=10,
    num_train_steps=20_000,
    num_eval_steps=1_000,
    learning_rate=5e-4,
    discount=0.99,
    unroll_length=128,
    num_epochs=4,
    num_minibatches=4,
    clip_epsilon=0.2,
    entropy_coef=0.01,
    gae_lambda=0.95,
    max_grad_norm=0.5,
    icm_eta=1.0,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
