"""Discrete SAC's settings: synchronous actors (`settings.ActorsAndLearner`) feeding a replay on the learner
(`settings.Replay`: `learn_interval` counts env steps of all actors together per gradient step,
`target_network_update_interval` gradient steps between target critic updates) and the temperature's; its run
scripts' defaults (`CLASSIC`, its CartPole-v1 settings; `ATARI`: the paper's, Christodoulou 2019) and its tuned
presets per task (`PRESETS`, applied to --environment_name; flags on the command line win, --preset=none turns them
off).
Results: benchmarks/NOTEBOOK.md; docs/policy-based.md.
"""

import dataclasses

from deep_rl_zoo import settings


@dataclasses.dataclass(frozen=True, kw_only=True)
class SacSettings(settings.Common, settings.ActorsAndLearner, settings.Replay):
    """Discrete soft actor-critic (Christodoulou 2019) with actor processes and a replay on the learner."""

    agent_name = 'SAC'

    unroll_length: int = settings.setting(4, 'Steps each actor environment writes per rollout before the learner adds them to replay.', lower=1)
    target_entropy_ratio: float = settings.setting(
        0.98, "Target entropy as a fraction of the uniform policy's log|A| (0.98 in the paper).", lower=0.0, upper=1.0
    )
    initial_temperature: float = settings.setting(1.0, 'alpha at the start of training (then tuned automatically unless --nolearn_temperature).', lower=0.0)
    learn_temperature: bool = settings.setting(True, 'Tune alpha towards the target entropy (the paper); false keeps --initial_temperature fixed.')
    target_smoothing_coef: float = settings.setting(
        1.0, 'tau of each target critic update: target <- tau online + (1 - tau) target (1 is a hard copy).', lower=0.0, upper=1.0
    )
    shared_torso: bool = settings.setting(
        False, "One torso under the policy and both critics, trained by the critics' loss only (the paper: three networks)."
    )


# 2 actors x 1 environment x 4 steps per update; one gradient step per 2 env steps once 1,000 are replayed; 3-step
# returns; Adam at 1e-3; Polyak target critics (tau 0.005 every step, Haarnoja et al.); the target entropy lowered
# to 0.05 log 2: the greedy evaluation wants a nearly deterministic policy, and the paper's 0.98 keeps a 2-action
# policy near uniform. Reaches 400 on seeds 1-3 within 90k env steps (docs/policy-based.md, Results).
CLASSIC = SacSettings(
    num_iterations=4, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=1e-3, discount=0.99, max_grad_norm=0.0, num_actors=2,
    num_envs_per_actor=1, replay_capacity=100_000, min_replay_size=1_000, batch_size=64, n_step=3, learn_interval=2, target_network_update_interval=1,
    target_smoothing_coef=0.005, target_entropy_ratio=0.05, initial_temperature=0.1, unroll_length=4, learner_on_gpu=False,
)  # fmt: skip
# The paper's settings (Christodoulou 2019, table 1) for its Atari 100k budget, 5 iterations of 20k env steps, with
# frames stored snappy-compressed: run_atari's docstring.
ATARI = SacSettings(
    environment_kind='atari', environment_name='Pong', num_iterations=5, num_train_steps=20_000, num_eval_steps=27_000, learning_rate=3e-4,
    discount=0.99, max_grad_norm=0.0, num_actors=2, num_envs_per_actor=4, replay_capacity=1_000_000, min_replay_size=20_000, compress_replay=True,
    batch_size=64, learn_interval=4, target_network_update_interval=2_000, target_smoothing_coef=1.0, target_entropy_ratio=0.98,
    initial_temperature=1.0, unroll_length=4, learner_threads=2,
)  # fmt: skip

PRESETS = settings.presets({
    # Tianshou's Atari discrete SAC example (examples/atari/atari_sac.py): 10 environments (2 actors x 5), Adam 1e-5,
    # a fixed temperature of 0.05 (the paper's automatic one at 0.98 log|A| keeps the policy near uniform), 3-step
    # returns, target critics moved by tau 0.005 after every gradient step, batches of 64 from a 100k replay, learning
    # from 640 steps (its batch x environments), one gradient step per 10 env steps, one Nature CNN torso under the
    # policy and both critics (Tianshou's trains it by all three losses, ours by the critics'); for the Pong budget
    # (2M env steps).
    'Pong': ATARI.replace(
        **settings.PONG_BUDGET, shared_torso=True, num_envs_per_actor=5, learning_rate=1e-5, learn_temperature=False, initial_temperature=0.05, n_step=3,
        target_smoothing_coef=0.005, target_network_update_interval=1, batch_size=64, replay_capacity=100_000, min_replay_size=640,
        learn_interval=10, discount=0.99,
    ),
})  # fmt: skip
