"""PPO-ICM's settings: PPO's with the intrinsic curiosity module's, its run scripts' defaults (`CLASSIC`: MountainCar
and MiniGrid; `ATARI`: Montezuma's Revenge) and its tuned presets per task (`PRESETS`, applied to --environment_name;
flags on the command line win, --preset=none turns them off).
Results: benchmarks/NOTEBOOK.md, "Curiosity against plain PPO"; docs/exploration.md.
"""

import dataclasses

from deep_rl_zoo import settings
from deep_rl_zoo.ppo import settings as ppo_settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class PpoIcmSettings(ppo_settings.PpoSettings):
    """PPO with the intrinsic curiosity module (Pathak et al. 2017)."""

    agent_name = 'PPO_ICM'
    takes_minigrid = True

    icm_beta: float = settings.setting(0.2, 'beta: the module minimises (1 - beta) L_inverse + beta L_forward (0.2 in the paper).', lower=0.0, upper=1.0)
    icm_eta: float = settings.setting(0.01, 'eta: the curiosity reward is eta / 2 * ||forward model error||^2.', lower=0.0)
    icm_learning_rate: float = settings.setting(1e-3, 'Adam learning rate of the curiosity module.', lower=0.0)
    icm_every_epoch: bool = settings.setting(True, "The module takes a step on each minibatch of every PPO epoch (as Burda et al. 2019 train it with PPO); false: of the first epoch only, so on each transition once, as the paper's A3C does, at a fraction of the cost.")
    extrinsic_reward_coef: float = settings.setting(1.0, 'Weight of the game reward in the reward the policy maximises.', lower=0.0)
    intrinsic_reward_coef: float = settings.setting(1.0, 'Weight of the curiosity reward (0: plain PPO, the module is not trained).', lower=0.0)
    normalize_intrinsic_reward: bool = settings.setting(False, 'Divide the curiosity reward by a running std of its discounted return (Burda et al. 2019, section 2.2), so that its scale stays put while the features grow.')


# PPO's settings of the curiosity table (`ppo.settings.CURIOSITY_CLASSIC`), with a bonus at eta 1.
CLASSIC = PpoIcmSettings(**ppo_settings.CURIOSITY_CLASSIC, icm_eta=1.0)
# PPO's Atari settings (Schulman et al. 2017, Table 5) and the paper's module (beta 0.2, Adam 1e-3).
ATARI = PpoIcmSettings(**ppo_settings.PPO_PAPER_ATARI | dict(environment_name='MontezumaRevenge'))

PRESETS = settings.presets({
    # ICM's bonus is episodic (mixed into the game's reward), so an episode that ends at the goal forfeits the bonus
    # its remaining steps would have paid. At eta 0.01 the bonus is 0.4-0.6 per step over the first 50k steps, over
    # 100 per episode of up to 270 steps, against a goal reward below 1: the policy learns to wander. At eta 1e-4 it
    # is 0.005 per step at first and 0.0003 after 50k: it still leads the exploration, and the goal is worth more.
    # 150k env steps: 5 of 5 seeds reach 0.5 (plain PPO: 2 of 5; eta 0.01: 0 of 3 in 100k; 0.001, 1e-5: seed 1 at 0).
    'MiniGrid-KeyCorridorS3R1-v0': CLASSIC.replace(num_iterations=6, num_train_steps=25_000, icm_eta=1e-4),
    # run_atari's settings for the Pong budget (2M env steps), with the bonus normalized. Unnormalized, eta 0.01's bonus
    # rose from 0.13 to 0.40 per step over 400k steps (the features grow), 6-18x the game's clipped reward per step
    # (0.022): greedy -21.0 at 100k-400k and -20.8 at 500k where plain PPO made -16.2 and +6.0 (run stopped, kept as
    # benchmarks/results/learning_pong_ppo_icm_eta001_PARTIAL.md). Normalized, 0.005 per step at 60k (0.09 raw).
    # The module trains on each transition once (the paper's A3C did): with a step on every minibatch of PPO's 4
    # epochs the first 30,720 steps took 152 s, with the first epoch's only 113 s (plain PPO: 82 s).
    'Pong': ATARI.replace(**settings.PONG_BUDGET, normalize_intrinsic_reward=True, icm_every_epoch=False),
})  # fmt: skip
