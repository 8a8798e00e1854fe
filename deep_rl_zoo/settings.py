"""Typed run settings: the groups every agent's settings are made of.

Each agent's package has a `settings.py` with one frozen dataclass composed of the groups below plus its own
fields, the named instances its run scripts start from (`CLASSIC`, `ATARI`, ...) and its presets (named instances
per task, `PRESETS`). The run scripts' flags are generated from the fields (`flags.define_settings`): a field's name
is its flag's, and its metadata (`setting`) holds the help text, the bounds and the `--help` theme; a run's saved
config.json uses the same names. Nothing here knows absl: `flags.py` is the one module that does.
"""

import dataclasses
from typing import Any, ClassVar, Optional, TypeVar

THEMES = ('environment', 'training', 'agent', 'actors and learner', 'evaluation', 'logging', 'checkpoints')
# The most environments one process steps: each is its own emulator or simulator, so a million would take minutes to
# create and gigabytes of memory before the first step (more environments: more actor processes).
MAX_ENVS_PER_PROCESS = 4096

SettingsType = TypeVar('SettingsType', bound='Settings')
CommonType = TypeVar('CommonType', bound='Common')


def setting(
    default: Any,
    help: str,  # pylint: disable=redefined-builtin  (the flag's help, as absl names it)
    *,
    lower: Optional[float] = None,
    upper: Optional[float] = None,
    choices: Optional[tuple[str, ...]] = None,
    theme: str = 'agent',
    kinds: Optional[tuple[str, ...]] = None,
) -> Any:
    """A field of a settings dataclass and the flag made of it: `default` (the class's; a run script's defaults are
    an instance), `help`, inclusive bounds `lower` and `upper`, `choices` of a string (an enum flag), the `theme` it is
    listed under in --help, and `kinds`, the environment kinds whose run scripts define the flag (None: all)."""
    if theme not in THEMES:
        raise ValueError(f'setting theme {theme!r} is not one of {THEMES}')
    metadata = dict(help=help, lower=lower, upper=upper, choices=choices, theme=theme, kinds=kinds, flag=True)
    return dataclasses.field(default=default, metadata=metadata)


