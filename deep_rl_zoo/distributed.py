"""Actor processes and a learner on one machine: start, stop, rollouts in shared memory, parameter broadcast.

Data moves without copying whole models or busy waiting:
- each actor owns rollout buffers of shared-memory tensors; it fills one in place and sends only a small
  message (actor id, buffer index, parameter version, finished episodes) through its own pipe;
- the learner publishes its parameters into shared memory with a version number (lock-free, see
  `SharedParameters`) and wakes each actor through its own semaphore; an actor copies them only when the
  version is newer than its own. (Not a multiprocessing.Condition: its notify_all waits for every sleeper to
  wake, so an actor killed while waiting would hang the learner forever; a semaphore release never blocks.)

Two modes share this transport. Synchronous (PPO, A2C, SAC): each actor has one buffer and waits for the
parameters of the next update before it fills it again, so every update learns from exactly on-policy data.
Asynchronous (IMPALA, APPO): each actor has K >= 2 buffers and never waits for the learner; it fills the next
free buffer while the learner trains on earlier ones, picking up the newest parameters between rollouts, and
each rollout carries the version that made it so the learner can bound the policy lag.

Actors and learners know nothing of this transport: an actor only has `network` and `collect(buffer)`, a
learner only `network` and `update(buffers)`. Another backend (Ray, for several machines) can replace this
module without touching an agent.

Shutdown: actors ignore Ctrl-C and watch a stop flag and their parent's pid; the learner, on Ctrl-C,
SIGTERM, an error or a crashed actor, sets the flag, wakes them, joins them for a few seconds, then terminates
any left. No process shares a lock with another (pipes per actor, ownerless semaphores, a seqlock for the
parameters), so a process killed at any moment cannot hang the others; with `restart_actors` a crashed actor
is replaced and the run goes on. Checkpoints are written atomically by the learner, so the last one always
loads.
"""

import collections
import contextlib
import math
import multiprocessing.connection
import os
import time
import signal
import sys
import traceback
from typing import Any, Callable, NamedTuple, Optional, Protocol

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

_POLL_SECONDS = 0.5  # how often a blocked process re-checks stop / liveness; blocking waits, not spinning


def set_up_torch(num_threads: int) -> None:
    """Torch for one of the run's processes, called before its first parallel op: denormal floats flushed to zero,
    then `num_threads` intra-op threads (started after the flush, they inherit it; threads already running keep
    their state). On Intel CPUs an operation on a denormal number takes a slow microcode path, and over a long run
    Adam's moments of weights whose gradients vanish decay into that range: in Double DQN's Pong run at 778k agent
    steps 40% of the second moments and 62% of the first were denormal and the fused Adam step took 20.6 ms against
    1.5 ms flushed (benchmarks/NOTEBOOK.md, "Denormal numbers"). Numbers below 1.2e-38 matter to no update."""
    torch.set_flush_denormal(True)
    torch.set_num_threads(num_threads)


class ActorCrashError(RuntimeError):
    """An actor process died or raised; the message names the actor and the cause."""


class RolloutActor(Protocol):
    network: nn.Module

    def collect(self, buffer: dict[str, torch.Tensor]) -> list[tuple[float, int]]:
        """Fills `buffer` in place with one rollout; returns the episodes finished meanwhile (raw return, length)."""


def process_context(devices: list[torch.device]) -> Any:
    """fork starts CPU actors in milliseconds (spawn re-imports torch: seconds); CUDA cannot be used in a
    forked child, so GPU actors are spawned (their `make_actor` must then be picklable)."""
    return torch.multiprocessing.get_context('spawn' if any(device.type == 'cuda' for device in devices) else 'fork')


