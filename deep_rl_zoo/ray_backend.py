"""The actors + learner loop on Ray (Moritz et al. 2018, "Ray: A Distributed Framework for Emerging AI
Applications"): `--backend=ray`, for runs whose actors do not fit on one machine. See docs/ray.md.

`RayActorPool` offers `distributed.ActorPool`'s interface to `main_loop.run_actors_and_learner`, so both modes of the
loop, and every agent with actors, run on it unchanged. Only the transport differs:
- each actor is a Ray actor (its own process), placed by Ray's scheduler on any node of the cluster with
  `--ray_num_cpus_per_actor` CPUs and `--ray_num_gpus_per_actor` GPUs, and built there by the same picklable
  factory that builds a local actor process;
- parameters: the learner flattens each version into one float32 array and puts it into the object store once
  (`ray.put`); every actor is sent the same reference, and each node fetches the bytes once;
- rollouts: `collect` returns the filled buffer as numpy arrays, which stay in the object store of the actor's
  node; the learner's `ray.get` maps them without a copy on its own node and pulls them straight from the
  actor's node otherwise (through no third process).

Synchronous mode (PPO, A2C, SAC): each publish sends one `collect` call to every actor, with the new version.
Asynchronous (IMPALA, APPO): each actor has up to `--num_buffers_per_actor` `collect` calls queued, so it never
waits for the learner; a call is sent again when the learner releases the rollout it returned. Each new version
is also announced to every actor in a second concurrency group, which runs beside `collect`, so a rollout starts
from the newest parameters the actor has heard of.

Faults: with `--restart_actors`, Ray restarts a dead actor's process (`max_restarts`, on another node if its node
was lost) and runs the calls it lost again (`max_task_retries`); each restart is printed and logged as the learner
statistic `actor_restarts` when the first rollout of the new process arrives. Without it, or past `max_restarts` restarts of one actor, the run stops with
`ActorCrashError`, as it does when an actor raises (a restart would repeat the bug). Stopping (the end of the run, Ctrl-C, SIGTERM, an error) kills the run's actors and ends
the Ray instance the run started at once (`end_local_instance`); a cluster it joined keeps running.
"""

import atexit
import contextlib
import gc
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
from typing import Any, Callable, Optional

import numpy as np
import ray
import torch
from ray import exceptions as ray_exceptions
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from deep_rl_zoo import distributed
from deep_rl_zoo.settings import ActorsAndLearner

