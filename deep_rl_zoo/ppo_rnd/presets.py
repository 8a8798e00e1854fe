"""PPO-RND's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off). run_atari's own defaults are the paper's Montezuma's Revenge
settings.
Results: benchmarks/NOTEBOOK.md; docs/exploration.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # PPO's Atari settings (run_atari of PPO: Adam 2.5e-4 annealed, gamma 0.99, entropy 0.01) in place of the paper's
    # Montezuma's Revenge ones (Adam 1e-4, gamma_E 0.999, entropy 0.001), with run_atari's RND bonus (its own discount
    # 0.99, 25% of the predictor's samples per update); for the Pong budget (2M env steps).
    'Pong': dict(**flags.PONG_BUDGET, learning_rate=2.5e-4, discount=0.99, entropy_coef=0.01),
}  # fmt: skip
