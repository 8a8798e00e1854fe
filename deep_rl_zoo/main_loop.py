"""The run loops: stepping environments, single-process training, and the iteration bookkeeping they share.

One *iteration* trains for `num_train_steps` environment steps, writes a checkpoint, evaluates the greedy
policy for `num_eval_steps` and appends one CSV row. Single-process agents (DQN and the value-based family)
use `run_single_process`; agents with actor processes (PPO, ...) use `distributed.run_actors_and_learner`,
which shares the `Experiment` bookkeeping below.
"""

import dataclasses
import itertools
import math
import os
import sys
import time
from typing import Any, Callable, Iterator, Optional

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import checkpoint, distributed, gym_env, trackers
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor, PolicyGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.types import Actor, Agent, Learner

EVAL_SEED_OFFSET = 10_000  # evaluation environments never replay the training environments' episodes


def run_env_loop(actor: Actor, env: VectorEnvironment) -> Iterator[VectorStep]:
    """Resets `env`, then forever: one batched `act`, one vector `step`, `observe`, and yields the step.

    Environments reset themselves when an episode ends (same-step autoreset), so the loop never stops;
    callers take as many steps as they need with `itertools.islice`. An actor with a `reset()` method
    (a recurrent one, which carries state between steps) is reset with the environments.
    """
    observation = env.reset()
    if hasattr(actor, 'reset'):
        actor.reset()
    while True:
        action = actor.act(observation)
        step = env.step(action)
        actor.observe(action, step)
        yield step
        observation = step.observation


@dataclasses.dataclass
class RunSettings:
    """What every training run needs to know besides its agent; built from the shared flags."""

    agent_name: str
    environment_name: str
    num_iterations: int
    num_train_steps: int
    num_eval_steps: int
    checkpoint_dir: str
    results_csv_path: str
    episodes_csv_path: str
    load_checkpoint_file: str
    use_tensorboard: bool
    runs_dir: str
    tag: str
    debug_screenshots_interval: int
    progress: bool
    flags: dict[str, Any]
    train_for_seconds: float = 0.0  # > 0: no iteration starts after this many seconds of training

    @classmethod
    def from_values(cls, agent_name: str, values: dict[str, Any]) -> 'RunSettings':
        """Settings from the run's flag values (`flags.flag_values()` plus `environment_kind`)."""
        return cls(
            agent_name=agent_name,
            environment_name=values['environment_name'],
            num_iterations=values['num_iterations'],
            num_train_steps=values['num_train_steps'],
            num_eval_steps=values['num_eval_steps'],
            checkpoint_dir=values['checkpoint_dir'],
            results_csv_path=values['results_csv_path']
            or os.path.join(values['checkpoint_dir'], f'{agent_name}_{_safe(values["environment_name"])}_results.csv'),
            episodes_csv_path=values['episodes_csv_path'],
            load_checkpoint_file=values['load_checkpoint_file'],
            use_tensorboard=values['use_tensorboard'],
            runs_dir=values['runs_dir'],
            tag=values['tag'],
            debug_screenshots_interval=values['debug_screenshots_interval'],
            progress=values['progress'],
            flags=values,
            train_for_seconds=float(values.get('train_for_seconds', 0.0)),
        )


def _safe(name: str) -> str:
    return name.replace('/', '_')


