"""Actor processes and a learner on one machine: start, stop, rollouts in shared memory, parameter broadcast.

Data moves without copying whole models or busy waiting:
- each actor owns a rollout buffer of shared-memory tensors; it fills the buffer in place and sends only a
  small message (actor id, parameter version, finished episodes) through a queue;
- the learner publishes its parameters into one flat shared-memory tensor with a version number and wakes
  each actor through its own semaphore; an actor copies them only when the version is newer than its own.
  (Not a multiprocessing.Condition: its notify_all waits for every sleeper to wake, so an actor killed while
  waiting would hang the learner forever; a semaphore release never blocks.)

Actors and learners know nothing of this transport: an actor only has `network` and `collect(buffer)`, a
learner only `network` and `update(buffers)`. Another backend (Ray, for several machines) can replace this
module without touching an agent.

Shutdown: actors ignore Ctrl-C and watch a stop flag and their parent's pid; the learner, on Ctrl-C,
SIGTERM, an error or a crashed actor, sets the flag, wakes them, joins them for a few seconds, then terminates
any left. No process blocks without a timeout on a lock another process may hold, so a process killed at
any moment cannot hang the others. Checkpoints are written atomically by the learner, so the last one
always loads.
"""

import os
import time
import queue
import signal
import sys
import traceback
from typing import Any, Callable, Optional, Protocol

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

_POLL_SECONDS = 0.5  # how often a blocked process re-checks stop / liveness; blocking waits, not spinning
_LOCK_TIMEOUT_SECONDS = 10.0  # the parameter lock is held only for one copy; longer means its holder died


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
    """A network's parameters as one flat shared-memory tensor, a version number, and one wake-up semaphore per
    waiting process (register each with `add_waiter` before starting the processes)."""

    def __init__(self, network: nn.Module, context: Any):
        self._flat = parameters_to_vector(network.parameters()).detach().cpu().clone().share_memory_()
        self._version = context.Value('q', 0, lock=False)
        self._lock = context.Lock()  # guards _flat and _version together
        self._wakeups: list[Any] = []

    def add_waiter(self, context: Any) -> int:
        """Registers a process that will `wait_newer`; returns its waiter id. Call before starting it."""
        self._wakeups.append(context.Semaphore(0))
        return len(self._wakeups) - 1

    @property
    def version(self) -> int:
        return self._version.value

    def publish(self, network: nn.Module) -> int:
        """Copies `network`'s parameters in, bumps the version and wakes every waiter; never waits for them."""
        self._acquire('publish')
        try:
            self._flat.copy_(parameters_to_vector(network.parameters()).detach())
            self._version.value += 1
            version = self._version.value
        finally:
            self._lock.release()
        self.wake_all()
        return version

    def wake_all(self) -> None:
        """Wakes every waiter (to re-check the version, or a stop flag)."""
        for wakeup in self._wakeups:
            wakeup.release()

    def wait_newer(self, version: int, timeout: float, waiter: int = 0) -> bool:
        """Blocks `waiter` until the version exceeds `version` (True), or until `timeout` seconds pass or
        `wake_all` is called (False: the caller re-checks its stop conditions and waits again)."""
        if self._version.value > version:
            return True
        self._wakeups[waiter].acquire(timeout=timeout)
        return self._version.value > version

    def copy_to(self, network: nn.Module) -> int:
        """Loads the latest parameters into `network`; returns their version."""
        self._acquire('copy')
        try:
            # copy=True: vector_to_parameters makes the parameters views of the vector it is given, which must
            # be a private copy, not the shared tensor that later publishes overwrite.
            vector_to_parameters(self._flat.to(next(network.parameters()).device, copy=True), network.parameters())
            return self._version.value
        finally:
            self._lock.release()

    def _acquire(self, what: str) -> None:
        if not self._lock.acquire(timeout=_LOCK_TIMEOUT_SECONDS):
            raise ActorCrashError(
                f'cannot {what} parameters: their lock was held for {_LOCK_TIMEOUT_SECONDS:.0f} s by a process that died while copying them'
            )


