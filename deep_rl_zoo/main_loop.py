"""The run loops: stepping environments, single-process training, and the actors + learner loop.

One *iteration* trains for `num_train_steps` environment steps, writes a checkpoint, evaluates the greedy
policy for `num_eval_steps` and appends one CSV row. Single-process agents (DQN and the value-based family)
use `run_single_process`; agents with actor processes (PPO, ...) use `run_actors_and_learner`. Both leave the
run's bookkeeping (directory, config, checkpoints, restarts, budgets, CSV, loggers) to `experiment.Experiment`.
"""

import dataclasses
import math
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import checkpoint, distributed, gym_env, trackers
from deep_rl_zoo.episodes import run_env_loop
from deep_rl_zoo.experiment import Experiment, RunSettings  # re-exported: run scripts and tests import them from here
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor, PolicyGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment
from deep_rl_zoo.settings import ActorsAndLearner, Asynchronous, Common, CommonType, GreedyEvaluation, ObscuredObservations
from deep_rl_zoo.types import Actor, Agent, Learner

EVAL_SEED_OFFSET = 10_000  # evaluation environments never replay the training environments' episodes


def run_single_process(
    experiment: Experiment,
    agent: Agent,
    train_env: VectorEnvironment,
    eval_actor: Actor,
    eval_env: VectorEnvironment,
) -> None:
    """Train / checkpoint / evaluate iterations of a single-process agent (DQN and its family).

    A checkpoint is also written every `save_every_sec` during an iteration and at Ctrl-C or SIGTERM (exit status
    130); a spent budget (`train_for_seconds`, `train_for_env_steps`) ends the iteration early with its checkpoint
    and results row. The experiment's files are written from `experiment.begin()` on, right before the first step."""
    stop_request = distributed.StopRequest()
    experiment.stop_request = stop_request
    try:
        if experiment.resumed_state is not None:
            checkpoint.load_state(agent, experiment.resumed_state, 'the checkpoint this run resumes from')
        experiment.restore_replay(agent)
        episodes = trackers.EpisodeTracker(train_env.num_envs)
        loop = run_env_loop(agent, train_env, on_restart=episodes.abandon_running)
        experiment.begin()
        for iteration in experiment.iterations:
            while experiment.steps_left() > 0 and not experiment.should_stop():
                step = next(loop)
                finished = episodes.step(step.raw_reward, step.terminated | step.truncated)
                experiment.record_train_step(train_env.num_envs, finished, step.observation)
                if experiment.periodic_save_due():
                    experiment.save_periodic(agent.state_dict(), agent.learner_steps, agent)
            if stop_request:
                experiment.stop(agent.state_dict(), agent.learner_steps, agent)
            experiment.end_iteration(
                iteration,
                agent.state_dict(),
                agent.learner_steps,
                agent.learner_statistics(),
                agent.agent_statistics(),
                lambda: experiment.evaluate(eval_actor, eval_env),
                agent,
            )
            if stop_request:  # arrived during the evaluation
                experiment.stop(agent.state_dict(), agent.learner_steps, agent)
    finally:
        experiment.close()
        train_env.close()
        eval_env.close()


def prepare_process(settings: Common) -> None:
    """Seeds torch and numpy's global generators (environments are seeded by their factories) and sets up torch
    with the learner's threads (`distributed.set_up_torch`): small MLPs run fastest on one thread; more only pay off
    for conv nets."""
    torch.manual_seed(settings.seed)
    np.random.seed(settings.seed)
    distributed.set_up_torch(settings.learner_threads)