class Experiment:
    """Bookkeeping of one training run: counters, loggers, checkpoints, evaluation and the results CSV."""

    def __init__(self, settings: RunSettings, env: VectorEnvironment):
        frames_per_step = env.frames_per_step
        observation_space = env.single_observation_space
        if settings.debug_screenshots_interval and not (observation_space.dtype == np.uint8 and len(observation_space.shape) == 3):
            raise ValueError(
                f'--debug_screenshots_interval needs image observations (Atari); {settings.environment_name} observes vectors'
            )
        self.settings = settings
        self.env_steps = 0
        self.first_iteration = 0
        self.resumed_state: Optional[dict[str, Any]] = None
        if settings.load_checkpoint_file:
            loaded = checkpoint.load_checkpoint(
                settings.load_checkpoint_file, agent_name=settings.agent_name, environment_name=settings.environment_name
            )
            self.resumed_state = loaded['state']
            self.env_steps = int(loaded['counters']['env_steps'])
            self.first_iteration = int(loaded['iteration']) + 1
            print(f'Resuming from {settings.load_checkpoint_file}: iteration {self.first_iteration}, {self.env_steps} env steps')
        run_name = trackers.make_run_name(settings.environment_name, settings.agent_name, settings.tag)
        self.train_logger = trackers.RunLogger(
            run_name, 'train', settings.use_tensorboard, settings.runs_dir, frames_per_step, start_env_steps=self.env_steps
        )
        self.eval_logger = trackers.RunLogger(
            run_name, 'eval', settings.use_tensorboard, settings.runs_dir, frames_per_step, start_env_steps=self.env_steps
        )
        self.results = trackers.CsvResults(settings.results_csv_path)
        self.episodes = trackers.CsvResults(settings.episodes_csv_path) if settings.episodes_csv_path else None
        total_steps = settings.num_train_steps * max(settings.num_iterations - self.first_iteration, 0)
        if total_steps == 0:
            print(f'Nothing to train: iterations {self.first_iteration}..{settings.num_iterations - 1} of {settings.num_train_steps} steps each')
        self.progress = trackers.ConsoleProgress(total_steps, frames_per_step) if settings.progress and total_steps > 0 else None
        self._start_time = time.monotonic()
        self._progress_origin = self.env_steps
        self._last_screenshot = self.env_steps

    @property
    def iterations(self) -> Iterator[int]:
        """The iterations left to run; none starts once `train_for_seconds` (when > 0) have passed."""
        for iteration in range(self.first_iteration, self.settings.num_iterations):
            elapsed = time.monotonic() - self._start_time
            if self.settings.train_for_seconds > 0 and elapsed >= self.settings.train_for_seconds:
                print(f'Stopping after iteration {iteration - 1}: {elapsed:.0f} s of training reached the budget of {self.settings.train_for_seconds:.0f} s', flush=True)
                return
            yield iteration

    def record_train_step(self, num_steps: int, finished: list[tuple[float, int]], observation: np.ndarray) -> None:
        """Counts `num_steps` env steps and the episodes they finished; screenshots and progress line."""
        self.env_steps += num_steps
        if finished:
            self.train_logger.log_episodes(self.env_steps, finished)
            if self.episodes is not None:
                for episode_return, episode_steps in finished:
                    self.episodes.append({'time': time.time(), 'env_steps': self.env_steps, 'return': episode_return, 'steps': episode_steps})
        interval = self.settings.debug_screenshots_interval
        if interval and self.env_steps - self._last_screenshot >= interval:
            self._last_screenshot = self.env_steps
            self.train_logger.write_screenshot(self.env_steps, observation[0])
        if self.progress is not None:
            self.progress.update(self.env_steps - self._progress_origin, self.train_logger.recent_returns())

    def end_iteration(
        self,
        iteration: int,
        state: dict[str, Any],
        learner_steps: int,
        learner_statistics: dict[str, float],
        agent_statistics: dict[str, float],
        evaluate: Callable[[], dict[str, float]],
    ) -> dict[str, Any]:
        """Logs the iteration, writes its checkpoint, evaluates, appends the CSV row; returns the row."""
        train = self.train_logger.write_performance(self.env_steps)
        self.train_logger.write_agent_statistics(self.env_steps, agent_statistics)
        self.train_logger.write_learner_statistics(learner_steps, learner_statistics)
        path = os.path.join(
            self.settings.checkpoint_dir,
            checkpoint.checkpoint_file_name(self.settings.agent_name, self.settings.environment_name, iteration),
        )
        checkpoint.save_checkpoint(
            path,
            agent_name=self.settings.agent_name,
            environment_name=self.settings.environment_name,
            iteration=iteration,
            state=state,
            counters={'env_steps': self.env_steps, 'learner_steps': learner_steps, 'iteration': iteration},
            flags=self.settings.flags,
        )
        evaluation = evaluate() if self.settings.num_eval_steps > 0 else {}
        row = {
            'iteration': iteration,
            'env_steps': self.env_steps,
            'learner_steps': learner_steps,
            'wall_time': round(time.monotonic() - self._start_time, 3),
            'train_episode_return': train.get('episode_return', math.nan),
            'train_num_episodes': train.get('num_episodes', 0),
            'train_step_rate': train.get('step_rate', math.nan),
            'eval_episode_return': evaluation.get('episode_return', math.nan),
            'eval_num_episodes': evaluation.get('num_episodes', 0),
            'checkpoint': path,
        }
        self.results.append(row)
        if self.progress is not None:
            self.progress.update(self.env_steps - self._progress_origin, self.train_logger.recent_returns(), force=True)
        print(
            f'iteration {iteration}: env steps {self.env_steps}, train return {row["train_episode_return"]:.2f}, '
            f'eval return {row["eval_episode_return"]:.2f}, checkpoint {path}',
            flush=True,
        )
        return row

    def evaluate(self, actor: Actor, env: VectorEnvironment) -> dict[str, float]:
        """Plays `num_eval_steps` with the greedy `actor` from a fresh reset; logs whole episodes under eval/."""
        start = time.monotonic()
        played = play_episodes(actor, env, self.settings.num_eval_steps)
        if not played['partial']:  # an unfinished game is no score: the iteration then reports nan
            self.eval_logger.log_episodes(self.env_steps, played['finished'])
        return self.eval_logger.write_performance(self.env_steps, steps_taken=played['steps'], seconds_taken=time.monotonic() - start)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()
        self.train_logger.close()
        self.eval_logger.close()
        self.results.close()
        if self.episodes is not None:
            self.episodes.close()


