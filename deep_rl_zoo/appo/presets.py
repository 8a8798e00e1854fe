"""APPO's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on the
command line win, --preset=none turns them off). run_atari's own defaults are Sample Factory's Atari settings.
Results: benchmarks/NOTEBOOK.md; docs/appo.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # run_atari's settings (Sample Factory's Atari example on 2 workers x 4 environments; they took seed 1 to +20 on
    # Pong from 600k env steps) for the Pong budget (2M env steps).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
