"""Train discrete SAC on Atari with the hyperparameters of Christodoulou (2019, table 1): Adam at 3e-4 for critics,
policy and temperature, batch 64, replay of 1M steps, 20,000 steps before learning starts (the first policy is
near uniform, so they are close to the paper's random steps), gamma 0.99, one update every 4 env steps, target
critics copied every 8,000 env steps (2,000 updates, tau 1), target entropy 0.98 log|A|, no gradient clipping.
The paper's budget is 100k env steps (Atari 100k): 5 iterations of 20k. Frames are stored snappy-compressed.

    python -m deep_rl_zoo.sac.run_atari --environment_name=Breakout
"""

from deep_rl_zoo import flags
from deep_rl_zoo.sac import agent

flags.define_common('Pong', atari=True)
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_sac()
flags.set_defaults(
    num_iterations=5,
    num_train_steps=20_000,
    num_eval_steps=27_000,
    learning_rate=3e-4,
    discount=0.99,
    max_grad_norm=0.0,
    replay_capacity=1_000_000,
    min_replay_size=20_000,
    compress_replay=True,
    batch_size=64,
    learn_interval=4,
    target_network_update_interval=2_000,
    target_smoothing_coef=1.0,
    target_entropy_ratio=0.98,
    initial_temperature=1.0,
    unroll_length=4,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