def create_environment(
    settings: Common, num_envs: int, seed: int, *, use_python_wrappers: bool = False, render: bool = False, count_rooms: bool = False
) -> VectorEnvironment:
    """The vector environment of a run's `settings`, of its `environment_kind`: 'classic', 'atari' or 'continuous';
    observations are obscured with probability `obscure_probability` for the agents that have the setting
    (`settings.ObscuredObservations`: flickering Atari, DRQN). With `count_rooms`, Montezuma's Revenge is built from
    Python wrappers (the C++ vector env does not expose the RAM) in a `gym_env.RoomCounter`."""
    kind = settings.environment_kind
    if count_rooms and gym_env.is_montezuma_revenge(kind, settings.environment_name):
        return gym_env.RoomCounter(create_environment(settings, num_envs, seed, use_python_wrappers=True, render=render))
    options: dict[str, Any] = {'render': render}
    if kind == 'atari':
        if settings.environment_height != settings.environment_width:
            raise ValueError('--environment_height and --environment_width must be equal (square Atari frames)')
        options.update(
            frame_skip=settings.environment_frame_skip,
            frame_stack=settings.environment_frame_stack,
            frame_size=settings.environment_height,
            noop_max=settings.max_noop_actions,
            max_episode_frames=settings.max_episode_frames,
            clip_reward=settings.clip_reward,
            repeat_action_probability=settings.repeat_action_probability,
            use_python_wrappers=use_python_wrappers or render,
        )
    env = gym_env.create_vector_env(kind, settings.environment_name, num_envs, seed, **options)
    if isinstance(settings, ObscuredObservations) and settings.obscure_probability > 0.0:
        return gym_env.ObscuredObservations(env, settings.obscure_probability, seed)
    return env


def canonical_environment(settings: CommonType) -> CommonType:
    """`settings` with an Atari game under its one canonical name (`Pong` for `ALE/Pong-v5`, `PongNoFrameskip-v4` or
    `pong`), so that one game's experiments, files and checkpoints share one name."""
    if settings.environment_kind != 'atari':
        return settings
    try:
        return settings.replace(environment_name=gym_env.canonical_atari_name(settings.environment_name))
    except ValueError:  # no Atari game (or Sample Factory's name of one, which APPO translates): creating the environment says so
        return settings


def run_learner_device(settings: Common) -> torch.device:
    """The device a run's learner takes: the first GPU when there is one, unless the settings keep the learner on the
    CPU (--nolearner_on_gpu; the replay-based value agents have no such flag and take the GPU)."""
    on_gpu = getattr(settings, 'learner_on_gpu', True) and torch.cuda.is_available()
    return torch.device('cuda:0' if on_gpu else 'cpu')


def train_value_agent(
    run_settings: Common,
    build_agent: Callable[[VectorEnvironment, Any, torch.device], Agent],
    make_eval_actor: Callable[[nn.Module, float, int, torch.device], Actor] = EpsilonGreedyActor,
) -> None:
    """Entry point of the single-process run scripts: environments and agent from the run's resolved settings
    (`flags.resolve_settings`; their class also has `settings.SingleProcess`'s fields), then iterations. The agent is
    `build_agent(train_env, run_settings, device)` (`run_settings` of the agent's own settings class); the
    evaluation actor is `make_eval_actor(agent.online_network, eval_exploration_epsilon, seed, device)`."""
    prepare_process(run_settings)
    device = run_learner_device(run_settings)
    train_env = create_environment(run_settings, run_settings.num_envs, run_settings.seed)
    eval_env = None
    try:  # a run that cannot be built (e.g. a replay too large for the memory) closes the environments it opened
        eval_env = create_environment(run_settings, 1, run_settings.seed + EVAL_SEED_OFFSET)
        agent = build_agent(train_env, run_settings, device)
        # Policy agents have no eval_exploration_epsilon (their greedy actor ignores it).
        eval_epsilon = run_settings.eval_exploration_epsilon if isinstance(run_settings, GreedyEvaluation) else 0.0
        eval_actor = make_eval_actor(agent.online_network, eval_epsilon, run_settings.seed, device)
        experiment = Experiment(RunSettings.from_settings(agent.agent_name, run_settings), train_env)  # writes nothing yet
    except BaseException:
        for env in (train_env, eval_env):
            if env is not None:
                env.close()
        raise
    run_single_process(experiment, agent, train_env, eval_actor, eval_env)


