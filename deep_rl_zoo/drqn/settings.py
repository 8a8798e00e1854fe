"""DRQN's settings: DQN's learning from replayed sequences with an LSTM, its run scripts' defaults (`CLASSIC`, its
CartPole-v1 settings; `ATARI`: single frames, 10-step sequences, otherwise Nature DQN's) and its tuned presets per task
(`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Presets"; docs/value-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class DrqnSettings(settings.ValueLearning, settings.RecurrentReplay):
    """DRQN (Hausknecht & Stone 2015)."""

    agent_name = 'DRQN'


CLASSIC = DrqnSettings(**settings.VALUE_CLASSIC | dict(num_iterations=6, batch_size=32, learn_interval=4, target_network_update_interval=250), unroll_length=8)
ATARI = DrqnSettings(**settings.VALUE_ATARI | dict(replay_capacity=400_000), environment_frame_stack=1, unroll_length=10)

PRESETS = settings.presets({
    # run_classic's defaults (sequences of 8, batch 32, one update per 4 env steps, target network every 250 updates)
    # with DQN's LunarLander learning rate (Adam 6.3e-4) and epsilon 1 -> 0.1 over 12k steps, for 200k env steps: seeds
    # 1 and 3 reach 200 at 120k, seed 2 ends at 184 (best 197). (It also set --n_step=3, which DRQN does not read: its
    # targets are one-step.)
    'LunarLander-v3': CLASSIC.replace(
        num_iterations=10, num_train_steps=20_000, learning_rate=6.3e-4, exploration_epsilon_decay_step=12_000, exploration_epsilon_end_value=0.1,
    ),
    # DQN's Pong preset (Tianshou's Atari DQN example: 10 environments, 100k replay, epsilon 1 -> 0.05 over 1M steps,
    # Adam 1e-4; 2M env steps) with DRQN's one-step targets, on run_atari's single frames and 10-step sequences, at the
    # same replay ratio and target refresh in env steps: a batch of 32 sequences (320 steps) per 100 env steps, where
    # DQN learns 32 transitions per 10, and the target network every 50 updates (5,000 env steps); DQN's 2 learner
    # threads and bfloat16 torsos.
    'Pong': ATARI.replace(
        **settings.PONG_BUDGET, num_envs=10, replay_capacity=100_000, min_replay_size=3_200, batch_size=32, learn_interval=100,
        target_network_update_interval=50, exploration_epsilon_decay_step=1_000_000, exploration_epsilon_end_value=0.05,
        learning_rate=1e-4, discount=0.99, learner_threads=2, bf16_learning=True,
    ),
})  # fmt: skip
