"""R2D2's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). run_classic's own defaults are its CartPole-v1 settings.
Results: benchmarks/NOTEBOOK.md, "Exploration benchmark"; docs/exploration.md.
"""

from deep_rl_zoo import flags

# The exploration benchmark's settings on run_classic's defaults (benchmarks/NOTEBOOK.md, "Exploration benchmark:
# MiniGrid-MultiRoom-N4-S5-v0"), shared with NGU's and Agent57's presets so the three differ only by their agents: 2
# actors of 8 environments, sequences of 4 burn-in + 16 learned steps (MultiRoom's episodes last up to 120 steps), one
# gradient step per 64 env steps (learner-bound otherwise: 41 env steps/s with run_classic's 4), the target network
# every 100 gradient steps, a replay of 40,000 sequences; the gradient clip 160 is the clip 10 of those runs (a loss
# averaged over the 16 learned steps) on the loss summed over them. 500k env steps, a greedy evaluation every 50k (10
# episodes of at most 120 steps).
MULTIROOM_N4_S5 = dict(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=1_200, num_envs_per_actor=8, unroll_length=16, learn_interval=64,
    target_network_update_interval=100, replay_capacity=40_000, max_grad_norm=160.0,
)  # fmt: skip

# Pong on one 2-core machine, shared with NGU's and Agent57's presets: run_atari's paper settings (Adam 1e-4 eps 1e-3,
# 5-step double-Q targets through the value rescaling h, gamma 0.997, priorities eta 0.9, 2 actors x 4 environments)
# at a quarter of the learner's work per sequence and a replay ratio a learner on 2 cores can keep up with: batches
# of 32 sequences of 20 burn-in + 40 learned steps (the paper: 64 of 40 + 80; one such gradient step took 33 s here,
# benchmarks/NOTEBOOK.md "R2D2, NGU and Agent57: replay memory and throughput on Pong"), one gradient step per 400 env
# steps (3.2 learned steps per env step, as DQN's Pong preset; the paper's run_atari default is 64 per env step), the
# target network every 50 gradient steps (20,000 env steps), a replay of 10,000 sequences (400k steps, about 0.9 GB
# compressed). The Pong budget: 2M env steps, 5,000 gradient steps.
PONG = dict(
    **flags.PONG_BUDGET, batch_size=32, burn_in=20, unroll_length=40, learn_interval=400, target_network_update_interval=50,
    replay_capacity=10_000,
)  # fmt: skip

PRESETS = {
    'MiniGrid-MultiRoom-N4-S5-v0': MULTIROOM_N4_S5,
    'Pong': PONG,
}