@dataclasses.dataclass
class AsyncSettings:
    """The asynchronous mode of the actors + learner loop (IMPALA, APPO): see `run_actors_and_learner`."""

    num_buffers_per_actor: int  # K >= 2: an actor fills one while the learner trains on the others
    batch_rollouts: int  # rollouts per learner update, taken in arrival order
    max_policy_lag: int  # rollouts made by parameters more than this many updates old are dropped

    @classmethod
    def from_settings(cls, settings: Asynchronous) -> 'AsyncSettings':
        """The run's `settings.Asynchronous` settings. `--num_buffers_per_actor=0` (the default) takes buffers
        for two batches, so that the actors fill the next batch while the learner trains on one: the learner holds a
        batch's buffers until its update ends, so with room for one batch only, actors and learner take turns. Raises
        ValueError, naming the flags, when the buffers cannot hold one batch: the learner would wait forever."""
        num_actors, batch_rollouts = settings.num_actors, settings.batch_rollouts
        two_batches = max(2, math.ceil(2 * batch_rollouts / num_actors))
        num_buffers = settings.num_buffers_per_actor or two_batches
        if num_actors * num_buffers < batch_rollouts:
            raise ValueError(
                f'--batch_rollouts={batch_rollouts} is more rollouts than --num_actors={num_actors} x --num_buffers_per_actor={num_buffers} '
                f'= {num_actors * num_buffers} buffers hold, so the learner would wait forever for a full batch: take --num_buffers_per_actor '
                f'>= {math.ceil(batch_rollouts / num_actors)} (0, the default, takes {two_batches}: two batches) or --batch_rollouts <= {num_actors * num_buffers}'
            )
        return cls(num_buffers, batch_rollouts, settings.max_policy_lag)


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


def _rollout_sizes(settings: ActorsAndLearner) -> str:
    """The flags whose product is the rollout buffers' size, for a message (APPO's are Sample Factory's)."""
    if hasattr(settings, 'num_workers'):
        return (
            f'--num_workers={settings.num_workers} x --num_envs_per_worker={settings.num_envs_per_worker} x --rollout={settings.rollout} '
            f'steps, buffers for --num_batches_to_accumulate={settings.num_batches_to_accumulate} batches of --batch_size={settings.batch_size}'
        )
    buffers = f' x --num_buffers_per_actor (for --batch_rollouts={settings.batch_rollouts})' if isinstance(settings, Asynchronous) else ''
    return f'--num_actors={settings.num_actors} x --num_envs_per_actor={settings.num_envs_per_actor} x --unroll_length={settings.unroll_length} steps{buffers}'


def stopping_note(num_actors: int) -> str:
    """What an interrupted actors-and-learner run says it stops, before where its last checkpoint is."""
    return f'stopping {num_actors} actor{"" if num_actors == 1 else "s"}; '


