"""NGU's settings: R2D2's without its single discount and n-step, with NGU's policy family, Retrace and intrinsic
reward (`NguSettings`), its run scripts' defaults (`CLASSIC`, `ATARI`: R2D2's with a family of 8 policies) and its
tuned presets per task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns
them off).
Results: benchmarks/NOTEBOOK.md, "Exploration benchmark"; docs/exploration.md.
"""

import dataclasses

from deep_rl_zoo import settings
from deep_rl_zoo.r2d2 import settings as r2d2_settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class NguSettings(r2d2_settings.R2d2Settings):
    """NGU (Badia et al. 2020, "Never Give Up"; defaults are its appendix F values) on R2D2's settings, without
    --n_step and --discount: NGU learns by Retrace with the discounts of its N policies."""

    agent_name = 'NGU'
    hidden_flags = frozenset({'n_step', 'discount'})

    num_policies: int = settings.setting(32, 'N: policies (beta_j, gamma_j) learned by one network; policy 0 exploits (32 in the paper).', lower=2)
    intrinsic_reward_beta: float = settings.setting(0.3, 'beta of the most exploratory policy: policy j learns r^e + beta_j r^i (0.3 in the paper).', lower=0.0)
    gamma_max: float = settings.setting(0.997, 'Discount of policy 0 (0.997 in the paper).', lower=0.0, upper=1.0)
    gamma_min: float = settings.setting(0.99, 'Discount of policy N - 1 (0.99 in the paper).', lower=0.0, upper=1.0)
    retrace_lambda: float = settings.setting(0.95, 'lambda of the Retrace traces c = lambda min(1, pi / mu) (0.95 in the paper).', lower=0.0, upper=1.0)
    intrinsic_learning_rate: float = settings.setting(5e-4, 'Adam learning rate of the embedding network and the RND predictor (5e-4 in the paper).', lower=0.0)
    intrinsic_train_steps: int = settings.setting(5, 'Last real steps of each replayed sequence that train the embedding and RND (5 in the paper).', lower=1)
    episodic_memory_capacity: int = settings.setting(30_000, "Embeddings kept in each environment's episodic memory (30,000 in the paper).", lower=1)
    num_neighbours: int = settings.setting(10, 'k of the episodic k-nearest-neighbour bonus (10 in the paper).', lower=1)
    kernel_epsilon: float = settings.setting(1e-4, 'epsilon of the kernel K = epsilon / (d^2 / d_m^2 + epsilon) (1e-4 in the paper).', lower=0.0)
    pseudo_count_constant: float = settings.setting(1e-3, 'c of the episodic reward 1 / (sqrt(sum K) + c) (1e-3 in the paper).', lower=0.0)
    cluster_distance: float = settings.setting(8e-3, 'xi: normalised squared distances below it count as 0 (0.008 in the paper).', lower=0.0)
    max_similarity: float = settings.setting(8.0, 's_max: no episodic reward where sqrt(sum K) + c exceeds it (8 in the paper).', lower=0.0)
    max_lifelong_modulation: float = settings.setting(5.0, 'L: the lifelong factor 1 + (err - mean) / std is clipped to [1, L] (5 in the paper).', lower=1.0)


def of_r2d2(r2d2_run_settings: r2d2_settings.R2d2Settings, **changes) -> NguSettings:
    """R2D2's run-script settings as NGU's, without R2D2's single discount and n-step (NGU's family of discounts and
    Retrace take their place), with `changes`."""
    values = {name: value for name, value in dataclasses.asdict(r2d2_run_settings).items() if name not in NguSettings.hidden_flags}
    return NguSettings(**values | changes)


# R2D2's run-script defaults with a family of 8 policies: run_classic's and run_atari's defaults of NGU and Agent57.
# run_classic: 8 environments (2 actors of 4) play the N = 8 policies one each; shorter horizons than the paper's
# Atari ones (gamma 0.99 for policy 0 down to 0.97) for short episodes.
CLASSIC = of_r2d2(r2d2_settings.CLASSIC, num_envs_per_actor=4, num_policies=8, gamma_max=0.99, gamma_min=0.97)
# run_atari: Montezuma's Revenge by default; 2 actor processes of 4 environments, so N = 8 policies (the paper: 32
# over 256 actors).
ATARI = of_r2d2(r2d2_settings.ATARI, environment_name='MontezumaRevenge', num_policies=8)

PRESETS = settings.presets({
    # R2D2's MultiRoom settings (2 actors of 8 environments, 4 + 16-step sequences, one gradient step per 64 env steps,
    # 500k env steps; see r2d2/settings.py) with run_classic's family of 8 policies (gamma 0.99 down to 0.97).
    'MiniGrid-MultiRoom-N4-S5-v0': CLASSIC.replace(**r2d2_settings.MULTIROOM_N4_S5),
    # R2D2's Pong settings (batches of 32 sequences of 20 + 40 steps, one gradient step per 400 env
    # steps, target network every 50, replay of 10,000 sequences; 2M env steps; see r2d2/settings.py) with run_atari's
    # family of 8 policies.
    'Pong': ATARI.replace(**r2d2_settings.PONG),
})  # fmt: skip