def make_rollout_buffers(num_actors: int, spec: dict[str, tuple[tuple[int, ...], torch.dtype]]) -> list[dict[str, torch.Tensor]]:
    """One dict of shared-memory tensors per actor, shaped by `spec` ({name: (shape, dtype)})."""
    return [{name: torch.empty(shape, dtype=dtype).share_memory_() for name, (shape, dtype) in spec.items()} for _ in range(num_actors)]


def actor_devices(num_actors: int, actors_on_gpu: bool) -> list[torch.device]:
    """Actors spread round-robin over local GPUs when asked and available; otherwise all on the CPU."""
    num_gpus = torch.cuda.device_count() if actors_on_gpu else 0
    return [torch.device(f'cuda:{i % num_gpus}') if num_gpus else torch.device('cpu') for i in range(num_actors)]


def _actor_main(
    actor_id: int,
    make_actor: Callable[[int, torch.device], RolloutActor],
    device: torch.device,
    parameters: SharedParameters,
    waiter: int,
    buffer: dict[str, torch.Tensor],
    messages: Any,
    stop: Any,
    parent_pid: int,
) -> None:
    """An actor process: wait for newer parameters, collect a rollout into the shared buffer, report, repeat."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the learner decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    torch.set_num_threads(1)
    try:
        actor = make_actor(actor_id, device)
        version = 0
        while not stop.value and os.getppid() == parent_pid:
            if not parameters.wait_newer(version, _POLL_SECONDS, waiter):
                continue
            version = parameters.copy_to(actor.network)
            finished = actor.collect(buffer)
            messages.put((actor_id, version, finished, None))
    except Exception:  # report to the learner, which stops the run with this message
        messages.put((actor_id, -1, [], traceback.format_exc()))
        sys.exit(1)


class ActorPool:
    """Starts the actor processes, gathers their rollouts, and stops them cleanly."""

    def __init__(
        self,
        make_actor: Callable[[int, torch.device], RolloutActor],
        parameters: SharedParameters,
        buffers: list[dict[str, torch.Tensor]],
        devices: list[torch.device],
        context: Any,
    ):
        self.buffers = buffers
        self._parameters = parameters
        self._messages = context.Queue()
        self._stop = context.Value('b', 0, lock=False)  # a plain flag: an Event's lock could die with an actor
        self._processes = [
            context.Process(
                target=_actor_main,
                args=(i, make_actor, devices[i], parameters, parameters.add_waiter(context), buffers[i], self._messages, self._stop, os.getpid()),
                name=f'actor-{i}',
                daemon=True,
            )
            for i in range(len(buffers))
        ]

    def start(self) -> None:
        for process in self._processes:
            process.start()

    def receive(self, stop_request: 'StopRequest') -> Optional[tuple[int, int, list[tuple[float, int]]]]:
        """The next finished rollout: (actor id, parameter version, finished episodes), or None once a stop is
        requested. Raises ActorCrashError."""
        while not stop_request:
            try:
                actor_id, version, finished, error = self._messages.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                self._check_alive()
                continue
            if error is not None:
                raise ActorCrashError(f'actor {actor_id} failed: {error.strip().splitlines()[-1]}\n{error}')
            return actor_id, version, finished
        return None

    def _check_alive(self) -> None:
        for i, process in enumerate(self._processes):
            if not process.is_alive():
                raise ActorCrashError(f'actor {i} (pid {process.pid}) died with exit code {process.exitcode}; stopping the run')

    def stop(self, timeout: float = 3.0) -> None:
        """Asks every actor to stop, waits up to `timeout` seconds in all, then terminates the rest."""
        self._stop.value = 1
        self._parameters.wake_all()
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
        self._messages.cancel_join_thread()
        self._messages.close()


class StopRequest:
    """Ctrl-C and SIGTERM in the learner set this flag, which the learner loop checks between steps (every
    blocking wait polls it), instead of raising KeyboardInterrupt wherever the signal lands: an exception raised
    inside library code can be swallowed there, and the run would go on. A second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.signal_name: Optional[str] = None
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGTERM, self._handle)

    def _handle(self, signum: int, frame: Optional[Any]) -> None:
        self.signal_name = signal.Signals(signum).name
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def __bool__(self) -> bool:
        return self.signal_name is not None