def run_actors_and_learner(
    experiment: Experiment,
    learner: Learner,
    make_actor: Callable[[int, torch.device], distributed.RolloutActor],
    rollout_spec: dict[str, tuple[tuple[int, ...], torch.dtype]],
    actors: ActorsAndLearner,
    eval_actor: Actor,
    eval_env: VectorEnvironment,
    asynchronous: Optional[AsyncSettings] = None,
) -> None:
    """Actors + learner iterations, synchronous (`asynchronous` None) or asynchronous, of the run's `actors` settings
    (how many, where they run, whether they are restarted).

    Synchronous (PPO, A2C, SAC): every update uses one fresh rollout from each actor, in actor order; actors wait
    for the parameters their rollouts will be judged against, so the data is exactly on-policy and runs are
    deterministic per seed.

    Asynchronous (IMPALA, APPO): actors never wait (see `distributed`). The learner takes rollouts in arrival
    order, `batch_rollouts` per update, gives their buffers back after the update, and drops (counts and logs)
    any whose parameter version lags its own by more than `max_policy_lag` updates; with a bound of 0 every
    rollout trained on was made by the parameters being updated. Not deterministic: arrival order depends on
    timing.

    Ctrl-C or SIGTERM writes a checkpoint of the learner at the stop and stops every process within seconds; a
    crashed actor stops the run with its error, or is restarted with `--restart_actors`. Checkpoints are also written
    every `save_every_sec`, and a spent budget ends the iteration early (see `experiment.Experiment`).

    The experiment's files are written from `experiment.begin()` on, once the actor pool has started (Ray's actors
    placed and built): a run that fails before (no Ray cluster, a checkpoint that does not fit) leaves them as they were.
    """
    try:
        pool, parameters = _actor_pool(experiment, learner, make_actor, rollout_spec, actors, asynchronous)
        stop_request = distributed.StopRequest()  # after the Ray pool's connection: Ray sets signal handlers of its own
        experiment.stop_request = stop_request
        pool.start()  # Ray's: waits until every actor is placed and built (and stops them if one is not)
    except BaseException:
        experiment.close()
        eval_env.close()
        raise
    steps_per_rollout = rollout_spec['reward'][0][0] * rollout_spec['reward'][0][1]
    lag = PolicyLagStatistics()
    pending: list[distributed.Rollout] = []  # asynchronous: received, waiting for a full batch (across iterations)
    stopping = stopping_note(actors.num_actors)
    try:
        experiment.begin()
        parameters.publish(learner.network)
        for iteration in experiment.iterations:
            while experiment.steps_left() > 0 and not experiment.should_stop():
                if asynchronous is None:
                    batch: dict[int, distributed.Rollout] = {}
                    while len(batch) < actors.num_actors and (rollout := pool.receive(stop_request)) is not None:
                        batch[rollout.actor_id] = rollout
                        experiment.record_train_step(steps_per_rollout, rollout.finished, pool.buffer(rollout)['observation'][-1].numpy())
                    if stop_request:
                        break
                    # In actor order, whatever the order of arrival: a learner with a replay (SAC) keeps one stream per
                    # actor environment, and each stream must continue that environment's steps.
                    learner.update([pool.buffer(batch[actor_id]) for actor_id in range(actors.num_actors)])
                    parameters.publish(learner.network)
                else:
                    rollout = pool.receive(stop_request)
                    if rollout is None:
                        break
                    experiment.record_train_step(steps_per_rollout, rollout.finished, pool.buffer(rollout)['observation'][-1].numpy())
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
                if experiment.periodic_save_due():
                    experiment.save_periodic(learner.state_dict(), learner.learner_steps, learner)
            if stop_request:
                pool.request_stop()  # the actors wind down while the checkpoint at the stop is written
                experiment.stop(learner.state_dict(), learner.learner_steps, learner, stopping)
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
                learner,
            )
            if stop_request:  # arrived during the evaluation
                pool.request_stop()
                experiment.stop(learner.state_dict(), learner.learner_steps, learner, stopping)
    finally:
        pool.stop()
        experiment.close()
        eval_env.close()


def _actor_pool(
    experiment: Experiment,
    learner: Learner,
    make_actor: Callable[[int, torch.device], distributed.RolloutActor],
    rollout_spec: dict[str, tuple[tuple[int, ...], torch.dtype]],
    actors: ActorsAndLearner,
    asynchronous: Optional[AsyncSettings],
) -> tuple[Any, Any]:
    """The learner with the resumed state, and the actor pool, not started (local processes, or Ray actors with
    `--backend=ray`), with its parameter broadcast: (pool, parameters)."""
    if experiment.resumed_state is not None:
        checkpoint.load_state(learner, experiment.resumed_state, 'the checkpoint this run resumes from')
    experiment.restore_replay(learner)
    devices = distributed.actor_devices(actors.num_actors, actors.actors_on_gpu)
    context = distributed.process_context(devices)
    parameters = distributed.SharedParameters(learner.network, context)
    num_buffers = asynchronous.num_buffers_per_actor if asynchronous else 1
    buffers = distributed.make_rollout_buffers(actors.num_actors, rollout_spec, num_buffers)
    if actors.backend == 'ray':  # the same pool on Ray actors, parameters via its object store
        from deep_rl_zoo import ray_backend

        def log_statistics(statistics: dict[str, float]) -> None:
            experiment.train_logger.write_learner_statistics(learner.learner_steps, statistics)

        pool = ray_backend.RayActorPool(make_actor, rollout_spec, num_buffers, actors, asynchronous=asynchronous is not None, log_statistics=log_statistics)
        return pool, pool.parameters
    pool = distributed.ActorPool(make_actor, parameters, buffers, devices, context, asynchronous=asynchronous is not None, restart_actors=actors.restart_actors)
    return pool, parameters