def play_episodes(actor: Actor, env: VectorEnvironment, num_steps: int, num_episodes: int = 0) -> dict[str, Any]:
    """Steps `env` with `actor` for `num_steps` env steps (or until `num_episodes` episodes end when > 0).

    Returns the finished episodes' raw returns and lengths. If no episode finished, the unfinished one of
    environment 0 is reported so a long game still gives a number (flagged by `partial`).
    """
    tracker = trackers.EpisodeTracker(env.num_envs)
    finished: list[tuple[float, int]] = []
    steps = 0
    for step in run_env_loop(actor, env):
        finished += tracker.step(step.raw_reward, step.terminated | step.truncated)
        steps += env.num_envs
        if (num_episodes and len(finished) >= num_episodes) or (not num_episodes and steps >= num_steps):
            break
    partial = not finished
    if partial:
        finished = [tracker.current(0)]
    return {'finished': finished, 'partial': partial, 'steps': steps}


def run_single_process(
    experiment: Experiment,
    agent: Agent,
    train_env: VectorEnvironment,
    eval_actor: Actor,
    eval_env: VectorEnvironment,
) -> None:
    """Train / checkpoint / evaluate iterations of a single-process agent (DQN and its family)."""
    if experiment.resumed_state is not None:
        agent.load_state_dict(experiment.resumed_state)
    episodes = trackers.EpisodeTracker(train_env.num_envs)
    loop = run_env_loop(agent, train_env)
    steps_per_iteration = math.ceil(experiment.settings.num_train_steps / train_env.num_envs)
    try:
        for iteration in experiment.iterations:
            for step in itertools.islice(loop, steps_per_iteration):
                finished = episodes.step(step.raw_reward, step.terminated | step.truncated)
                experiment.record_train_step(train_env.num_envs, finished, step.observation)
            experiment.end_iteration(
                iteration,
                agent.state_dict(),
                agent.learner_steps,
                agent.learner_statistics(),
                agent.agent_statistics(),
                lambda: experiment.evaluate(eval_actor, eval_env),
            )
    finally:
        experiment.close()
        train_env.close()
        eval_env.close()


