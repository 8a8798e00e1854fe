"""R2D2's settings: asynchronous actors feeding a prioritized replay of sequences (`R2d2Settings`), its run scripts'
defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`: the paper's where 2 cores allow) and its tuned presets per
task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them off). The
MultiRoom and Pong presets' settings (`MULTIROOM_N4_S5`, `PONG`) are NGU's and Agent57's too.
Results: benchmarks/NOTEBOOK.md, "Exploration benchmark"; docs/exploration.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class R2d2Settings(
    settings.Common, settings.Asynchronous, settings.Replay, settings.RecurrentReplay, settings.PrioritizedReplay, settings.GreedyEvaluation,
    settings.Bf16Learning,
):  # fmt: skip
    """R2D2 (Kapturowski et al. 2019): asynchronous epsilon-greedy actors feeding a prioritized replay of overlapping
    sequences (`settings.RecurrentReplay`'s unroll_length and burn_in, `settings.PrioritizedReplay`'s alpha and beta),
    transformed n-step double-Q targets; sizes of replay and batches count sequences."""

    agent_name = 'R2D2'
    takes_minigrid = True

    replay_capacity: int = settings.setting(
        10_000, 'Sequences kept in replay (each burn_in + unroll_length steps; the memory per sequence is logged).', lower=1
    )
    min_replay_size: int = settings.setting(100, 'Sequences in replay before learning starts.', lower=1)
    compress_replay: bool = settings.setting(False, "Store each sequence's observations snappy-compressed in replay.")
    batch_size: int = settings.setting(32, 'Sequences per gradient step.', lower=1)
    adam_eps: float = settings.setting(1e-3, "Adam's epsilon (1e-3 in the paper).", lower=0.0)
    n_step: int = settings.setting(5, 'Rewards summed before bootstrapping (5 in the paper).', lower=1)
    learn_interval: int = settings.setting(4, 'Environment steps (all actors together) added to replay per gradient step.', lower=1)
    target_network_update_interval: int = settings.setting(2_500, 'Gradient steps between target network copies (2,500 in the paper).', lower=1)
    actor_update_interval: int = settings.setting(
        400, 'Steps each actor environment takes between picks of the newest parameters: the rollout length (400 in the paper).', lower=1
    )
    priority_eta: float = settings.setting(0.9, 'eta: sequence priority = eta max |td| + (1 - eta) mean |td| (0.9 in the paper).', lower=0.0, upper=1.0)
    value_rescaling_eps: float = settings.setting(1e-3, 'eps of the value rescaling h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps x (1e-3 in the paper).', lower=0.0)
    exploration_epsilon_base: float = settings.setting(
        0.4, 'Ape-X epsilon ladder: environment i of N acts with base^(1 + alpha i / (N - 1)); base alone when N = 1.', lower=0.0, upper=1.0
    )
    exploration_epsilon_alpha: float = settings.setting(7.0, 'alpha of the Ape-X epsilon ladder (7 in the paper).', lower=0.0)


# The asynchronous loop of both run scripts: replay is off-policy anyway: drop nothing.
ASYNCHRONOUS = dict(batch_rollouts=1, max_policy_lag=1_000_000)
# The paper's prioritisation (section 2 and table 2): priority exponent 0.9, importance sampling exponent 0.6.
PRIORITIES = dict(priority_exponent=0.9, importance_sampling_exponent_begin_value=0.6, importance_sampling_exponent_end_value=0.6)

# run_classic's defaults (CartPole-v1): DQN's CartPole optimiser (Adam 5e-4, eps 1e-8: the paper's eps 1e-3 slows
# these small gradients); short sequences (4 burn-in + 8 learned steps, 4 apart) for short episodes; each step
# replayed about 64 times as in DQN's settings: batches of 32 sequences x 8 learned steps every 4 env steps. The
# gradient clip 80 is the 10 these settings were tuned with on a loss averaged over the 8 learned steps, scaled to the
# loss summed over them (`sequence_loss`): Adam at eps 1e-8 does not see the scale, so the steps are those it took
# (at 10 on the sum, seed 1 had not solved CartPole at 70k env steps; at 10 on the mean it had at 40k). 2 actor
# processes of 2 environments.
CLASSIC = R2d2Settings(
    environment_name='CartPole-v1', num_actors=2, num_envs_per_actor=2, **ASYNCHRONOUS, num_iterations=10, num_train_steps=50_000, num_eval_steps=2_500,
    learning_rate=5e-4, adam_eps=1e-8, max_grad_norm=80.0, discount=0.99, unroll_length=8, burn_in=4, n_step=3, replay_capacity=10_000,
    min_replay_size=100, batch_size=32, learn_interval=4, target_network_update_interval=250, actor_update_interval=20, learner_on_gpu=False,
    **PRIORITIES,
)  # fmt: skip
# run_atari's defaults: the paper's settings where 2 cores allow (see run_atari.py's docstring): 2 actor processes of
# 4 environments.
ATARI = R2d2Settings(
    environment_kind='atari', environment_name='Pong', num_actors=2, num_envs_per_actor=4, **ASYNCHRONOUS, num_iterations=50, num_train_steps=250_000,
    num_eval_steps=27_000, learning_rate=1e-4, adam_eps=1e-3, max_grad_norm=40.0, discount=0.997, unroll_length=80, burn_in=40, n_step=5,
    replay_capacity=20_000, min_replay_size=500, compress_replay=True, batch_size=64, learn_interval=80, target_network_update_interval=2_500,
    actor_update_interval=400, clip_reward=False, terminal_on_life_loss=False, learner_threads=2, **PRIORITIES,
)  # fmt: skip

# The exploration benchmark's settings on run_classic's defaults (benchmarks/NOTEBOOK.md, "Exploration benchmark:
# MiniGrid-MultiRoom-N4-S5-v0"), shared with NGU's and Agent57's presets so the three differ only by their agents: 2
# actors of 8 environments, sequences of 4 burn-in + 16 learned steps (MultiRoom's episodes last up to 120 steps), one
# gradient step per 64 env steps (learner-bound otherwise: 41 env steps/s with run_classic's 4), the target network
# every 100 gradient steps, a replay of 40,000 sequences; the gradient clip 160 is the clip 10 of those runs (a loss
# averaged over the 16 learned steps) on the loss summed over them. 500k env steps, a greedy evaluation every 50k (10
# episodes of at most 120 steps).
MULTIROOM_N4_S5 = dict(
    num_iterations=10, num_train_steps=50_000, num_eval_steps=1_200, num_envs_per_actor=8, unroll_length=16, learn_interval=64,
    target_network_update_interval=100, replay_capacity=40_000, max_grad_norm=160.0,
)  # fmt: skip

# Pong on one 2-core machine, shared with NGU's and Agent57's presets: run_atari's paper settings (Adam 1e-4 eps 1e-3,
# 5-step double-Q targets through the value rescaling h, gamma 0.997, priorities eta 0.9, 2 actors x 4 environments)
# at a quarter of the learner's work per sequence and a replay ratio a learner on 2 cores can keep up with: batches
# of 32 sequences of 20 burn-in + 40 learned steps (the paper: 64 of 40 + 80; one such gradient step took 33 s here,
# benchmarks/NOTEBOOK.md "R2D2, NGU and Agent57: replay memory and throughput on Pong"), one gradient step per 400 env
# steps (3.2 learned steps per env step, as DQN's Pong preset; the paper's run_atari default is 64 per env step), the
# target network every 50 gradient steps (20,000 env steps), a replay of 10,000 sequences (400k steps, about 0.9 GB
# compressed). The Pong budget: 2M env steps, 5,000 gradient steps. The learner on one thread beside the 2 actor
# processes, its Nature CNN torso in bfloat16 where the CPU has it in hardware (flags.bf16_where_native): the actors
# wait for the learner to free their buffers, so its gradient step sets the pace; R2D2 at 258 agent steps/s against
# 201 with 2 float32 threads on the 2-core Xeon with AMX (benchmarks/results/pong_preset_speed_sequences_xeon*.md).
PONG = dict(
    **settings.PONG_BUDGET, batch_size=32, burn_in=20, unroll_length=40, learn_interval=400, target_network_update_interval=50, replay_capacity=10_000,
    learner_threads=1, bf16_learning=True,
)  # fmt: skip

PRESETS = settings.presets({
    'MiniGrid-MultiRoom-N4-S5-v0': CLASSIC.replace(**MULTIROOM_N4_S5),
    'Pong': ATARI.replace(**PONG),
})  # fmt: skip
