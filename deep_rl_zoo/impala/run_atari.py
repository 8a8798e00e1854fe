"""Train IMPALA on Atari with the paper's hyperparameters (Espeholt et al. 2018, Table D.2 / section 5.1): unrolls of
20 steps, batches of 32 rollouts, RMSProp (lr 6e-4 annealed to 0, decay 0.99, epsilon 0.01, no momentum), entropy
weight 0.01, baseline weight 0.5, global gradient norm clipped at 40, rewards clipped to [-1, 1], discount 0.99; like
the paper's, the loss is summed over the 20 x 32 samples of a batch, the reduction these settings were tuned for. On
2 cores: 2 actor processes of 8 environments, and a batch of 4 rollouts (4 x 8 = 32 unrolls, the paper's batch).

    python -m deep_rl_zoo.impala.run_atari --environment_name=Breakout --torso=impala_resnet
"""

from deep_rl_zoo import flags
from deep_rl_zoo.impala import agent

flags.define_common('Pong', atari=True)
flags.define_distributed(num_actors=2, num_envs_per_actor=8)
flags.define_asynchronous(batch_rollouts=4, max_policy_lag=100)
flags.define_impala(atari=True)
flags.set_defaults(
    num_iterations=50,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    learning_rate=6e-4,
    discount=0.99,
    unroll_length=20,
    entropy_coef=0.01,
    value_coef=0.5,
    max_grad_norm=40.0,
    optimizer='rmsprop',
    rmsprop_alpha=0.99,
    optimizer_eps=0.01,
    terminal_on_life_loss=False,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