_POLL_SECONDS = 0.5  # how often a blocked learner re-checks its stop request
_PLACEMENT_SECONDS = 120.0  # actors not running by then: the cluster cannot place them
_SIGNAL_GRACE_SECONDS = 1.0  # a group SIGTERM that reaches actors too (a joined cluster's) may kill them before the learner sees it
# The driver's disconnect flushes its task events (for Ray's dashboard, off in a run's own instance) to the GCS server
# for up to 5 s by default, in vain when a SIGTERM to the run's process group has ended the server.
_TASK_EVENTS_FLUSH_MS = 500
_INTEGER_OF_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
Spec = dict[str, tuple[tuple[int, ...], torch.dtype]]


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A numpy view of `tensor`; dtypes numpy lacks (bfloat16 gradients) travel as integers of the same width."""
    try:
        return tensor.numpy()
    except TypeError:
        return tensor.view(_INTEGER_OF_WIDTH[tensor.element_size()]).numpy()


def _to_tensor(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """The tensor of a rollout array as it left the actor, without a copy."""
    with warnings.catch_warnings():
        # Arrays from the object store are read-only; learners only read rollouts (they concatenate them).
        warnings.filterwarnings('ignore', message='The given NumPy array is not writable')
        tensor = torch.from_numpy(array)
    return tensor if tensor.dtype == dtype else tensor.view(dtype)


@ray.remote(concurrency_groups={'parameters': 1, 'rollouts': 1})
class RolloutWorker:
    """One actor of the run in a Ray actor process: the agent's actor, built by the run's factory, and one buffer
    it fills per `collect`. `announce` (its own thread) records newer parameters while `collect` runs."""

    def __init__(self, make_actor: Callable[[int, torch.device], distributed.RolloutActor], actor_id: int, spec: Spec, use_gpu: bool):
        distributed.set_up_torch(1)
        self._device = torch.device('cuda') if use_gpu else torch.device('cpu')  # Ray shows the actor its GPU only
        self._actor = make_actor(actor_id, self._device)
        self._buffer = {name: torch.empty(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
        self._life = uuid.uuid4().hex  # new in every process Ray (re)starts: tells the learner of restarts
        self._version = 0
        self._newest: tuple[int, list[ray.ObjectRef]] = (0, [])
        self._lock = threading.Lock()

    def placement(self) -> tuple[str, str, int]:
        """(node id, node IP, pid) of this actor's process."""
        return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), os.getpid()

    @ray.method(concurrency_group='parameters')
    def announce(self, version: int, reference: list[ray.ObjectRef]) -> None:
        """Records parameters `version` if it is the newest heard of (the reference in a list: Ray passes it
        unresolved, so only `collect` fetches the parameters it uses)."""
        with self._lock:
            if version > self._newest[0]:
                self._newest = (version, reference)

    @ray.method(concurrency_group='rollouts')
    def collect(self, version: int, reference: list[ray.ObjectRef]) -> tuple[str, int, list[tuple[float, int]], dict[str, np.ndarray]]:
        """Loads the newest parameters heard of (these or newer), fills one rollout; returns (life, parameter
        version, finished episodes, the buffer as numpy arrays, which Ray copies into the object store)."""
        self.announce(version, reference)
        with self._lock:
            newest, newest_reference = self._newest
        if newest > self._version:
            vector = torch.from_numpy(ray.get(newest_reference[0]).copy())  # a private copy: parameters become its views
            vector_to_parameters(vector.to(self._device), self._actor.network.parameters())
            self._version = newest
        finished = self._actor.collect(self._buffer)
        return self._life, self._version, finished, {name: _to_numpy(tensor) for name, tensor in self._buffer.items()}


class ObjectStoreParameters:
    """The learner's side of the parameter broadcast, as `distributed.SharedParameters`: `publish` puts each version
    into the object store once and hands the reference to the pool, which sends it to every actor."""

    def __init__(self, on_publish: Callable[[], None]):
        self.version = 0
        self.reference: Optional[ray.ObjectRef] = None
        self._on_publish = on_publish

    def publish(self, network: nn.Module) -> int:
        self.reference = ray.put(parameters_to_vector(network.parameters()).detach().cpu().numpy())
        self.version += 1
        self._on_publish()
        return self.version


# How long a --ray_address=HOST:PORT may take to accept a connection before the run says no cluster is there.
_CLUSTER_PROBE_SECONDS = 5.0


def connect(address: str, num_cpus: float) -> bool:
    """Joins the Ray cluster at `address` ('auto' or HOST:PORT), or starts a Ray instance on this machine when it
    is empty (with at least `num_cpus` CPUs: actors may share cores, as local actor processes do). Returns whether
    this run connected, so must disconnect (and so shut down the instance it started); a process already connected
    (a test, a notebook) keeps its connection."""
    if ray.is_initialized():
        return False
    # At exit, Python's last garbage collection goes over every object Ray's import and the run made (about 335,000):
    # 1 to 3 s of a stop on a busy 2-core machine, for memory the ending process gives back anyway. Skip it.
    atexit.register(gc.freeze)
    if address:
        _check_cluster_answers(address)
        try:
            ray.init(address=address)
        except ConnectionError as error:  # 'auto' with no cluster on this machine
            raise ValueError(_no_cluster_message(address, _last_line(error))) from None
    else:
        # 'local': a new instance even where RAY_ADDRESS or an earlier `ray start` names a cluster to join.
        with _instance_in_its_own_process_group():
            ray.init(
                address='local', num_cpus=max(os.cpu_count() or 1, math.ceil(num_cpus)), include_dashboard=False,
                _system_config={'task_events_shutdown_flush_timeout_ms': _TASK_EVENTS_FLUSH_MS},
            )  # fmt: skip
    return True


def _check_cluster_answers(address: str) -> None:
    """Refuses, in one line, a HOST:PORT where nothing listens: Ray itself would retry it for minutes."""
    if address == 'auto':
        return
    host, port = address.rsplit(':', 1)
    try:
        socket.create_connection((host, int(port)), timeout=_CLUSTER_PROBE_SECONDS).close()
    except OSError as error:
        raise ValueError(_no_cluster_message(address, error.strerror or str(error) or type(error).__name__)) from None