class SharedParameters:
    """A network's parameters in shared memory with a version number, and one wake-up semaphore per waiting
    process (register each with `add_waiter` before starting the processes).

    Lock-free, so that no process killed at any moment can leave a lock held: there is one writer (the learner)
    and two slots. Version v lives in slot v % 2, so a publish never overwrites the slot readers are copying from
    unless they lag two versions behind. Each slot has a sequence counter, odd while it is being written (a
    seqlock): a reader copies the slot of the version it read and keeps the copy only if that slot's counter
    was even and unchanged across the copy; otherwise it tries again."""

    def __init__(self, network: nn.Module, context: Any):
        flat = parameters_to_vector(network.parameters()).detach().cpu()
        self._slots = torch.stack([flat, flat]).share_memory_()
        self._counters = torch.zeros(3, dtype=torch.int64).share_memory_()  # [version, sequence of slot 0, of slot 1]
        self._wakeups: list[Any] = []

    def add_waiter(self, context: Any) -> int:
        """Registers a process that will `wait_newer`; returns its waiter id. Call before starting it."""
        self._wakeups.append(context.Semaphore(0))
        return len(self._wakeups) - 1

    @property
    def version(self) -> int:
        return int(self._counters[0])

    def publish(self, network: nn.Module) -> int:
        """Copies `network`'s parameters in as the next version and wakes every waiter; never waits for them."""
        version = self.version + 1
        slot = version % 2
        self._counters[1 + slot] += 1  # odd: being written
        self._slots[slot].copy_(parameters_to_vector(network.parameters()).detach())
        self._counters[1 + slot] += 1  # even: complete
        self._counters[0] = version
        self.wake_all()
        return version

    def wake_all(self) -> None:
        """Wakes every waiter (to re-check the version, or a stop flag)."""
        for wakeup in self._wakeups:
            wakeup.release()

    def wait_newer(self, version: int, timeout: float, waiter: int = 0) -> bool:
        """Blocks `waiter` until the version exceeds `version` (True), or until `timeout` seconds pass or
        `wake_all` is called (False: the caller re-checks its stop conditions and waits again)."""
        if self.version > version:
            return True
        self._wakeups[waiter].acquire(timeout=timeout)
        return self.version > version

    def copy_to(self, network: nn.Module) -> int:
        """Loads the latest parameters into `network`; returns their version."""
        while True:
            version = self.version
            slot = version % 2
            sequence = int(self._counters[1 + slot])
            if sequence % 2 == 0:
                # A private copy: vector_to_parameters makes the parameters views of the vector it is given.
                copied = self._slots[slot].clone()
                if int(self._counters[1 + slot]) == sequence:
                    break
            time.sleep(0.001)  # the learner published twice during the copy (rare): take the newest
        vector_to_parameters(copied.to(next(network.parameters()).device), network.parameters())
        return version


def rollout_buffer_bytes(num_actors: int, spec: dict[str, tuple[tuple[int, ...], torch.dtype]], num_buffers_per_actor: int = 1) -> int:
    """Bytes of shared memory `make_rollout_buffers` would allocate."""
    one_buffer = sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size() for shape, dtype in spec.values())
    return num_actors * num_buffers_per_actor * one_buffer


def available_memory_bytes() -> int:
    """The memory a process can still take without swapping (/proc/meminfo's MemAvailable; free pages elsewhere)."""
    available = os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    with contextlib.suppress(OSError, ValueError), open('/proc/meminfo', encoding='ascii') as meminfo:
        for line in meminfo:
            if line.startswith('MemAvailable:'):
                available = int(line.split()[1]) * 1024
    return available


def free_shared_memory_bytes() -> int:
    """What shared tensors can still take: the smaller of the memory available (`available_memory_bytes`) and the free
    space of /dev/shm, where they live (a container may give it far less than its memory)."""
    available = available_memory_bytes()
    with contextlib.suppress(OSError):
        shm = os.statvfs('/dev/shm')
        available = min(available, shm.f_bavail * shm.f_frsize)
    return available


def check_rollout_memory(num_bytes: int, sizes: str, free_bytes: Optional[int] = None) -> None:
    """Refuses, in one line and before allocating, rollout buffers larger than the free shared memory; `sizes` names
    the flags whose product they are."""
    free_bytes = free_shared_memory_bytes() if free_bytes is None else free_bytes
    if num_bytes > free_bytes:
        raise ValueError(
            f'the rollout buffers would need {num_bytes / 2**30:,.1f} GiB of shared memory ({sizes}) but {free_bytes / 2**30:,.1f} GiB '
            'is free: lower one of them'
        )


