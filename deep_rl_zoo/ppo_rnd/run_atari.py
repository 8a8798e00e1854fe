"""Train PPO-RND on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged.

    python -m deep_rl_zoo.ppo_rnd.run_atari
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ppo_rnd import agent

flags.define_common('MontezumaRevenge', atari=True)
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_ppo_rnd()
# The paper's settings (Burda et al. 2018, table 5) where they fit 8 environments: gamma_E 0.999, gamma_I 0.99,
# 128-step rollouts, 4 epochs of 4 minibatches, learning rate 1e-4, entropy 0.001, lambda 0.95, clip 0.1,
# unclipped game rewards turned to their sign, no life-loss terminal (RND is meant to see whole games), and
# 0.25 of each minibatch training the predictor; the normaliser starts from 50 x 128 random steps per environment
# in the paper, 128 x 8 x 10 here.
flags.set_defaults(
    num_iterations=10,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    learning_rate=1e-4,
    discount=0.999,
    intrinsic_discount=0.99,
    unroll_length=128,
    num_epochs=4,
    num_minibatches=4,
    clip_epsilon=0.1,
    entropy_coef=0.001,
    value_coef=0.5,
    gae_lambda=0.95,
    max_grad_norm=0.5,
    terminal_on_life_loss=False,
    rnd_update_proportion=0.25,
    rnd_init_steps=10_240,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