def _no_cluster_message(address: str, reason: str) -> str:
    port = address.rsplit(':', 1)[1] if address != 'auto' else '6379'
    return (
        f'--ray_address={address}: no Ray cluster answers there ({reason}); start one with `ray start --head --port={port}` '
        '(and `ray start --address=HEAD:PORT` on the other machines), or leave --ray_address empty to start a Ray instance for this run'
    )


@contextlib.contextmanager
def _instance_in_its_own_process_group():
    """Starts the processes of a local Ray instance (GCS server, raylet, and through the raylet the actors) in a
    process group of their own, so that a signal to the run's process group (Ctrl-C in a terminal, `kill -TERM
    -<pgid>`, `timeout`, a service manager) reaches the driver only, which then stops them itself
    (`end_local_instance`). Otherwise a SIGTERM also ends the raylet, and a driver that sees its raylet die ends its
    own process with status 1 in the middle of its stop. Ray shields them from SIGINT alone (it blocks the signal in
    them). They still die with the driver when it is killed outright: Ray starts them with the kernel's
    parent-death signal where the kernel has it, and only there is this done."""
    services = ray._private.services
    if not (sys.platform.startswith('linux') and ray._private.utils.detect_fate_sharing_support()):
        yield
        return
    console_popen = services.ConsolePopen

    class PopenInOwnProcessGroup(console_popen):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, process_group=0, **kwargs)

    services.ConsolePopen = PopenInOwnProcessGroup
    try:
        yield
    finally:
        services.ConsolePopen = console_popen


def end_local_instance() -> None:
    """Ends the Ray instance this process started, at once: `ray.shutdown()` disconnects this driver, then, in place of
    its graceful stop, SIGKILL goes to the instance's processes and to theirs (the raylet's workers and agents). It
    holds nothing to save.

    `ray.shutdown()` alone stops the processes one at a time, each with a SIGTERM and up to a second to exit. When a
    SIGTERM to the run's whole process group (`kill -TERM -<pgid>`, a service manager, `timeout`) has reached them
    first, the raylet and the GCS server hang in their own graceful exit, and each then waits its full second (2-3 s
    measured). The driver must disconnect first: a driver that sees its raylet die ends its own process (status 1,
    before the run's stop is done). Without /proc (not Linux), `ray.shutdown()` alone."""
    node = ray._private.worker._global_node  # the processes `ray.init` started (Ray has no public handle on them)
    if node is not None and os.path.isdir('/proc'):
        node.kill_all_processes = lambda *args, **kwargs: _kill_at_once(node)  # called by ray.shutdown() after disconnecting
    ray.shutdown()


def _kill_at_once(node: Any) -> None:
    """SIGKILL to every process of a Ray node this process started, and to their descendants; reaps them."""
    started = [info.process for infos in node.all_processes.values() for info in infos if info.process.poll() is None]
    if started:
        for pid in [process.pid for process in started] + sorted(_descendants({process.pid for process in started})):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for process in started:
            with contextlib.suppress(subprocess.TimeoutExpired):  # one stuck in the kernel (D state) stays a zombie
                process.wait(timeout=_SIGNAL_GRACE_SECONDS)


def _descendants(roots: set[int]) -> set[int]:
    """The pids of every descendant of the processes `roots`, from /proc."""
    parents = {}
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/stat') as stat:
                parents[int(entry)] = int(stat.read().rsplit(')', 1)[1].split()[1])
        except (ValueError, OSError):  # not a process, or it ended meanwhile
            continue
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


