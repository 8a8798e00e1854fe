"""Train PPO-RND on classic control or a MiniGrid task with actor processes.

    python -m deep_rl_zoo.ppo_rnd.run_classic --environment_name=MountainCar-v0
    python -m deep_rl_zoo.ppo_rnd.run_classic --environment_name=MiniGrid-DoorKey-8x8-v0
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_rnd import agent

flags.define_common('MountainCar-v0')
flags.define_distributed(num_actors=1, num_envs_per_actor=8)
flags.define_ppo_rnd()
# PPO-ICM's classic settings, extrinsic discount included (the curiosity table of docs/exploration.md compares both agents with
# the same PPO; run_atari has the paper's 0.999), the paper's intrinsic discount 0.99 and, with 8 rather than 128
# environments, the whole minibatch training the predictor.
flags.set_defaults(
    num_iterations=10,
    num_train_steps=20_000,
    num_eval_steps=1_000,
    learning_rate=5e-4,
    discount=0.99,
    intrinsic_discount=0.99,
    unroll_length=128,
    num_epochs=4,
    num_minibatches=4,
    clip_epsilon=0.2,
    entropy_coef=0.01,
    gae_lambda=0.95,
    max_grad_norm=0.5,
    rnd_update_proportion=1.0,
    rnd_init_steps=2_048,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