def make_rollout_buffers(
    num_actors: int, spec: dict[str, tuple[tuple[int, ...], torch.dtype]], num_buffers_per_actor: int = 1
) -> list[list[dict[str, torch.Tensor]]]:
    """`num_buffers_per_actor` dicts of tensors per actor, shaped by `spec` ({name: (shape, dtype)}), in shared memory.

    Each actor gets one shared tensor per field, with its buffers along a leading dimension; a buffer's dict holds
    views of them. Every shared tensor keeps a file descriptor open (torch's file_descriptor sharing strategy) in the
    learner and in each forked actor, so one tensor per buffer per field would open actors x buffers x fields of
    them: 1,280 for Sample Factory's Atari model card (16 x 8 x 10), past the usual limit of 1,024 (`ulimit -n`)."""
    buffers = []
    for _ in range(num_actors):
        fields = {name: torch.empty((num_buffers_per_actor, *shape), dtype=dtype).share_memory_() for name, (shape, dtype) in spec.items()}
        buffers.append([{name: field[index] for name, field in fields.items()} for index in range(num_buffers_per_actor)])
    return buffers


def actor_devices(num_actors: int, actors_on_gpu: bool) -> list[torch.device]:
    """Actors spread round-robin over local GPUs when asked and available; otherwise all on the CPU."""
    num_gpus = torch.cuda.device_count() if actors_on_gpu else 0
    return [torch.device(f'cuda:{i % num_gpus}') if num_gpus else torch.device('cpu') for i in range(num_actors)]


class Rollout(NamedTuple):
    """A filled rollout buffer as the learner receives it."""

    actor_id: int
    buffer_index: int  # which of the actor's buffers holds it
    version: int  # the parameter version that produced it
    finished: list[tuple[float, int]]  # episodes finished meanwhile (raw return, length)


class ActorBuilt(NamedTuple):
    """An actor's first message: its environments and network are built (`ActorPool.start` waits for these)."""

    actor_id: int


class _FreeBuffers:
    """Which of one actor's buffers it may fill: a flag per buffer and a semaphore counting the free ones.

    The actor takes one (`take`, waiting at most `timeout`), the learner gives it back after training on it
    (`give_back`). A semaphore has no owner, so an actor that dies holding buffers blocks nobody."""

    def __init__(self, num_buffers: int, context: Any, free: Optional[list[bool]] = None):
        free = [True] * num_buffers if free is None else free
        self.flags = torch.tensor(free, dtype=torch.bool).share_memory_()
        self.count = context.Semaphore(sum(free))

    def take(self, timeout: float) -> Optional[int]:
        if not self.count.acquire(timeout=timeout):
            return None
        # Element by element: the learner may set another flag meanwhile (torch's nonzero() fails on such a change).
        index = self.flags.tolist().index(True)
        self.flags[index] = False
        return index

    def give_back(self, index: int) -> None:
        self.flags[index] = True
        self.count.release()


def _actor_main(
    actor_id: int,
    make_actor: Callable[[int, torch.device], RolloutActor],
    device: torch.device,
    parameters: SharedParameters,
    waiter: int,
    buffers: list[dict[str, torch.Tensor]],
    free: Optional[_FreeBuffers],
    connection: Any,
    stop: Any,
    parent_pid: int,
) -> None:
    """An actor process. Synchronous (`free` is None): wait for newer parameters, fill the one buffer, report,
    repeat. Asynchronous: take a free buffer, copy the newest parameters if there are any (never waiting for
    them), fill the buffer, report, repeat."""
    # Ctrl-C and a closed terminal reach the whole process group; the learner decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    set_up_torch(1)
    try:
        actor = make_actor(actor_id, device)
        connection.send(ActorBuilt(actor_id))
        version = 0
        while not stop.value and os.getppid() == parent_pid:
            if free is None:
                if not parameters.wait_newer(version, _POLL_SECONDS, waiter):
                    continue
                index = 0
            else:
                if version == 0 and not parameters.wait_newer(0, _POLL_SECONDS, waiter):
                    continue  # the learner has not published its first parameters yet
                index = free.take(_POLL_SECONDS)
                if index is None:
                    continue
            if parameters.version > version:
                version = parameters.copy_to(actor.network)
            finished = actor.collect(buffers[index])
            connection.send(Rollout(actor_id, index, version, finished))
    except Exception:  # report to the learner, which stops the run (or restarts the actor) with this message
        connection.send((actor_id, traceback.format_exc()))
        sys.exit(1)


