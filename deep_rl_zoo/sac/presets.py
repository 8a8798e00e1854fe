"""Discrete SAC's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`;
flags on the command line win, --preset=none turns them off). The run scripts' own defaults are the paper's
(Christodoulou 2019) settings.
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # Tianshou's Atari discrete SAC example (examples/atari/atari_sac.py): 10 environments (2 actors x 5), Adam 1e-5,
    # a fixed temperature of 0.05 (the paper's automatic one at 0.98 log|A| keeps the policy near uniform), 3-step
    # returns, target critics moved by tau 0.005 after every gradient step, batches of 64 from a 100k replay, learning
    # from 640 steps (its batch x environments), one gradient step per 10 env steps; for the Pong budget (2M env steps).
    'Pong': dict(
        **flags.PONG_BUDGET, num_envs_per_actor=5, learning_rate=1e-5, learn_temperature=False, initial_temperature=0.05, n_step=3,
        target_smoothing_coef=0.005, target_network_update_interval=1, batch_size=64, replay_capacity=100_000, min_replay_size=640,
        learn_interval=10, discount=0.99,
    ),
}  # fmt: skip
