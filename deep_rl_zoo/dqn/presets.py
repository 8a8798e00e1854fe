"""DQN's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off and leaves run_classic's defaults).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

from deep_rl_zoo import flags

# Tianshou's Atari DQN example (examples/atari/atari_dqn.py, which reports Pong at 20 after about 1.5M env steps): 10
# environments, 100k replay, learning from the first 320 steps (its batch x environments), one update of 32 per 10 env
# steps, 3-step returns, the target network refreshed every 500 updates (5,000 env steps), epsilon 1 -> 0.05 over 1M
# steps, Adam 1e-4, gamma 0.99; for the Pong budget (flags.PONG_BUDGET: 2M env steps, 8M frames). The whole DQN
# family's Pong presets start from it (Nature DQN's 50M-frame settings stay run_atari's defaults: --preset=none).
TIANSHOU_PONG = dict(
    **flags.PONG_BUDGET, num_envs=10, replay_capacity=100_000, min_replay_size=320, batch_size=32, learn_interval=10, n_step=3,
    target_network_update_interval=500, exploration_epsilon_decay_step=1_000_000, exploration_epsilon_end_value=0.05,
    learning_rate=1e-4, discount=0.99,
)

PRESETS = {
    # rl-baselines3-zoo's CartPole settings (Adam 2.3e-3, batch 64, 100k replay, learning from 1k steps, epsilon 1 -> 0.04
    # over 8k steps, gamma 0.99) and its update ratio (128 updates per 256 env steps) as one update every 2 env steps, the
    # target network refreshed every 128 updates; with 3-step returns (1-step ones first reached 475 at 50k on seed 1,
    # 3-step ones at 30k); 50k env steps, evaluated every 10k.
    'CartPole-v1': dict(
        num_iterations=5, num_train_steps=10_000, learning_rate=2.3e-3, batch_size=64, replay_capacity=100_000, min_replay_size=1_000,
        discount=0.99, n_step=3, learn_interval=2, target_network_update_interval=128, exploration_epsilon_decay_step=8_000,
        exploration_epsilon_end_value=0.04,
    ),
    # rl-baselines3-zoo's LunarLander settings (Adam 6.3e-4, batch 128, 50k replay, gamma 0.99, epsilon 1 -> 0.1 over
    # 12k steps, 4 updates per 4 env steps, the target network refreshed every 250 env steps = 250 updates), learning
    # from one minibatch on (its learning_starts 0), with 3-step returns; our 128 x 128 MLP in place of its 256 x 256;
    # 100k env steps. Seeds 1-3 reach 200 at 60k, 80k, 60k; with 1-step returns they ended at 121, -29, 265 (one
    # seed at 200). Its MountainCar settings (120k steps) never reached the goal (seeds 1-3 at -200 throughout).
    'LunarLander-v3': dict(
        num_iterations=10, num_train_steps=10_000, learning_rate=6.3e-4, batch_size=128, replay_capacity=50_000, min_replay_size=128,
        discount=0.99, n_step=3, learn_interval=1, target_network_update_interval=250, exploration_epsilon_decay_step=12_000,
        exploration_epsilon_end_value=0.1,
    ),
    'Pong': dict(TIANSHOU_PONG),
}  # fmt: skip

# DQN's CartPole preset at Adam 1e-3: Double DQN's preset, and C51's, prioritized DQN's and QR-DQN's (on their own
# run_classic defaults for the rest).
CARTPOLE_AT_ADAM_1E3 = {**PRESETS['CartPole-v1'], 'learning_rate': 1e-3}
