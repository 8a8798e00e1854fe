"""PPO-ICM's tuned settings per task, applied by the run scripts to --environment_name (`flags.apply_preset`; flags on
the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Curiosity against plain PPO"; docs/exploration.md.
"""

from deep_rl_zoo import flags

PRESETS = {
    # ICM's bonus is episodic (mixed into the game's reward), so an episode that ends at the goal forfeits the bonus
    # its remaining steps would have paid. At eta 0.01 the bonus is 0.4-0.6 per step over the first 50k steps, over
    # 100 per episode of up to 270 steps, against a goal reward below 1: the policy learns to wander. At eta 1e-4 it
    # is 0.005 per step at first and 0.0003 after 50k: it still leads the exploration, and the goal is worth more.
    # 150k env steps: 5 of 5 seeds reach 0.5 (plain PPO: 2 of 5; eta 0.01: 0 of 3 in 100k; 0.001, 1e-5: seed 1 at 0).
    'MiniGrid-KeyCorridorS3R1-v0': dict(num_iterations=6, num_train_steps=25_000, icm_eta=1e-4),
    # run_atari's settings (PPO's Atari settings with ICM's bonus at run_atari's eta) for the Pong budget (2M env steps).
    'Pong': dict(flags.PONG_BUDGET),
}  # fmt: skip