class ActorPool:
    """Starts the actor processes, gathers their rollouts, restarts or reports crashed actors, stops them cleanly.

    Each actor sends its messages through a pipe of its own (no lock shared between processes). Synchronous
    pools give each actor one buffer, filled once per published version. Asynchronous pools (`asynchronous`)
    give each actor `len(buffers[i])` buffers: it fills free ones back to back while the learner trains on
    earlier ones, and the learner gives each back with `release` once it has used it."""

    def __init__(
        self,
        make_actor: Callable[[int, torch.device], RolloutActor],
        parameters: SharedParameters,
        buffers: list[list[dict[str, torch.Tensor]]],
        devices: list[torch.device],
        context: Any,
        *,
        asynchronous: bool = False,
        restart_actors: bool = False,
        max_restarts: int = 10,
    ):
        if not asynchronous and any(len(actor_buffers) != 1 for actor_buffers in buffers):
            raise ValueError('a synchronous actor pool takes exactly one buffer per actor')
        self.buffers = buffers
        self.asynchronous = asynchronous
        self.restart_actors = restart_actors
        self.max_restarts = max_restarts
        self.restarts = [0] * len(buffers)
        self._make_actor = make_actor
        self._devices = devices
        self._context = context
        self._parameters = parameters
        self._waiters = [parameters.add_waiter(context) for _ in buffers]
        self._stop = context.Value('b', 0, lock=False)  # a plain flag: an Event's lock could die with an actor
        self._held: list[set[int]] = [set() for _ in buffers]  # buffers the learner has received and not released
        self._ready: collections.deque[Rollout] = collections.deque()
        self._built: set[int] = set()  # actors that reported their environments and network built
        self._free: list[Optional[_FreeBuffers]] = [None] * len(buffers)
        self._connections: list[Any] = [None] * len(buffers)
        self._processes: list[Any] = [None] * len(buffers)
        for actor_id in range(len(buffers)):
            self._create(actor_id)

    def _create(self, actor_id: int) -> None:
        """Makes (or remakes, after a crash) actor `actor_id`'s pipe, free-buffer set and process, not started."""
        num_buffers = len(self.buffers[actor_id])
        if self.asynchronous:
            self._free[actor_id] = _FreeBuffers(num_buffers, self._context, [i not in self._held[actor_id] for i in range(num_buffers)])
        receiver, sender = self._context.Pipe(duplex=False)
        self._connections[actor_id] = (receiver, sender)
        self._processes[actor_id] = self._context.Process(
            target=_actor_main,
            args=(
                actor_id, self._make_actor, self._devices[actor_id], self._parameters, self._waiters[actor_id],
                self.buffers[actor_id], self._free[actor_id], sender, self._stop, os.getpid(),
            ),
            name=f'actor-{actor_id}',
            daemon=True,
        )  # fmt: skip

    def start(self) -> None:
        """Starts the actor processes and waits until each has built its environments and network, so that an actor
        that cannot be built (a bad setting, a missing ROM) ends the run with its error before the run has started:
        before the experiment writes anything. Raises ActorCrashError naming the actor and its error (restarting it
        would fail again), with every actor stopped."""
        for process in self._processes:
            process.start()
        while len(self._built) < len(self._processes):
            waiting = {}
            for actor_id in set(range(len(self._processes))) - self._built:
                waiting[self._connections[actor_id][0]] = actor_id
                waiting[self._processes[actor_id].sentinel] = actor_id
            for handle in multiprocessing.connection.wait(list(waiting), timeout=_POLL_SECONDS):
                actor_id = waiting[handle]
                error = self._drain(actor_id)
                if actor_id in self._built:
                    continue
                if error is not None or not self._processes[actor_id].is_alive():
                    self.stop()
                    if error is not None:
                        raise ActorCrashError(f'actor {actor_id} could not be built: {error.strip().splitlines()[-1]}; the run stops before it starts\n{error}')
                    process = self._processes[actor_id]
                    raise ActorCrashError(f'actor {actor_id} (pid {process.pid}) died with exit code {process.exitcode} while being built; the run stops before it starts')

    def buffer(self, rollout: Rollout) -> dict[str, torch.Tensor]:
        return self.buffers[rollout.actor_id][rollout.buffer_index]

    def release(self, rollout: Rollout) -> None:
        """Gives a rollout's buffer back to its actor (asynchronous pools; a no-op for synchronous ones)."""
        self._held[rollout.actor_id].discard(rollout.buffer_index)
        free = self._free[rollout.actor_id]
        if free is not None and self._processes[rollout.actor_id] is not None:
            free.give_back(rollout.buffer_index)

    def receive(self, stop_request: 'StopRequest') -> Optional[Rollout]:
        """The next finished rollout, or None once a stop is requested. Raises ActorCrashError when an actor
        dies or raises, unless `restart_actors`, which restarts it (at most `max_restarts` times per actor)."""
        while not stop_request:
            if self._ready:
                return self._ready.popleft()
            by_handle = {}
            for actor_id, (receiver, _) in enumerate(self._connections):
                by_handle[receiver] = actor_id
                by_handle[self._processes[actor_id].sentinel] = actor_id
            for handle in multiprocessing.connection.wait(list(by_handle), timeout=_POLL_SECONDS):
                actor_id = by_handle[handle]
                error = self._drain(actor_id)
                if error is None and self._processes[actor_id].is_alive():
                    continue
                if self._terminated_with_the_learner(actor_id, stop_request):
                    return None
                self._handle_crash(actor_id, error)
        return None

    def _terminated_with_the_learner(self, actor_id: int, stop_request: 'StopRequest') -> bool:
        """Whether a dead actor was ended by a SIGTERM sent to the whole process group (a service manager, `kill
        -TERM -<pgid>`, `timeout`): the learner's own stop request may arrive a moment after the actor died. Waits
        up to a second for it, so such a stop reads as one, not as a crashed actor."""
        process = self._processes[actor_id]
        process.join(1.0)
        if process.exitcode != -signal.SIGTERM:
            return False
        deadline = time.monotonic() + 1.0
        while not stop_request and time.monotonic() < deadline:
            time.sleep(0.05)
        return bool(stop_request)

    def _drain(self, actor_id: int) -> Optional[str]:
        """Reads every message waiting in actor `actor_id`'s pipe; returns its error report if it sent one."""
        receiver = self._connections[actor_id][0]
        while receiver.poll():
            try:
                message = receiver.recv()
            except (EOFError, OSError):
                return None
            if isinstance(message, Rollout):
                self._held[actor_id].add(message.buffer_index)
                self._ready.append(message)
            elif isinstance(message, ActorBuilt):
                self._built.add(actor_id)
            else:
                return message[1]
        return None

    def _handle_crash(self, actor_id: int, error: Optional[str]) -> None:
        process = self._processes[actor_id]
        process.join(1.0)
        if error is not None:
            cause = f'actor {actor_id} failed: {error.strip().splitlines()[-1]}'
            details = f'\n{error}'
        else:
            cause = f'actor {actor_id} (pid {process.pid}) died with exit code {process.exitcode}'
            details = ''
        if not self.restart_actors or self.restarts[actor_id] >= self.max_restarts:
            suffix = f' after {self.restarts[actor_id]} restarts' if self.restart_actors else ''
            raise ActorCrashError(f'{cause}; stopping the run{suffix}{details}')
        self.restarts[actor_id] += 1
        print(f'{cause}; restarting it (restart {self.restarts[actor_id]} of at most {self.max_restarts})', file=sys.stderr, flush=True)
        self._close_connection(actor_id)
        self._create(actor_id)
        self._processes[actor_id].start()

    def _close_connection(self, actor_id: int) -> None:
        for end in self._connections[actor_id]:
            end.close()

    def request_stop(self) -> None:
        """Asks every actor to stop, without waiting: at Ctrl-C the actors wind down while the learner writes its
        checkpoint, and `stop` then finds them gone."""
        self._stop.value = 1
        self._parameters.wake_all()

    def stop(self, timeout: float = 3.0) -> None:
        """Asks every actor to stop, waits up to `timeout` seconds in all, then terminates the rest."""
        self.request_stop()
        deadline = time.monotonic() + timeout
        for process in self._processes:
            if process.pid is not None:
                process.join(max(deadline - time.monotonic(), 0.0))
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(1.0)
            if process.is_alive():
                process.kill()
                process.join()
        for actor_id in range(len(self._connections)):
            self._close_connection(actor_id)


class StopRequest:
    """Ctrl-C, SIGTERM and SIGHUP (the terminal closed) in the learner set this flag, which the learner loop checks
    between steps (every blocking wait polls it), instead of raising KeyboardInterrupt wherever the signal lands: an
    exception raised inside library code can be swallowed there, and the run would go on. A second Ctrl-C interrupts
    at once."""

    def __init__(self) -> None:
        self.signal_name: Optional[str] = None
        for stop_signal in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(stop_signal, self._handle)

    def _handle(self, signum: int, frame: Optional[Any]) -> None:
        self.signal_name = signal.Signals(signum).name
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __bool__(self) -> bool:
        return self.signal_name is not None
