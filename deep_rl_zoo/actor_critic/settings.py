"""Actor-Critic's settings: the single-process n-step actor-critic's (`settings.SingleProcess`, the policy-gradient
loss weights, the unroll n), its run scripts' defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`: A3C/A2C's) and
its tuned presets per task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none
turns them off).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActorCriticSettings(settings.Common, settings.SingleProcess, settings.LossWeights):
    """The single-process n-step actor-critic (Konda & Tsitsiklis 2000; Sutton & Barto 2018, section 13.5)."""

    agent_name = 'ActorCritic'

    unroll_length: int = settings.setting(
        5, 'n: steps each environment takes between updates; returns look at most n steps ahead (1 is the one-step method).', lower=1
    )
    normalize_advantages: bool = settings.setting(False, "Standardise the advantages over each update's steps in the policy term.")


# 8 CartPoles x 5 steps per update (n = 5), Adam at 1e-3, no entropy bonus. With these, seeds 1-5 first reach a greedy
# return >= 475 after 10k-60k env steps (median 20k; benchmarks.learning, eval every 10k). Later evaluations can dip
# (seed 3: 500 from 40k on, 199 at 120k, back to 500 from 160k to 300k). --unroll_length=1, the one-step method, solved
# seed 1 in 80k.
CLASSIC = ActorCriticSettings(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=1e-3, discount=0.99, num_envs=8, unroll_length=5,
    entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5,
)  # fmt: skip
# A3C/A2C's settings (Mnih et al. 2016: n = 5, entropy 0.01).
ATARI = ActorCriticSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=10, num_train_steps=1_000_000, num_eval_steps=27_000, learning_rate=7e-4,
    discount=0.99, num_envs=16, unroll_length=5, entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5, learner_threads=2,
)  # fmt: skip

PRESETS = settings.presets({
    # run_atari's settings (A3C's and A2C's n = 5 and entropy 0.01, Baselines' learning rate 7e-4 and gradient clip 0.5,
    # 16 environments in one process; no paper gives this agent Atari settings) for the Pong budget (2M env steps), with
    # the advantages standardised over each update as PPO's are: A2C with those settings stayed at -21 on Pong for 2M
    # steps, its policy within 1% of uniform entropy; the likely reason, Pong's raw TD advantages being small beside the
    # entropy bonus (PPO's standardised ones have std 1 against the same 0.01), is what this preset tests.
    'Pong': ATARI.replace(**settings.PONG_BUDGET, normalize_advantages=True),
})  # fmt: skip