def prepare_process(values: dict[str, Any]) -> None:
    """Seeds torch and numpy's global generators (environments are seeded by their factories) and sets the
    learner's torch threads: small MLPs run fastest on one thread; more only pay off for conv nets."""
    torch.manual_seed(values['seed'])
    np.random.seed(values['seed'])
    torch.set_num_threads(values['learner_threads'])


def create_environment(
    kind: str, values: dict[str, Any], num_envs: int, seed: int, *, use_python_wrappers: bool = False, render: bool = False
) -> VectorEnvironment:
    """The vector environment a run's flag `values` ask for: 'classic', 'atari' or 'continuous'; observations
    are obscured with probability `obscure_probability` when a run defines that flag (flickering Atari, DRQN)."""
    options: dict[str, Any] = {'render': render}
    if kind == 'atari':
        if values['environment_height'] != values['environment_width']:
            raise ValueError('--environment_height and --environment_width must be equal (square Atari frames)')
        options.update(
            frame_skip=values['environment_frame_skip'],
            frame_stack=values['environment_frame_stack'],
            frame_size=values['environment_height'],
            noop_max=values['max_noop_actions'],
            max_episode_frames=values['max_episode_frames'],
            clip_reward=values['clip_reward'],
            use_python_wrappers=use_python_wrappers or render,
        )
    env = gym_env.create_vector_env(kind, values['environment_name'], num_envs, seed, **options)
    if values.get('obscure_probability', 0.0) > 0.0:
        return gym_env.ObscuredObservations(env, values['obscure_probability'], seed)
    return env


def learner_device() -> torch.device:
    """The first GPU when there is one, else the CPU."""
    return torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')


def train_value_agent(
    kind: str,
    build_agent: Callable[[VectorEnvironment, dict[str, Any], torch.device], Agent],
    make_eval_actor: Callable[[nn.Module, float, int, torch.device], Actor] = EpsilonGreedyActor,
) -> None:
    """Entry point of the single-process run scripts: environments and agent from the flags, then iterations.
    The evaluation actor is `make_eval_actor(agent.online_network, eval_exploration_epsilon, seed, device)`."""
    from deep_rl_zoo import flags

    values = {**flags.flag_values(), 'environment_kind': kind}
    prepare_process(values)
    device = learner_device()
    train_env = create_environment(kind, values, values['num_envs'], values['seed'])
    eval_env = create_environment(kind, values, 1, values['seed'] + EVAL_SEED_OFFSET)
    agent = build_agent(train_env, values, device)
    # Policy agents define no eval_exploration_epsilon flag (their greedy actor ignores it).
    eval_actor = make_eval_actor(agent.online_network, values.get('eval_exploration_epsilon', 0.0), values['seed'], device)
    experiment = Experiment(RunSettings.from_values(agent.agent_name, values), train_env)
    run_single_process(experiment, agent, train_env, eval_actor, eval_env)


@dataclasses.dataclass
class AsyncSettings:
    """The asynchronous mode of the actors + learner loop (IMPALA, APPO): see `run_actors_and_learner`."""

    num_buffers_per_actor: int  # K >= 2: an actor fills one while the learner trains on the others
    batch_rollouts: int  # rollouts per learner update, taken in arrival order
    max_policy_lag: int  # rollouts made by parameters more than this many updates old are dropped

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> 'AsyncSettings':
        return cls(values['num_buffers_per_actor'], values['batch_rollouts'], values['max_policy_lag'])


class PolicyLagStatistics:
    """The policy lag (learner version minus the rollout's version) of the rollouts trained on, and the rollouts
    dropped for lagging more than the bound, per iteration."""

    def __init__(self) -> None:
        self.lags: list[int] = []
        self.dropped = 0

    def statistics(self) -> dict[str, float]:
        """version_diff min / mean / max of the rollouts trained on since the last call, and the dropped count."""
        lags = np.array(self.lags or [math.nan])
        received = len(self.lags) + self.dropped
        values = {
            'version_diff_min': float(lags.min()),
            'version_diff_mean': float(lags.mean()),
            'version_diff_max': float(lags.max()),
            'dropped_rollouts': float(self.dropped),
            'dropped_fraction': self.dropped / received if received else 0.0,
        }
        self.lags, self.dropped = [], 0
        return values


