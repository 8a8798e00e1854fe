"""Train APPO (Sample Factory's asynchronous PPO) on Atari; the flags are Sample Factory's, so a model card's
config applies as it is (explicit flags win over it):

    python -m deep_rl_zoo.appo.run_atari --environment_name=atari_breakout
    python -m deep_rl_zoo.appo.run_atari --config_json=deep_rl_zoo/appo/configs/atari_amidar.json --environment_name=atari_amidar

The defaults are the atari_amidar model card's learning settings (configs/atari_amidar.json) with one policy and
a smaller batch for 2 cores: 2 workers x 4 environments x 128-step rollouts, batches of 1,024 samples (2 rollouts)
in 4 minibatches of 256, 4 epochs; and Adam fused (--adam_fused, as PPO's learner: on CPU several times faster than
Adam's loop over the parameters).
"""

from deep_rl_zoo import flags
from deep_rl_zoo.appo import agent

flags.define_common('Pong', atari=True)
flags.define_appo(atari=True)
flags.set_defaults(
    num_iterations=10,
    num_train_steps=1_000_000,
    num_eval_steps=27_000,
    seed=1234,
    learning_rate=3.033891184e-4,
    max_grad_norm=0.0,
    num_workers=2,
    num_envs_per_worker=4,
    rollout=128,
    batch_size=256,
    num_batches_per_epoch=4,
    num_epochs=4,
    recurrence=1,
    gamma=0.99,
    normalize_returns=True,
    exploration_loss_coeff=4.677351413e-4,
    value_loss_coeff=0.5,
    gae_lambda=0.95,
    ppo_clip_ratio=0.1,
    ppo_clip_value=1.0,
    lr_schedule='linear_decay',
    adam_eps=1e-5,
    obs_scale=255.0,
    normalize_input=True,
    nonlinearity='relu',
    learner_threads=2,
    adam_fused=True,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