def derived(default: Any, help: str, *, saved: bool = True) -> Any:  # pylint: disable=redefined-builtin
    """A field that is no flag: the run script or the resolution sets it (e.g. `environment_kind`); `saved` ones are
    kept in config.json and checkpoints with the flags."""
    return dataclasses.field(default=default, metadata=dict(help=help, flag=False, saved=saved))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The base of every agent's settings. `hidden_flags` names inherited fields that the agent's scripts define no
    flag for (NGU learns with its policies' own discounts, not --discount)."""

    agent_name: ClassVar[str] = ''  # the agent's name in experiment, checkpoint and results file names (DQN)
    hidden_flags: ClassVar[frozenset[str]] = frozenset()
    takes_minigrid: ClassVar[bool] = False  # run_classic also takes MiniGrid-... ids (their environment_kind: 'minigrid')

    given_flags: frozenset[str] = derived(frozenset(), 'The flags given on the command line (`flags.resolve_settings`).', saved=False)

    def replace(self: SettingsType, **changes: Any) -> SettingsType:
        """A copy with `changes` (unknown names raise TypeError)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def flag_fields(cls, kind: str) -> list[dataclasses.Field]:
        """The fields that are flags of a run script for environments of `kind`."""
        return [
            field
            for field in dataclasses.fields(cls)
            if field.metadata.get('flag') and field.name not in cls.hidden_flags and (field.metadata['kinds'] is None or kind in field.metadata['kinds'])
        ]

    def flag_values(self) -> dict[str, Any]:
        """The settings as config.json and checkpoints keep them: the run script's flags by name, then the derived fields."""
        kind = getattr(self, 'environment_kind', 'classic')
        values = {field.name: _plain(getattr(self, field.name)) for field in sorted(self.flag_fields(kind), key=lambda field: field.name)}
        derived_values = {field.name: getattr(self, field.name) for field in dataclasses.fields(self) if field.metadata.get('saved')}
        return values | derived_values

    def with_values(self: SettingsType, values: dict[str, Any]) -> SettingsType:
        """A copy with the `values` of its fields (command-line flags, a saved config); other names are ignored."""
        names = {field.name for field in dataclasses.fields(self)}
        return self.replace(**{name: tuple(value) if isinstance(value, list) else value for name, value in values.items() if name in names})

    # The steps of `flags.resolve_settings` an agent may change (APPO, whose settings are Sample Factory's).
    def with_config_file(self: SettingsType) -> SettingsType:
        """The settings with those of a file the command line names, under the command line's: none here."""
        return self

    def core_settings(self) -> 'Settings':
        """The settings the core runs with (`main_loop`'s actors + learner loop and the builders it calls, the
        experiment), under the core's names: these settings here."""
        return self

    def validate(self, source: str = '') -> None:
        """Raises ValueError, in one line naming the flag (and `source`, where the value came from), when a value is
        outside its field's bounds or choices: values of presets, saved configs and imported files, which absl's
        parser never saw."""
        for field in dataclasses.fields(self):
            problem = field_problem(field, getattr(self, field.name))
            if problem:
                raise ValueError(f'{source}: {problem}' if source else problem)


def field_problem(field: dataclasses.Field, value: Any) -> str:
    """What is wrong with `value` for the settings `field` ('' if nothing): out of bounds or not one of its choices."""
    metadata = field.metadata
    if not metadata.get('flag'):
        return ''
    if metadata['choices'] and value not in metadata['choices']:
        return f'--{field.name}={value}: must be one of {", ".join(metadata["choices"])}'
    if metadata['lower'] is not None and value < metadata['lower']:
        return f'--{field.name}={value}: must be at least {metadata["lower"]}'
    if metadata['upper'] is not None and value > metadata['upper']:
        return f'--{field.name}={value}: must be at most {metadata["upper"]}'
    return ''


def presets(by_environment: dict[str, SettingsType]) -> dict[str, SettingsType]:
    """An agent's `PRESETS`: each environment's tuned settings, with that environment as their `environment_name`."""
    return {name: preset.replace(environment_name=name) for name, preset in by_environment.items()}


def _plain(value: Any) -> Any:
    """A value as JSON keeps it (tuples of list flags as lists)."""
    return list(value) if isinstance(value, tuple) else value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Common(Settings):
    """Every run: environment, budget, seed, logging, checkpoints, optimiser basics; Atari's frame processing."""

    environment_kind: str = derived('classic', "The run script's kind of environment: classic, atari or continuous.")
    environment_name: str = setting('CartPole-v1', 'Environment to train on (its help is the run script kind\'s).', theme='environment')
    preset: str = setting('auto', "Tuned settings for --environment_name from the agent's settings.py: auto applies them when there are some (flags given on the command line win), none turns them off.", choices=('auto', 'none'), theme='environment')
    seed: int = setting(1, 'Seed of every environment, network and sampler of the run.', lower=0, theme='environment')
    num_iterations: int = setting(10, 'Training iterations; each trains, checkpoints, then evaluates.', lower=0, theme='training')
    num_train_steps: int = setting(50_000, 'Environment steps per training iteration (all environments together).', lower=0, theme='training')
    num_eval_steps: int = setting(5_000, 'Environment steps of greedy evaluation after each iteration (0 skips evaluation).', lower=0, theme='training')
    max_eval_episodes: int = setting(0, 'End each greedy evaluation once this many whole episodes have ended, within --num_eval_steps (0: play all of them).', lower=0, theme='training')
    discount: float = setting(0.99, 'Discount factor gamma.', lower=0.0, upper=1.0, theme='training')
    learning_rate: float = setting(3e-4, 'Adam learning rate.', lower=0.0, theme='training')
    max_grad_norm: float = setting(0.5, 'Clip the global gradient norm to this (0 disables).', lower=0.0, theme='training')
    use_tensorboard: bool = setting(True, 'Write TensorBoard logs under --runs_dir (--nouse_tensorboard to disable).', theme='logging')
    runs_dir: str = setting('runs', 'Directory of TensorBoard runs.', theme='logging')
    tag: str = setting('', 'Extra name added to the run directory.', theme='logging')
    debug_screenshots_interval: int = setting(0, 'Log an observation image every N environment steps (0 disables).', lower=0, theme='logging')
    results_csv_path: str = setting('', 'CSV file of per-iteration results (default: <checkpoint_dir>/<agent>_<env>_results.csv).', theme='logging')
    episodes_csv_path: str = setting('', 'Also log every training episode (unix time, env steps, raw return, length) to this CSV.', theme='logging')
    # the experiment: its directory, restarts, checkpoints and budgets (experiment.py)
    experiment: str = setting('', 'Name of the experiment (default <AGENT>_<env>[_<tag>]): its directory <train_dir>/<experiment> holds config.json, log.txt, checkpoints and the results CSV.', theme='checkpoints')
    train_dir: str = setting('checkpoints', 'Directory of the experiments.', theme='checkpoints')
    checkpoint_dir: str = setting('', 'Write checkpoints and the results CSV here instead of the experiment directory.', theme='checkpoints')
    restart_behavior: str = setting('resume', 'When the experiment exists: resume from its latest checkpoint with its saved config (flags given on the command line override it), restart (move the old directory aside) or overwrite (delete it).', choices=('resume', 'restart', 'overwrite'), theme='checkpoints')
    load_checkpoint_kind: str = setting('latest', 'Which checkpoint of the experiment a resumed run starts from.', choices=('latest', 'best'), theme='checkpoints')
    load_checkpoint_file: str = setting('', "Resume training from this checkpoint file (network, optimizer and counters) instead, with this command's flags.", theme='checkpoints')
    save_every_sec: int = setting(120, 'Also write a checkpoint this often during an iteration (0: only at the end of iterations and at a stop).', lower=0, theme='checkpoints')
    keep_checkpoints: int = setting(2, 'Periodic checkpoints kept (the newest); iteration checkpoints are milestones, kept unless --nokeep_milestones.', lower=1, theme='checkpoints')
    keep_milestones: bool = setting(True, "Keep every iteration's checkpoint (--nokeep_milestones: they count in --keep_checkpoints).", theme='checkpoints')
    save_best_metric: str = setting('eval_return', "Keep <AGENT>_<env>_best.ckpt, replaced only when this improves: the greedy evaluation's mean return, or (Sample Factory's reward) the training episodes' mean return.", choices=('eval_return', 'reward', 'none'), theme='checkpoints')
    save_best_after: int = setting(0, 'Env steps before a best checkpoint is kept (lucky early episodes do not count).', lower=0, theme='checkpoints')
    train_for_seconds: int = setting(0, 'End training (with a checkpoint and a results row) after this many seconds of training (0: no limit).', lower=0, theme='training')
    train_for_env_steps: int = setting(0, 'End training (with a checkpoint and a results row) after this many env steps (0: no limit).', lower=0, theme='training')
    save_replay: bool = setting(False, 'Replay agents: checkpoints also hold the replay memory (snappy-compressed), so a resumed run learns at once.', theme='checkpoints')
    save_replay_at_stop: bool = setting(False, 'Replay agents: only the checkpoint written at Ctrl-C or SIGTERM holds the replay memory (written after the one without it, which stays if this takes over 60 s), so a stopped run resumes as if never stopped.', theme='checkpoints')
    progress: bool = setting(True, 'Print a live progress line (env steps, frames/s, recent return, time left).', theme='logging')
    learner_threads: int = setting(1, 'Torch threads of the learning process (actor processes always use 1).', lower=1, theme='training')
    # Atari's frame processing (the flags of run_atari scripts only)
    environment_height: int = setting(84, 'Atari frame height after resizing.', lower=8, theme='environment', kinds=('atari',))
    environment_width: int = setting(84, 'Atari frame width after resizing.', lower=8, theme='environment', kinds=('atari',))
    environment_frame_skip: int = setting(4, 'Atari frames per agent step (max-pooled over the last two).', lower=1, theme='environment', kinds=('atari',))
    environment_frame_stack: int = setting(4, 'Atari frames stacked into one observation.', lower=1, theme='environment', kinds=('atari',))
    max_episode_frames: int = setting(108_000, 'Atari episode cap in emulator frames (30 minutes of play).', lower=1, theme='environment', kinds=('atari',))
    max_noop_actions: int = setting(30, 'At most this many no-op actions after each reset.', lower=0, theme='environment', kinds=('atari',))
    repeat_action_probability: float = setting(
        0.0,
        "Sticky actions (Machado et al. 2018): at every emulator frame the previous action is repeated instead of the agent's with this "
        'probability (0.25: ALE v5\'s default); 0 plays the deterministic game of the DQN papers.',
        lower=0.0, upper=1.0, theme='environment', kinds=('atari',),
    )  # fmt: skip
    clip_reward: bool = setting(True, 'Learn from sign-clipped rewards (scores are still reported raw).', theme='environment', kinds=('atari',))
    terminal_on_life_loss: bool = setting(True, 'Treat a lost life as terminal for learning (episodes still last whole games).', theme='environment', kinds=('atari',))

    @property
    def life_loss_is_terminal(self) -> bool:
        """Whether a lost life is a learning terminal: --terminal_on_life_loss, a flag of Atari runs only (no other kind
        of environment has lives)."""
        return self.environment_kind == 'atari' and self.terminal_on_life_loss


@dataclasses.dataclass(frozen=True, kw_only=True)
class SingleProcess(Settings):
    """The single-process agents' vector of environments (DQN's family, Actor-Critic, REINFORCE)."""

    num_envs: int = setting(1, 'Environments stepped together by the acting loop.', lower=1, upper=MAX_ENVS_PER_PROCESS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ActorsAndLearner(Settings):
    """The actors + learner loop (`main_loop.run_actors_and_learner`) and where its actors run."""

    num_actors: int = setting(2, 'Actor processes, each stepping a vector of environments.', lower=1, theme='actors and learner')
    num_envs_per_actor: int = setting(4, 'Environments each actor steps with one batched forward pass.', lower=1, upper=MAX_ENVS_PER_PROCESS, theme='actors and learner')
    actors_on_gpu: bool = setting(False, 'Run actors on local GPUs (spread round-robin) when there are any.', theme='actors and learner')
    learner_on_gpu: bool = setting(True, 'Run the learner on the first GPU when there is one.', theme='actors and learner')
    restart_actors: bool = setting(False, 'Restart an actor process that dies or raises (at most 10 times each) instead of stopping the run.', theme='actors and learner')
    backend: str = setting('local', 'Where actors run: local processes, or Ray actors on this machine or a Ray cluster (docs/ray.md).', choices=('local', 'ray'), theme='actors and learner')
    ray_address: str = setting('', '--backend=ray: the cluster to join, "auto" (the one this machine belongs to) or HOST:PORT of its head; "" starts a Ray instance for the run.', theme='actors and learner')
    ray_num_cpus_per_actor: float = setting(1.0, '--backend=ray: CPUs Ray reserves for each actor.', lower=0.0, theme='actors and learner')
    ray_num_gpus_per_actor: float = setting(0.0, '--backend=ray: GPUs (a fraction shares one) Ray reserves for each actor, which then acts on its GPU.', lower=0.0, theme='actors and learner')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Asynchronous(ActorsAndLearner):
    """The asynchronous actors + learner loop (IMPALA, R2D2's family): actors never wait for the learner."""

    num_buffers_per_actor: int = setting(
        0,
        'Rollout buffers per actor (>= 2): it fills free ones while the learner trains on the others. 0: enough for two batches, '
        'max(2, ceil(2 x batch_rollouts / num_actors)), so the actors fill the next batch during each update.',
        lower=0, theme='actors and learner',
    )  # fmt: skip
    batch_rollouts: int = setting(1, 'Rollouts per learner update, taken in arrival order.', lower=1, theme='actors and learner')
    max_policy_lag: int = setting(1_000_000, "Drop rollouts made by parameters more than this many updates older than the learner's (0: only current ones).", lower=0, theme='actors and learner')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Replay(Settings):
    """Replay, minibatch and target network of the replay-based agents (DQN's family, SAC)."""

    replay_capacity: int = setting(100_000, 'Transitions kept in replay.', lower=1)
    min_replay_size: int = setting(1_000, 'Transitions in replay before learning starts.', lower=1)
    compress_replay: bool = setting(False, 'Store observations snappy-compressed in replay.')
    batch_size: int = setting(32, 'Minibatch size of each update.', lower=1)
    adam_eps: float = setting(1e-8, "Adam's epsilon (C51 and Rainbow use 0.01/batch_size on Atari).", lower=0.0)
    n_step: int = setting(1, 'Steps of reward summed before bootstrapping (1 is the paper DQN).', lower=1)
    learn_interval: int = setting(4, 'Environment steps between updates.', lower=1)
    target_network_update_interval: int = setting(2_500, 'Updates between target network refreshes.', lower=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GreedyEvaluation(Settings):
    """The evaluation actor of Q agents: epsilon-greedy with a small epsilon."""

    eval_exploration_epsilon: float = setting(0.01, 'Epsilon of the evaluation actor of Q agents.', lower=0.0, upper=1.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bf16Learning(Settings):
    """bfloat16 autocast of the Nature CNN torsos in the learner: the replay-based value agents (DQN's family, R2D2's
    family) and the on-policy learners of Atari (PPO, PPO-ICM, PPO-RND, A2C, IMPALA, APPO)."""

    bf16_learning: bool = setting(
        False,
        "Run the Nature CNN torsos of the learner's forward passes under bfloat16 autocast (DQN's and R2D2's families, "
        "IQN's 512-unit hidden layer with them; PPO, PPO-ICM and PPO-RND: the policy's torso; A2C; IMPALA: the Nature "
        "torso, not the residual one; APPO: its convnet_atari encoder): faster on CPUs with AVX-512 BF16 or AMX (on a "
        "2-core Xeon with AMX: DQN's update 1.1x; R2D2's gradient step 1.7x, NGU's 1.5x, PPO's update 1.6x and "
        "APPO's 1.3x with --learner_threads=1) and on recent GPUs, several times slower on CPUs without them (DQN's "
        "update 7.4x on an AVX2 EPYC), where a preset leaves it off; actors, heads, LSTMs, losses, gradients and the "
        'optimizer stay float32, the loss moves by about 1%.',
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ValueLearning(Common, SingleProcess, Replay, GreedyEvaluation, Bf16Learning):
    """The replay-based value agents (DQN and its family): epsilon-greedy acting on a decaying epsilon."""

    exploration_epsilon_begin_value: float = setting(1.0, 'Exploration epsilon at the start of training.', lower=0.0, upper=1.0)
    exploration_epsilon_end_value: float = setting(0.01, 'Exploration epsilon after the decay.', lower=0.0, upper=1.0)
    exploration_epsilon_decay_step: int = setting(100_000, 'Environment steps of the linear epsilon decay.', lower=0)


# The settings the replay-based Q agents start from; each agent's settings.py then changes only what its algorithm
# does. CartPole: DQN's tuned settings (it solves CartPole-v1 in 130-150k env steps with them).
VALUE_CLASSIC: dict[str, Any] = dict(
    num_iterations=4, num_train_steps=50_000, num_eval_steps=2_500, learning_rate=5e-4, max_grad_norm=10.0, replay_capacity=50_000,
    min_replay_size=1_000, batch_size=64, n_step=1, learn_interval=1, target_network_update_interval=1_000, exploration_epsilon_decay_step=20_000,
)  # fmt: skip
# Atari: Nature DQN (Mnih et al. 2015, Extended Data Table 1; env steps = frames / 4), with Adam in place of RMSProp,
# acting in 4 environments at once (one batched forward pass and one update of 32 per 4 env steps, the paper's ratio)
# with 2 learner threads (alone 1.46x as fast as 1 on 2 cores; benchmarks/results/dqn_atari_throughput.md).
VALUE_ATARI: dict[str, Any] = dict(
    environment_kind='atari', environment_name='Pong', num_iterations=50, num_train_steps=250_000, num_eval_steps=125_000, learning_rate=1e-4,
    max_grad_norm=10.0, discount=0.99, replay_capacity=1_000_000, min_replay_size=50_000, batch_size=32, learn_interval=4,
    target_network_update_interval=2_500, exploration_epsilon_decay_step=1_000_000, exploration_epsilon_end_value=0.1,
    num_envs=4, learner_threads=2,
)  # fmt: skip

# The budget of every agent's Pong preset: 2M agent steps (8M frames) as 20 iterations of 100k, each followed by a
# greedy evaluation of whole games: 10 of them, or fewer when they are long, within 27,000 agent steps (108,000 frames,
# the longest a game may last), so that one game always ends: close games between two good players last over 10,000.
PONG_BUDGET: dict[str, Any] = dict(num_iterations=20, num_train_steps=100_000, num_eval_steps=27_000, max_eval_episodes=10)

# The tuned settings of DQN's presets, which the rest of its family's presets start from (benchmarks/NOTEBOOK.md, "Presets").
# rl-baselines3-zoo's CartPole settings (Adam 2.3e-3, batch 64, 100k replay, learning from 1k steps, epsilon 1 -> 0.04
# over 8k steps, gamma 0.99) and its update ratio (128 updates per 256 env steps) as one update every 2 env steps, the
# target network refreshed every 128 updates; with 3-step returns (1-step ones first reached 475 at 50k on seed 1,
# 3-step ones at 30k); 50k env steps, evaluated every 10k.
VALUE_CARTPOLE = dict(
    num_iterations=5, num_train_steps=10_000, learning_rate=2.3e-3, batch_size=64, replay_capacity=100_000, min_replay_size=1_000,
    discount=0.99, n_step=3, learn_interval=2, target_network_update_interval=128, exploration_epsilon_decay_step=8_000,
    exploration_epsilon_end_value=0.04,
)  # fmt: skip
# DQN's CartPole preset at Adam 1e-3: Double DQN's preset, and C51's, prioritized DQN's and QR-DQN's (on their own
# run_classic defaults for the rest).
VALUE_CARTPOLE_AT_ADAM_1E3 = VALUE_CARTPOLE | dict(learning_rate=1e-3)
# rl-baselines3-zoo's LunarLander settings (Adam 6.3e-4, batch 128, 50k replay, gamma 0.99, epsilon 1 -> 0.1 over
# 12k steps, 4 updates per 4 env steps, the target network refreshed every 250 env steps = 250 updates), learning
# from one minibatch on (its learning_starts 0), with 3-step returns; our 128 x 128 MLP in place of its 256 x 256;
# 100k env steps. Seeds 1-3 reach 200 at 60k, 80k, 60k; with 1-step returns they ended at 121, -29, 265 (one
# seed at 200). Its MountainCar settings (120k steps) never reached the goal (seeds 1-3 at -200 throughout).
VALUE_LUNAR_LANDER = dict(
    num_iterations=10, num_train_steps=10_000, learning_rate=6.3e-4, batch_size=128, replay_capacity=50_000,
    min_replay_size=128, discount=0.99, n_step=3, learn_interval=1, target_network_update_interval=250, exploration_epsilon_decay_step=12_000,
    exploration_epsilon_end_value=0.1,
)  # fmt: skip
# Tianshou's Atari DQN example (examples/atari/atari_dqn.py, which reports Pong at 20 after about 1.5M env steps): 10
# environments, 100k replay, learning from the first 320 steps (its batch x environments), one update of 32 per 10 env
# steps, 3-step returns, the target network refreshed every 500 updates (5,000 env steps), epsilon 1 -> 0.05 over 1M
# steps, Adam 1e-4 with PyTorch's eps 1e-8, gamma 0.99; for the Pong budget (PONG_BUDGET: 2M env steps, 8M frames).
# Tianshou's C51, QR-DQN, IQN and Rainbow examples keep that eps too: the papers' 0.01/32 (run_atari's for C51, QR-DQN
# and IQN) beside Adam 1e-4 held C51's Pong run at a greedy -21 to 1M, its 512-unit layer and head all but frozen
# (sqrt(v) below eps on 96-98% of their entries: benchmarks/NOTEBOOK.md, "C51 on Pong: Adam's eps"). The whole DQN
# family's Pong presets start from it (Nature DQN's 50M-frame settings stay run_atari's defaults: --preset=none). With
# 2 learner threads and the Nature CNN torsos of the update in bfloat16, the learning phase's fastest settings on 2
# cores with AMX (1.59x CleanRL's DQN, benchmarks/results/dqn_atari_throughput.md); bfloat16 applies only where the
# learner's device has it in hardware (flags.bf16_where_native).
VALUE_PONG = dict(
    **PONG_BUDGET, num_envs=10, replay_capacity=100_000, min_replay_size=320, batch_size=32, learn_interval=10, n_step=3,
    target_network_update_interval=500, exploration_epsilon_decay_step=1_000_000, exploration_epsilon_end_value=0.05,
    learning_rate=1e-4, adam_eps=1e-8, discount=0.99, learner_threads=2, bf16_learning=True,
)  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class PrioritizedReplay(Settings):
    """Proportional prioritized replay (Schaul et al. 2016): priorities |td| ** alpha, IS weights ** beta."""

    priority_exponent: float = setting(0.6, 'alpha: sampling probability is proportional to priority ** alpha (0 is uniform).', lower=0.0)
    importance_sampling_exponent_begin_value: float = setting(0.4, 'beta of the importance-sampling weights at the start of training.', lower=0.0, upper=1.0)
    importance_sampling_exponent_end_value: float = setting(1.0, 'beta after its linear annealing (1 fully corrects the sampling bias).', lower=0.0, upper=1.0)
    importance_sampling_exponent_decay_step: int = setting(100_000, 'Environment steps over which beta is annealed.', lower=0)
    priority_eps: float = setting(1e-6, 'Added to |td error| so that no transition has priority zero (must be > 0).', lower=0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Categorical(Settings):
    """The categorical return distribution (C51, Bellemare et al. 2017; Rainbow)."""

    num_atoms: int = setting(51, 'Atoms of the fixed support of the return distribution.', lower=2)
    v_min: float = setting(-10.0, 'Lowest atom of the support.')
    v_max: float = setting(10.0, 'Highest atom of the support.')


@dataclasses.dataclass(frozen=True, kw_only=True)
class ObscuredObservations(Settings):
    """Flickering observations (Hausknecht & Stone 2015): the recurrent agents', and DQN's for the side-by-side
    comparison with them."""

    obscure_probability: float = setting(0.0, 'Flickering observations: chance each observation is replaced by a blank one (the DRQN paper uses 0.5 on Atari).', lower=0.0, upper=1.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecurrentReplay(ObscuredObservations):
    """Recurrent Q agents learning from sequences (DRQN, Hausknecht & Stone 2015; R2D2)."""

    unroll_length: int = setting(10, 'Steps per replayed sequence (the paper unrolls 10).', lower=1)
    burn_in: int = setting(0, 'Leading steps of each sequence that only warm up the LSTM state (R2D2); 0 is the paper.', lower=0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LossWeights(Settings):
    """The weights of the policy-gradient agents' entropy bonus and value loss."""

    entropy_coef: float = setting(0.01, 'Weight of the entropy bonus.', lower=0.0)
    value_coef: float = setting(0.5, 'Weight of the value (baseline) loss.', lower=0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ObservationAndRewardScaling(Settings):
    """rl-baselines3-zoo's `normalize` (its VecNormalize) as two settings of the on-policy agents (PPO, A2C)."""

    normalize_observations: bool = setting(False, 'Normalise vector observations by their running mean and std (classic and continuous control).')
    scale_rewards: bool = setting(False, 'Divide rewards by the running std of the discounted return.')


@dataclasses.dataclass(frozen=True, kw_only=True)
class RmspropOrAdam(Settings):
    """The optimiser of the A3C lineage (A2C, IMPALA): RMSProp as in their papers, or Adam; learning rate annealed."""

    anneal_learning_rate: bool = setting(True, 'Decay the learning rate linearly to 0 over the run (as in the paper).')
    optimizer: str = setting(
        'rmsprop',
        "RMSProp as in the paper (PyTorch's), RMSProp as TensorFlow 1 computes it (rmsprop_tf: the mean square starts at 1 and "
        "epsilon sits inside the square root, as in OpenAI Baselines and rl-baselines3-zoo's A2C), or Adam.",
        choices=('rmsprop', 'rmsprop_tf', 'adam'),
    )
    rmsprop_alpha: float = setting(0.99, 'RMSProp decay alpha of the squared-gradient average (0.99 in the paper).', lower=0.0, upper=1.0)
    optimizer_eps: float = setting(1e-5, 'Epsilon added to the denominator of RMSProp or Adam.', lower=0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Quantile(Settings):
    """Quantile regression agents (QR-DQN, Dabney et al. 2017; IQN, Dabney et al. 2018)."""

    num_quantiles: int = setting(200, 'QR-DQN: fixed quantile midpoints per action.', lower=1)
    huber_param: float = setting(1.0, 'kappa of the quantile Huber loss (0 gives the plain quantile loss).', lower=0.0)
    tau_samples_s_tm1: int = setting(64, 'IQN: N, tau samples for the online quantiles at s_tm1.', lower=1)
    tau_samples_s_t: int = setting(64, "IQN: N', tau samples for the target quantiles at s_t.", lower=1)
    tau_samples_policy: int = setting(32, 'IQN: K, tau samples averaged to choose actions.', lower=1)
    tau_embed_dim: int = setting(64, 'IQN: cosine basis functions of the tau embedding.', lower=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Evaluation(Settings):
    """eval_agent's settings: which checkpoint plays, how long, and where its video and model folder go (the
    environment's settings, such as frame stacking, come from the checkpoint)."""

    environment_name: str = setting('', 'Environment to play; must match the checkpoint ("" takes it from the checkpoint).', theme='environment')
    load_checkpoint_file: str = setting('', 'Checkpoint to evaluate (required).', theme='checkpoints')
    num_eval_steps: int = setting(5_000, 'Environment steps to play (whole episodes are reported).', lower=1, theme='training')
    num_eval_episodes: int = setting(0, 'Stop after this many episodes instead (0: use --num_eval_steps).', lower=0, theme='evaluation')
    seed: int = setting(1, 'Seed of the environment and of action sampling.', lower=0, theme='environment')
    recording_video_dir: str = setting('recordings', 'Directory of the mp4 of the first episode ("" disables recording).', theme='evaluation')
    max_num_episodes: int = setting(0, 'Stop after at most this many episodes, whichever of this and the steps comes first (0: no bound).', lower=0, theme='evaluation')
    push_to_hub: bool = setting(False, 'Then write a model folder (model card, checkpoint, config, video) and upload it to --hf_repository with huggingface_hub.', theme='evaluation')
    hf_repository: str = setting('', 'With --push_to_hub: the Hugging Face Hub model repository, USER/NAME.', theme='evaluation')
    hub_folder: str = setting('', 'With --push_to_hub: where the model folder is written (default hub/<NAME>); it stays after the upload.', theme='evaluation')
    hub_upload: bool = setting(True, 'With --push_to_hub: upload the folder; --nohub_upload only writes it and prints the command that uploads it later (offline machines).', theme='evaluation')


@dataclasses.dataclass(frozen=True, kw_only=True)
class EpsilonGreedyEvaluation(Evaluation):
    """eval_agent's settings for Q agents, which play epsilon-greedily."""

    eval_exploration_epsilon: float = setting(0.01, 'Epsilon of the evaluation actor of Q agents.', lower=0.0, upper=1.0, theme='evaluation')


EVALUATION = Evaluation()
EPSILON_GREEDY_EVALUATION = EpsilonGreedyEvaluation()