def run_actors_and_learner(
    experiment: Experiment,
    learner: Learner,
    make_actor: Callable[[int, torch.device], distributed.RolloutActor],
    rollout_spec: dict[str, tuple[tuple[int, ...], torch.dtype]],
    num_actors: int,
    actors_on_gpu: bool,
    eval_actor: Actor,
    eval_env: VectorEnvironment,
    asynchronous: Optional[AsyncSettings] = None,
    restart_actors: bool = False,
) -> None:
    """Actors + learner iterations, synchronous (`asynchronous` None) or asynchronous.

    Synchronous (PPO, A2C, SAC): every update uses one fresh rollout from each actor, in actor order; actors wait
    for the parameters their rollouts will be judged against, so the data is exactly on-policy and runs are
    deterministic per seed.

    Asynchronous (IMPALA, APPO): actors never wait (see `distributed`). The learner takes rollouts in arrival
    order, `batch_rollouts` per update, gives their buffers back after the update, and drops (counts and logs)
    any whose parameter version lags its own by more than `max_policy_lag` updates; with a bound of 0 every
    rollout trained on was made by the parameters being updated. Not deterministic: arrival order depends on
    timing.

    Ctrl-C or SIGTERM stops every process within seconds; a crashed actor stops the run with its error, or is
    restarted with `restart_actors`.
    """
    if experiment.resumed_state is not None:
        learner.load_state_dict(experiment.resumed_state)
    devices = distributed.actor_devices(num_actors, actors_on_gpu)
    context = distributed.process_context(devices)
    parameters = distributed.SharedParameters(learner.network, context)
    num_buffers = asynchronous.num_buffers_per_actor if asynchronous else 1
    buffers = distributed.make_rollout_buffers(num_actors, rollout_spec, num_buffers)
    pool = distributed.ActorPool(make_actor, parameters, buffers, devices, context, asynchronous=asynchronous is not None, restart_actors=restart_actors)
    steps_per_rollout = rollout_spec['reward'][0][0] * rollout_spec['reward'][0][1]
    stop_request = distributed.StopRequest()
    lag = PolicyLagStatistics()
    pending: list[distributed.Rollout] = []  # asynchronous: received, waiting for a full batch (across iterations)
    pool.start()
    try:
        parameters.publish(learner.network)
        for iteration in experiment.iterations:
            iteration_steps = 0
            while iteration_steps < experiment.settings.num_train_steps and not stop_request:
                if asynchronous is None:
                    batch: dict[int, distributed.Rollout] = {}
                    while len(batch) < num_actors and (rollout := pool.receive(stop_request)) is not None:
                        batch[rollout.actor_id] = rollout
                        experiment.record_train_step(steps_per_rollout, rollout.finished, pool.buffer(rollout)['observation'][-1].numpy())
                        iteration_steps += steps_per_rollout
                    if stop_request:
                        break
                    # In actor order, whatever the order of arrival: a learner with a replay (SAC) keeps one stream per
                    # actor environment, and each stream must continue that environment's steps.
                    learner.update([pool.buffer(batch[actor_id]) for actor_id in range(num_actors)])
                    parameters.publish(learner.network)
                    continue
                rollout = pool.receive(stop_request)
                if rollout is None:
                    break
                experiment.record_train_step(steps_per_rollout, rollout.finished, pool.buffer(rollout)['observation'][-1].numpy())
                iteration_steps += steps_per_rollout
                # The learner's own version does not change until the next update, so the lag measured now is the
                # lag at training time.
                if parameters.version - rollout.version > asynchronous.max_policy_lag:
                    lag.dropped += 1
                    pool.release(rollout)
                    continue
                pending.append(rollout)
                if len(pending) == asynchronous.batch_rollouts:
                    lag.lags += [parameters.version - rollout.version for rollout in pending]
                    learner.update([pool.buffer(rollout) for rollout in pending])
                    for rollout in pending:
                        pool.release(rollout)
                    pending.clear()
                    parameters.publish(learner.network)
            if stop_request:
                print(
                    f'\nInterrupted ({stop_request.signal_name}): stopping {num_actors} actors; the last checkpoint is in {experiment.settings.checkpoint_dir}',
                    file=sys.stderr,
                )
                raise SystemExit(130)
            learner_statistics = learner.learner_statistics()
            if asynchronous is not None:
                learner_statistics.update(lag.statistics())
            experiment.end_iteration(
                iteration,
                learner.state_dict(),
                learner.learner_steps,
                learner_statistics,
                learner.agent_statistics(),
                lambda: experiment.evaluate(eval_actor, eval_env),
            )
    finally:
        pool.stop()
        experiment.close()
        eval_env.close()


