"""Train IMPALA on classic control with asynchronous actor processes.

    python -m deep_rl_zoo.impala.run_classic --environment_name=CartPole-v1
"""

from deep_rl_zoo import flags
from deep_rl_zoo.impala import agent

flags.define_common('CartPole-v1')
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_asynchronous(batch_rollouts=2, max_policy_lag=20)
flags.define_impala()
# 2 actors x 4 environments x 20-step unrolls, 2 rollouts (160 samples) per update, Adam at 1e-3 decayed to 0 over
# the run, no entropy bonus (CartPole explores enough with a near-uniform first policy; 0.01 stalled near 200).
# The loss is summed over the 160 samples (the paper's reduction); these settings were tuned on their mean, so Adam's
# epsilon and the clip are the tuned 1e-5 and 40 times 160, which gives the tuned update (scale them with the batch).
flags.set_defaults(
    num_iterations=10,
    num_train_steps=50_000,
    num_eval_steps=2_500,
    learning_rate=1e-3,
    discount=0.99,
    unroll_length=20,
    entropy_coef=0.0,
    value_coef=0.5,
    max_grad_norm=6400.0,
    optimizer='adam',
    optimizer_eps=1.6e-3,
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
