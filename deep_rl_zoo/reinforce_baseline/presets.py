"""REINFORCE with baseline's tuned settings per task, applied by the run scripts to --environment_name
(`flags.apply_preset`; flags on the command line win, --preset=none turns them off). run_atari's own defaults are
REINFORCE's.
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # REINFORCE's Pong preset: run_atari's settings (8 environments, one update per 8 whole episodes, Adam 2.5e-4,
    # entropy 0.01, advantages standardised per update) for the Pong budget (2M env steps).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
