"""Train APPO (Sample Factory's asynchronous PPO) on classic control; the flags are Sample Factory's.

    python -m deep_rl_zoo.appo.run_classic --environment_name=CartPole-v1
    python -m deep_rl_zoo.appo.run_classic --num_policies=2 --num_workers=2 --num_envs_per_worker=4
"""

from deep_rl_zoo import flags
from deep_rl_zoo.appo import agent

flags.define_common('CartPole-v1')
flags.define_appo()
# CartPole: 2 workers x 4 environments x 32-step rollouts; batches of 2 rollouts (256 samples) in one minibatch,
# 4 epochs; Adam at 5e-3 decayed linearly to 0; small tanh MLP; GAE lambda 0.8 and gamma 0.98 as in PPO's classic
# settings (rl-baselines3-zoo); returns normalised (Sample Factory's default).
flags.set_defaults(
    num_iterations=4,
    num_train_steps=25_000,
    num_eval_steps=2_500,
    learning_rate=5e-3,
    max_grad_norm=0.5,
    num_workers=2,
    num_envs_per_worker=4,
    rollout=32,
    batch_size=256,
    num_batches_per_epoch=1,
    num_epochs=4,
    max_policy_lag=100,
    gamma=0.98,
    gae_lambda=0.8,
    ppo_clip_ratio=0.2,
    ppo_clip_value=1.0,
    exploration_loss_coeff=0.0,
    lr_schedule='linear_decay',
    adam_eps=1e-5,
    encoder_mlp_layers=['64', '64'],
    nonlinearity='tanh',
    learner_on_gpu=False,
)


def main() -> None:
    agent.train('classic')


if __name__ == '__main__':
    flags.run(main)
