"""Train R2D2 on classic control with asynchronous actor processes.

    python -m deep_rl_zoo.r2d2.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.r2d2.run_classic --obscure_probability=0.5    # flickering CartPole
"""

from deep_rl_zoo import flags
from deep_rl_zoo.r2d2 import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=2)
flags.define_asynchronous(batch_rollouts=1, max_policy_lag=1_000_000)  # replay is off-policy anyway: drop nothing
flags.define_r2d2()
# DQN's CartPole optimiser (Adam 5e-4, eps 1e-8: the paper's eps 1e-3 slows these small gradients); short sequences
# (4 burn-in + 8 learned steps, 4 apart) for short episodes; each step replayed about 64 times as in DQN's settings:
# batches of 32 sequences x 8 learned steps every 4 env steps.
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=5e-4,
    adam_eps=1e-8,
    max_grad_norm=10.0,
    discount=0.99,
    unroll_length=8,
    burn_in=4,
    n_step=3,
    replay_capacity=10_000,
    min_replay_size=100,
    batch_size=32,
    learn_interval=4,
    target_network_update_interval=250,
    actor_update_interval=20,
    importance_sampling_exponent_begin_value=0.6,
    importance_sampling_exponent_end_value=0.6,
    priority_exponent=0.9,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