class RayActorPool:
    """`distributed.ActorPool` on Ray, of the run's actor `settings` (how many, Ray's cluster and resources per actor,
    --restart_actors): starts the actors, gathers their rollouts, counts and survives restarts (or reports a dead
    actor), and stops them. `parameters` is the run's parameter broadcast (`publish`, `version`)."""

    def __init__(
        self,
        make_actor: Callable[[int, torch.device], distributed.RolloutActor],
        spec: Spec,
        num_buffers_per_actor: int,
        settings: ActorsAndLearner,
        *,
        asynchronous: bool = False,
        max_restarts: int = 10,
        log_statistics: Callable[[dict[str, float]], None],
    ):
        if not asynchronous and num_buffers_per_actor != 1:
            raise ValueError('a synchronous actor pool takes exactly one buffer per actor')
        num_actors, cpus, gpus = settings.num_actors, settings.ray_num_cpus_per_actor, settings.ray_num_gpus_per_actor
        self._owns_connection = connect(settings.ray_address, num_actors * cpus)
        self._owns_instance = self._owns_connection and not settings.ray_address
        try:
            _check_resources(num_actors, cpus, gpus)
        except ValueError:
            self._disconnect()
            raise
        self.asynchronous = asynchronous
        self.restart_actors = settings.restart_actors
        self.max_restarts = max_restarts
        self.restarts = [0] * num_actors
        self.parameters = ObjectStoreParameters(self._on_publish)
        self._spec = spec
        self._num_buffers = num_buffers_per_actor
        self._log_statistics = log_statistics
        # With --restart_actors, Ray restarts a dead actor and runs the calls it lost again on the new process.
        restarts = {'max_restarts': max_restarts, 'max_task_retries': -1} if settings.restart_actors else {'max_restarts': 0, 'max_task_retries': 0}
        options = {'num_cpus': cpus, 'num_gpus': gpus, **restarts}
        self._actors = [RolloutWorker.options(**options).remote(make_actor, actor_id, spec, gpus > 0) for actor_id in range(num_actors)]
        self._lives: list[set[str]] = [set() for _ in range(num_actors)]  # the processes each actor's rollouts came from
        self._in_flight: dict[ray.ObjectRef, tuple[int, int]] = {}  # call -> (actor, buffer index)
        self._received: dict[tuple[int, int], dict[str, torch.Tensor]] = {}

    def start(self) -> None:
        """Waits until Ray has placed and built every actor; prints where they run."""
        lines, nodes = [], set()
        for actor_id, actor in enumerate(self._actors):
            try:
                node_id, node_ip, pid = ray.get(actor.placement.remote(), timeout=_PLACEMENT_SECONDS)
            except ray_exceptions.GetTimeoutError:
                self.stop()
                raise distributed.ActorCrashError(f'Ray did not start actor {actor_id} within {_PLACEMENT_SECONDS:.0f} s: see `ray status` for the cluster\'s free resources') from None
            except ray_exceptions.RayError as error:
                self.stop()
                raise distributed.ActorCrashError(f'actor {actor_id} failed to start: {_last_line(error)}\n{error}') from None
            lines.append(f'actor {actor_id} on node {node_id[:8]} ({node_ip}, pid {pid})')
            nodes.add(node_id)
        print(f'Ray: {_count(len(self._actors), "actor")} on {_count(len(nodes), "node")}: ' + ', '.join(lines), flush=True)

    def _on_publish(self) -> None:
        if not self.asynchronous:
            for actor_id in range(len(self._actors)):
                self._send(actor_id, 0)
        elif self.parameters.version == 1:
            for actor_id in range(len(self._actors)):
                for index in range(self._num_buffers):
                    self._send(actor_id, index)
        else:
            reference = [self.parameters.reference]
            for actor in self._actors:
                actor.announce.remote(self.parameters.version, reference)

    def _send(self, actor_id: int, index: int) -> None:
        call = self._actors[actor_id].collect.remote(self.parameters.version, [self.parameters.reference])
        self._in_flight[call] = (actor_id, index)

    def buffer(self, rollout: distributed.Rollout) -> dict[str, torch.Tensor]:
        return self._received[(rollout.actor_id, rollout.buffer_index)]

    def release(self, rollout: distributed.Rollout) -> None:
        """Frees a rollout (its object store copy goes once no tensor uses it) and, in asynchronous pools, asks its
        actor for the next one."""
        del self._received[(rollout.actor_id, rollout.buffer_index)]
        if self.asynchronous:
            self._send(rollout.actor_id, rollout.buffer_index)

    def receive(self, stop_request: distributed.StopRequest) -> Optional[distributed.Rollout]:
        """The next finished rollout in order of arrival, or None once a stop is requested. Raises ActorCrashError
        when an actor raises, or dies without `restart_actors`; with it, Ray restarts a dead actor (at most
        `max_restarts` times each) and runs the calls it lost again, and the pool counts the restart when a rollout
        comes from the new process."""
        while not stop_request:
            ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=_POLL_SECONDS)
            if not ready:
                continue
            actor_id, index = self._in_flight.pop(ready[0])
            try:
                life, version, finished, arrays = ray.get(ready[0])
            except ray_exceptions.RayTaskError as error:  # collect raised: a bug, which a restart would only repeat, or a stop
                if self._stopped_by_signal(stop_request):
                    return None
                raise distributed.ActorCrashError(f'actor {actor_id} failed: {_last_line(error)}; stopping the run\n{error}') from None
            except ray_exceptions.RayActorError as error:  # dead for good: Ray restarts actors itself while it may
                if self._stopped_by_signal(stop_request):
                    return None
                allowed = f'Ray restarts an actor at most {self.max_restarts} times' if self.restart_actors else '--restart_actors lets Ray restart it'
                raise distributed.ActorCrashError(f'actor {actor_id} died: {_last_line(error)}; stopping the run ({allowed})') from None
            except ray_exceptions.ObjectLostError:  # the rollout was lost with the node that held it: ask again
                self._send(actor_id, index)
                continue
            if life not in self._lives[actor_id]:
                if self._lives[actor_id]:
                    self._count_restart(actor_id)
                self._lives[actor_id].add(life)
            self._received[(actor_id, index)] = {name: _to_tensor(arrays[name], dtype) for name, (_, dtype) in self._spec.items()}
            return distributed.Rollout(actor_id, index, version, finished)
        return None

    def _stopped_by_signal(self, stop_request: distributed.StopRequest) -> bool:
        """Whether a failed actor was ended by a signal that reached the learner too (SIGTERM from a service manager
        or `kill -TERM -<pgid>` to a group that holds a joined cluster's actors; the actors of a run's own Ray instance
        are outside its group. Ray's worker raises SystemExit in the call it runs, or dies): the learner's own stop
        request may arrive a moment later. Waits a second for it."""
        deadline = time.monotonic() + _SIGNAL_GRACE_SECONDS
        while not stop_request and time.monotonic() < deadline:
            time.sleep(0.05)
        return bool(stop_request)

    def _count_restart(self, actor_id: int) -> None:
        """A rollout came from a new process of actor `actor_id`: Ray restarted it after its process or node died."""
        self.restarts[actor_id] += 1
        print(
            f'actor {actor_id} was restarted by Ray after its process or node died (restart {self.restarts[actor_id]} of at most '
            f'{self.max_restarts}); the run goes on',
            file=sys.stderr,
            flush=True,
        )
        self._log_statistics({'actor_restarts': float(sum(self.restarts))})

    def request_stop(self) -> None:
        """`distributed.ActorPool.request_stop`'s place: Ray actors are killed by `stop`, which does not wait for them."""

    def stop(self) -> None:
        """Kills every actor of the run and disconnects (ending the Ray instance this run started)."""
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._in_flight.clear()
        self._received.clear()
        self._disconnect()

    def _disconnect(self) -> None:
        if self._owns_instance:
            end_local_instance()
        elif self._owns_connection:
            ray.shutdown()
        self._owns_connection = self._owns_instance = False


def _check_resources(num_actors: int, cpus: float, gpus: float) -> None:
    """Refuses a run whose actors cannot all be placed on the cluster (they would wait for resources forever)."""
    total = ray.cluster_resources()
    for resource, per_actor, flag in (('CPU', cpus, '--ray_num_cpus_per_actor'), ('GPU', gpus, '--ray_num_gpus_per_actor')):
        needed, available = num_actors * per_actor, total.get(resource, 0.0)
        if needed > available:
            raise ValueError(
                f'--num_actors={num_actors} x {flag}={per_actor:g} needs {needed:g} {resource}s but the Ray cluster has {available:g}: '
                f'use fewer actors, lower {flag}, or add nodes (`ray start --address=...`)'
            )


def _last_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _count(number: int, noun: str) -> str:
    """'1 actor', '4 actors'."""
    return f'{number} {noun}' if number == 1 else f'{number} {noun}s'