def train_actors_and_learner(
    kind: str,
    make_network: Callable[[VectorEnvironment, dict[str, Any]], nn.Module],
    build_learner: Callable[[nn.Module, dict[str, Any], int, torch.device], Learner],
    build_actor: Callable[[nn.Module, VectorEnvironment, dict[str, Any], int, torch.device], distributed.RolloutActor],
    rollout_spec: Callable[[VectorEnvironment, int, int], dict[str, tuple[tuple[int, ...], torch.dtype]]],
    asynchronous: bool = False,
    values: Optional[dict[str, Any]] = None,
    make_eval_actor: Optional[Callable[[nn.Module, torch.device], Actor]] = None,
) -> None:
    """Entry point of the actors + learner run scripts (PPO, IMPALA, ...): everything from the flags (or from
    `values`, for agents whose flags have other names), then iterations; `asynchronous` runs the loop's
    asynchronous mode with the flags of `flags.define_asynchronous`. The evaluation actor is
    `make_eval_actor(learner.network, device)` (IMPALA's recurrent policy), by default `PolicyGreedyActor`."""
    from deep_rl_zoo import flags

    values = values if values is not None else {**flags.flag_values(), 'environment_kind': kind}
    prepare_process(values)
    num_actors, num_envs = values['num_actors'], values['num_envs_per_actor']
    eval_env = create_environment(kind, values, 1, values['seed'] + EVAL_SEED_OFFSET)
    device = learner_device() if values['learner_on_gpu'] else torch.device('cpu')
    network = make_network(eval_env, values)
    async_settings = AsyncSettings.from_values(values) if asynchronous else None
    rollouts_per_update = async_settings.batch_rollouts if async_settings else num_actors
    steps_per_update = rollouts_per_update * num_envs * values['unroll_length']
    total_updates = math.ceil(values['num_train_steps'] / steps_per_update) * values['num_iterations']
    learner = build_learner(network, values, total_updates, device)

    make_actor = _ActorFactory(kind, values, make_network, build_actor)
    spec = rollout_spec(eval_env, num_envs, values['unroll_length'])
    experiment = Experiment(RunSettings.from_values(learner.agent_name, values), eval_env)
    if make_eval_actor is not None:
        eval_actor = make_eval_actor(learner.network, device)
    else:
        eval_actor = PolicyGreedyActor(learner.network, device, *action_bounds(eval_env))
    run_actors_and_learner(
        experiment, learner, make_actor, spec, num_actors, values['actors_on_gpu'], eval_actor, eval_env, async_settings, values['restart_actors']
    )


