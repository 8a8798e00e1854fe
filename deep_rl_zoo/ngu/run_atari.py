"""Train NGU on Atari: Montezuma's Revenge by default, with the rooms each episode visits logged
(`visited_rooms_mean` / `visited_rooms_max`).

R2D2's Atari settings (`r2d2.run_atari`: sequences of 80 learned steps after 40 of burn-in, Adam 1e-4 eps 1e-3,
batches of 64, replay of 20,000 snappy-compressed sequences, unclipped rewards through h) and NGU's appendix F values
(beta 0.3, discounts 0.997 down to 0.99, Retrace lambda 0.95, k = 10 neighbours, L = 5, memory of 30,000). On 2
cores: 2 actor processes of 4 environments, so N = 8 policies (the paper: 32 over 256 actors).

    python -m deep_rl_zoo.ngu.run_atari --environment_name=MontezumaRevenge
"""

from deep_rl_zoo import flags
from deep_rl_zoo.ngu import agent

flags.define_common('MontezumaRevenge', atari=True)
flags.define_distributed(num_actors=2, num_envs_per_actor=4)
flags.define_asynchronous(batch_rollouts=1, max_policy_lag=1_000_000)
flags.define_ngu()
flags.set_defaults(
    num_iterations=50,
    num_train_steps=250_000,
    num_eval_steps=27_000,
    learning_rate=1e-4,
    adam_eps=1e-3,
    max_grad_norm=40.0,
    num_policies=8,
    unroll_length=80,
    burn_in=40,
    replay_capacity=20_000,
    min_replay_size=500,
    compress_replay=True,
    batch_size=64,
    learn_interval=80,
    target_network_update_interval=2_500,
    actor_update_interval=400,
    importance_sampling_exponent_begin_value=0.6,
    importance_sampling_exponent_end_value=0.6,
    priority_exponent=0.9,
    clip_reward=False,
    terminal_on_life_loss=False,
    learner_threads=2,
)


def main() -> None:
    agent.train('atari')


if __name__ == '__main__':
    flags.run(main)
