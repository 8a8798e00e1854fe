"""Train discrete SAC on classic control with actor processes and a replay on the learner.

    python -m deep_rl_zoo.sac.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.sac import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=1)
flags.define_sac()
# 2 actors x 1 environment x 4 steps per update; one gradient step per 2 env steps once 1,000 are replayed; 3-step
# returns; Adam at 1e-3; Polyak target critics (tau 0.005 every step, Haarnoja et al.); the target entropy lowered
# to 0.05 log 2: the greedy evaluation wants a nearly deterministic policy, and the paper's 0.98 keeps a 2-action
# policy near uniform. Reaches 400 on seeds 1-3 within 90k env steps (docs/policy-based.md, Results).
flags.set_defaults(
    num_iterations=4,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=1e-3,
    discount=0.99,
    max_grad_norm=0.0,
    replay_capacity=100_000,
    min_replay_size=1_000,
    batch_size=64,
    n_step=3,
    learn_interval=2,
    target_network_update_interval=1,
    target_smoothing_coef=0.005,
    target_entropy_ratio=0.05,
    initial_temperature=0.1,
    unroll_length=4,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