@dataclasses.dataclass
class _ActorFactory:
    """Builds actor `actor_id` inside its process: its own environments (seeded apart) and network copy.

    A picklable object rather than a closure, so GPU actors can be spawned."""

    kind: str
    values: dict[str, Any]
    make_network: Callable[[VectorEnvironment, dict[str, Any]], nn.Module]
    build_actor: Callable[..., distributed.RolloutActor]

    def __call__(self, actor_id: int, device: torch.device) -> distributed.RolloutActor:
        num_envs = self.values['num_envs_per_actor']
        seed = self.values['seed'] + actor_id * num_envs  # every environment of the run has its own seed
        env = create_environment(self.kind, self.values, num_envs, seed)
        return self.build_actor(self.make_network(env, self.values), env, self.values, seed, device)


def action_bounds(env: VectorEnvironment) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    space = env.single_action_space
    return (space.low, space.high) if space.shape else (None, None)


class _RecordingActor:
    """Passes through to `actor` and keeps env 0's RGB frames until its first episode ends."""

    def __init__(self, actor: Actor, env: VectorEnvironment):
        self.actor = actor
        self.env = env
        self.frames: list[np.ndarray] = []
        self.recording = True

    def act(self, observation: np.ndarray) -> np.ndarray:
        if not self.frames:  # the environment has just been reset
            self.frames.append(self.env.render())
        return self.actor.act(observation)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        self.actor.observe(action, step)  # a recurrent actor learns of episode ends here
        if self.recording:
            self.recording = not (step.terminated[0] or step.truncated[0])
            if self.recording:
                self.frames.append(self.env.render())


def evaluate_checkpoint(
    agent_name: str | tuple[str, ...],
    make_network: Callable[[VectorEnvironment, dict[str, Any]], nn.Module],
    make_actor: Callable[[nn.Module, VectorEnvironment, int], Actor],
) -> dict[str, Any]:
    """Entry point of every eval_agent: load a checkpoint (of `agent_name`, or of one of several agents whose
    networks are alike), play greedily, print the scores, record an mp4."""
    from deep_rl_zoo import flags

    values = flags.flag_values()
    torch.set_num_threads(1)
    if not values['load_checkpoint_file']:
        raise checkpoint.CheckpointError('--load_checkpoint_file is empty: pass the path of a .ckpt file written by training')
    loaded = checkpoint.load_checkpoint(
        values['load_checkpoint_file'], agent_name=agent_name, environment_name=values['environment_name'] or None
    )
    train_values = loaded['flags']
    kind = train_values.get('environment_kind')
    if kind is None:
        raise checkpoint.CheckpointError(f'{values["load_checkpoint_file"]} does not record its environment kind; retrain with this version')
    record = bool(values['recording_video_dir'])
    env = create_environment(kind, train_values, 1, values['seed'], use_python_wrappers=True, render=record)
    network = make_network(env, train_values)
    network.load_state_dict(loaded['state']['network'])
    network.eval()
    actor: Actor = make_actor(network, env, values['seed'])
    recorder = _RecordingActor(actor, env) if record else None
    played = play_episodes(recorder or actor, env, values['num_eval_steps'], values['num_eval_episodes'])
    env.close()
    returns = np.array([episode_return for episode_return, _ in played['finished']])
    note = ' (no episode finished: the unfinished one is reported)' if played['partial'] else ''
    print(
        f'{loaded["agent_name"]} on {loaded["environment_name"]}, checkpoint {values["load_checkpoint_file"]}: '
        f'{len(returns)} episodes, return mean {returns.mean():.2f} std {returns.std():.2f} '
        f'min {returns.min():.2f} max {returns.max():.2f}{note}'
    )
    if recorder is not None:
        video = _write_video(recorder.frames, values['recording_video_dir'], loaded['agent_name'], loaded['environment_name'])
        print(f'video of the first episode: {video}')
    return {'returns': returns, 'partial': played['partial']}


def _write_video(frames: list[np.ndarray], directory: str, agent_name: str, environment_name: str) -> str:
    """Writes RGB frames as an H.264 mp4 (30 fps) and returns its path."""
    import imageio.v2 as imageio

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f'{agent_name}_{_safe(environment_name)}_{time.strftime("%Y%m%d-%H%M%S")}.mp4')
    imageio.mimwrite(path, frames, fps=30, macro_block_size=1)
    return path
