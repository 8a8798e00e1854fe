"""Agent57's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Exploration benchmark"; docs/exploration.md.
"""

from deep_rl_zoo.ngu import presets as ngu_presets

PRESETS = {
    # NGU's MultiRoom settings, R2D2's (2 actors of 8 environments, 4 + 16-step sequences, one gradient step per 64 env
    # steps, 500k env steps; see r2d2/presets.py), with run_classic's family of 8 policies (gamma 0.99 down to 0.97).
    'MiniGrid-MultiRoom-N4-S5-v0': dict(ngu_presets.PRESETS['MiniGrid-MultiRoom-N4-S5-v0']),
    # NGU's Pong settings, R2D2's (batches of 32 sequences of 20 + 40 steps, one gradient step per 400 env
    # steps, target network every 50, replay of 10,000 sequences; 2M env steps; see r2d2/presets.py) with run_atari's
    # family of 8 policies.
    'Pong': dict(ngu_presets.PRESETS['Pong']),
}
