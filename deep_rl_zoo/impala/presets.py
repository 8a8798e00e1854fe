"""IMPALA's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on the
command line win, --preset=none turns them off). run_atari's own defaults are the paper's settings (Espeholt et al.
2018).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # run_atari's paper settings (RMSProp 6e-4, eps 0.01, 20-step unrolls, entropy 0.01, gradient clip 40 on the loss
    # summed over the batch) for the Pong budget (2M env steps, over which the learning rate is annealed to 0).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