def train_actors_and_learner(
    run_settings: ActorsAndLearner,
    make_network: Callable[[VectorEnvironment, Any], nn.Module],
    build_learner: Callable[[nn.Module, VectorEnvironment, Any, int, torch.device], Learner],
    build_actor: Callable[[nn.Module, VectorEnvironment, Any, int, torch.device], distributed.RolloutActor],
    rollout_spec: Callable[[VectorEnvironment, int, int], dict[str, tuple[tuple[int, ...], torch.dtype]]],
    asynchronous: bool = False,
    make_eval_actor: Optional[Callable[[nn.Module, torch.device], Actor]] = None,
    count_rooms: bool = False,
) -> None:
    """Entry point of the actors + learner run scripts (PPO, IMPALA, ...): everything from the run's resolved settings
    (`flags.resolve_settings`), then iterations; `asynchronous` runs the loop's asynchronous mode with the settings of
    `settings.Asynchronous`. The loop and the builders run with `run_settings.core_settings()`, the settings under the
    core's names (APPO's translated from Sample Factory's); the experiment saves `run_settings.flag_values()`. The
    network is `make_network(env, settings)`; the learner is `build_learner(network, env, settings, total_updates,
    device)`, where `env` is the run's evaluation environment, whose spaces shape the learner; it is not stepped there.
    The evaluation actor is `make_eval_actor(learner.network, device)` (IMPALA's recurrent policy), by default
    `PolicyGreedyActor`. With `count_rooms` the actors' environments count the rooms of Montezuma's Revenge (see
    `create_environment`)."""
    settings = run_settings.core_settings()
    async_settings = AsyncSettings.from_settings(settings) if asynchronous else None
    prepare_process(settings)
    num_envs = settings.num_envs_per_actor
    eval_env = create_environment(settings, 1, settings.seed + EVAL_SEED_OFFSET)
    try:  # a run that cannot be built closes the environment it opened
        spec = rollout_spec(eval_env, num_envs, settings.unroll_length)
        num_buffers = async_settings.num_buffers_per_actor if async_settings else 1
        # Before anything large is built: rollout buffers that cannot fit are refused in one line.
        distributed.check_rollout_memory(distributed.rollout_buffer_bytes(settings.num_actors, spec, num_buffers), _rollout_sizes(settings))
        device = run_learner_device(settings)
        network = make_network(eval_env, settings)
        rollouts_per_update = settings.batch_rollouts if asynchronous else settings.num_actors
        steps_per_update = rollouts_per_update * num_envs * settings.unroll_length
        total_updates = math.ceil(settings.num_train_steps / steps_per_update) * settings.num_iterations
        learner = build_learner(network, eval_env, settings, total_updates, device)
        make_actor = _ActorFactory(settings, make_network, build_actor, count_rooms)
        if make_eval_actor is not None:
            eval_actor = make_eval_actor(learner.network, device)
        else:
            eval_actor = PolicyGreedyActor(learner.network, device, *action_bounds(eval_env))
        experiment = Experiment(RunSettings.from_settings(learner.agent_name, run_settings), eval_env)  # writes nothing yet
    except BaseException:
        eval_env.close()
        raise
    run_actors_and_learner(experiment, learner, make_actor, spec, settings, eval_actor, eval_env, async_settings)


@dataclasses.dataclass
class _ActorFactory:
    """Builds actor `actor_id` inside its process from the run's `settings` (under the core's names): its own
    environments (seeded apart) and network copy.

    A picklable object rather than a closure (the settings are a frozen dataclass), so GPU actors can be spawned."""

    settings: ActorsAndLearner
    make_network: Callable[[VectorEnvironment, Any], nn.Module]
    build_actor: Callable[..., distributed.RolloutActor]
    count_rooms: bool = False

    def __call__(self, actor_id: int, device: torch.device) -> distributed.RolloutActor:
        num_envs = self.settings.num_envs_per_actor
        seed = self.settings.seed + actor_id * num_envs  # every environment of the run has its own seed
        env = create_environment(self.settings, num_envs, seed, count_rooms=self.count_rooms)
        return self.build_actor(self.make_network(env, self.settings), env, self.settings, seed, device)


def action_bounds(env: VectorEnvironment) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    space = env.single_action_space
    return (space.low, space.high) if space.shape else (None, None)
