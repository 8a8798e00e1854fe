"""PPO-RND's settings: PPO's with random network distillation's, its run scripts' defaults (`CLASSIC`: MountainCar and
MiniGrid; `ATARI`: the paper's Montezuma's Revenge settings) and its tuned presets per task (`PRESETS`, applied to
--environment_name; flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md; docs/exploration.md.
"""

import dataclasses

from deep_rl_zoo import settings
from deep_rl_zoo.ppo import settings as ppo_settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class PpoRndSettings(ppo_settings.PpoSettings):
    """PPO with random network distillation (Burda et al. 2018); --discount is the extrinsic (episodic) discount."""

    agent_name = 'PPO_RND'
    takes_minigrid = True

    intrinsic_discount: float = settings.setting(
        0.99, 'Discount of the non-episodic intrinsic return (0.99 in the paper; the extrinsic one is --discount, 0.999).', lower=0.0, upper=1.0
    )
    extrinsic_advantage_coef: float = settings.setting(2.0, 'c_E: the policy follows c_E A_ext + c_I A_int (2 in the paper).', lower=0.0)
    intrinsic_advantage_coef: float = settings.setting(1.0, 'c_I: weight of the intrinsic advantage (1 in the paper).', lower=0.0)
    rnd_update_proportion: float = settings.setting(
        0.25, 'Fraction of each minibatch that trains the predictor (0.25 in the paper with 128 environments).', lower=0.0, upper=1.0
    )
    rnd_init_steps: int = settings.setting(10_000, 'Random-action env steps whose observations initialise the observation normaliser before training.', lower=0)


# PPO-ICM's classic settings (`ppo.settings.CURIOSITY_CLASSIC`), extrinsic discount included (the curiosity table of
# docs/exploration.md compares both agents with the same PPO; run_atari has the paper's 0.999), the paper's intrinsic
# discount 0.99 and, with 8 rather than 128 environments, the whole minibatch training the predictor.
CLASSIC = PpoRndSettings(**ppo_settings.CURIOSITY_CLASSIC, intrinsic_discount=0.99, rnd_update_proportion=1.0, rnd_init_steps=2_048)
# The paper's settings (Burda et al. 2018, table 5) where they fit 8 environments: gamma_E 0.999, gamma_I 0.99,
# 128-step rollouts, 4 epochs of 4 minibatches, learning rate 1e-4, entropy 0.001, lambda 0.95, clip 0.1,
# unclipped game rewards turned to their sign, no life-loss terminal (RND is meant to see whole games), and
# 0.25 of each minibatch training the predictor; the normaliser starts from 50 x 128 random steps per environment
# in the paper, 128 x 8 x 10 here.
ATARI = PpoRndSettings(
    environment_kind='atari', environment_name='MontezumaRevenge', num_actors=2, num_envs_per_actor=4, num_iterations=10,
    num_train_steps=1_000_000, num_eval_steps=27_000, learning_rate=1e-4, discount=0.999, intrinsic_discount=0.99, unroll_length=128,
    num_epochs=4, num_minibatches=4, clip_epsilon=0.1, entropy_coef=0.001, value_coef=0.5, gae_lambda=0.95, max_grad_norm=0.5,
    terminal_on_life_loss=False, rnd_update_proportion=0.25, rnd_init_steps=10_240, learner_threads=2,
)  # fmt: skip

PRESETS = settings.presets({
    # PPO's Atari settings (run_atari of PPO: Adam 2.5e-4 annealed, gamma 0.99, entropy 0.01) in place of the paper's
    # Montezuma's Revenge ones (Adam 1e-4, gamma_E 0.999, entropy 0.001), with run_atari's RND bonus (its own discount
    # 0.99, 25% of the predictor's samples per update); for the Pong budget (2M env steps).
    'Pong': ATARI.replace(**settings.PONG_BUDGET, learning_rate=2.5e-4, discount=0.99, entropy_coef=0.01),
})  # fmt: skip
