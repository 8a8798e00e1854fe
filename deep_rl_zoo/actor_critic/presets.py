"""Actor-Critic's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags
on the command line win, --preset=none turns them off). The run scripts' own defaults are the CartPole-v1 and Pong
settings.
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # run_atari's settings (A3C's and A2C's n = 5 and entropy 0.01, Baselines' learning rate 7e-4 and gradient clip 0.5,
    # 16 environments in one process; no paper gives this agent Atari settings) for the Pong budget (2M env steps).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
