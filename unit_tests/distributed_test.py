"""Tests for deep_rl_zoo.distributed: parameter broadcast, the actor pool, crashes and clean stops.

The actors here are tiny fakes that write known numbers (their id, pid and the parameter they were given)
into their shared rollout buffer, so every assertion is exact. Actor processes are forked (CPU devices).
"""

import gc
import os
import signal
import threading
import time

import pytest
import torch
from torch import nn

from deep_rl_zoo import distributed
from unit_tests.helpers import wait_until_asleep

CPU = torch.device('cpu')
CONTEXT = distributed.process_context([CPU])
SPEC = {
    'weight': ((3,), torch.float32),  # the actor's network weight when it collected
    'actor': ((1,), torch.int64),
    'pid': ((1,), torch.int64),
}



NO_STOP = ()  # an empty tuple is falsy: receive() as if no stop were ever requested


def scalar_network(value: float) -> nn.Module:
    network = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        network.weight.fill_(value)
    return network


def set_weight(network: nn.Module, value: float) -> None:
    with torch.no_grad():
        network.weight.fill_(value)


def running_children() -> list[int]:
    """Pids of this process's children that are running (not zombies), from /proc."""
    children = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as stat:
                    fields = stat.read().rsplit(')', 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == os.getpid() and fields[0] != 'Z':
                children.append(int(entry))
    return children


def is_running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


class FakeActor:
    """Writes its network's weight, its id and its pid into the buffer; reports one 'episode' (weight, id)."""

    def __init__(self, actor_id: int, fail_in_collect: bool = False, collect_seconds: float = 0.0):
        self.actor_id = actor_id
        self.network = scalar_network(-1.0)
        self.fail_in_collect = fail_in_collect
        self.collect_seconds = collect_seconds

    def collect(self, buffer):
        if self.fail_in_collect:
            raise ValueError(f'boom from fake actor {self.actor_id}')
        time.sleep(self.collect_seconds)
        weight = float(self.network.weight.item())
        buffer['weight'].fill_(weight)
        buffer['actor'].fill_(self.actor_id)
        buffer['pid'].fill_(os.getpid())
        return [(weight, self.actor_id)]


def make_fake_actor(actor_id, device):
    return FakeActor(actor_id)


def make_actor_failing_in_collect(actor_id, device):
    return FakeActor(actor_id, fail_in_collect=actor_id == 1)


def make_actor_failing_in_construction(actor_id, device):
    if actor_id == 1:
        raise RuntimeError('cannot build actor 1 (fake)')
    return FakeActor(actor_id)


def make_slow_actor(actor_id, device):
    return FakeActor(actor_id, collect_seconds=60.0)


class Pool:
    """An ActorPool of `num_actors` fakes around a learner network, stopped (and checked stopped) on exit."""

    def __init__(self, make_actor, num_actors: int, context=CONTEXT, num_buffers: int = 1, **pool_options):
        self.network = scalar_network(0.0)
        self.parameters = distributed.SharedParameters(self.network, context)
        self.pool = distributed.ActorPool(
            make_actor, self.parameters, distributed.make_rollout_buffers(num_actors, SPEC, num_buffers), [CPU] * num_actors, context, **pool_options
        )

    def __enter__(self):
        self.pool.start()
        return self

    def __exit__(self, *exc_info):
        self.pool.stop()

    def publish(self, weight: float) -> int:
        set_weight(self.network, weight)
        return self.parameters.publish(self.network)

    def round(self, weight: float, num_actors: int) -> dict[int, tuple[int, list]]:
        """Publishes `weight`, receives one rollout per actor; returns {actor id: (version, finished)}."""
        self.publish(weight)
        received = {}
        for _ in range(num_actors):
            actor_id, _, version, finished = self.pool.receive(NO_STOP)
            assert actor_id not in received, f'actor {actor_id} sent two rollouts for one parameter version'
            received[actor_id] = (version, finished)
        return received

    def pids(self) -> list[int]:
        return [int(buffers[0]['pid'].item()) for buffers in self.pool.buffers]


def publish_or_fail(parameters, network, seconds=3.0):
    """Publishes from a daemon thread, so that a publish that hangs fails the test instead of hanging it."""
    publisher = threading.Thread(target=parameters.publish, args=(network,), daemon=True)
    publisher.start()
    publisher.join(seconds)
    assert not publisher.is_alive(), 'publish hangs after a waiting process was killed'


# --- SharedParameters -----------------------------------------------------------------------------------------


def test_shared_parameters_publish_copy_to_and_version():
    learner = nn.Linear(3, 2)
    parameters = distributed.SharedParameters(learner, CONTEXT)
    assert parameters.version == 0
    actor = nn.Linear(3, 2)
    assert parameters.copy_to(actor) == 0  # version 0 holds the parameters the learner started with
    for mine, theirs in zip(actor.parameters(), learner.parameters()):
        assert torch.equal(mine, theirs)

    with torch.no_grad():
        learner.weight.copy_(torch.arange(6.0).reshape(2, 3))
        learner.bias.copy_(torch.tensor([7.0, 8.0]))
    assert parameters.publish(learner) == 1
    assert parameters.version == 1
    assert not torch.equal(actor.weight, learner.weight)  # nothing reaches an actor before it copies
    assert parameters.copy_to(actor) == 1
    assert torch.equal(actor.weight, torch.arange(6.0).reshape(2, 3))
    assert torch.equal(actor.bias, torch.tensor([7.0, 8.0]))
    with torch.no_grad():
        learner.bias.fill_(-1.0)
    assert parameters.publish(learner) == 2
    assert parameters.copy_to(actor) == 2
    assert torch.equal(actor.bias, torch.tensor([-1.0, -1.0]))


def test_wait_newer_returns_at_once_when_the_version_is_already_newer():
    parameters = distributed.SharedParameters(scalar_network(0.0), CONTEXT)
    waiter = parameters.add_waiter(CONTEXT)
    parameters.publish(scalar_network(1.0))
    start = time.monotonic()
    assert parameters.wait_newer(0, timeout=5.0, waiter=waiter)
    assert time.monotonic() - start < 0.5
    assert not parameters.wait_newer(1, timeout=0.05, waiter=waiter)  # version 1 is not newer than 1


def _wait_in_child(parameters, waiter, version, timeout, ready, results):
    """Child process: says it is ready, waits, then reports (woken, wall seconds, CPU seconds, the monotonic
    time it returned at (one clock for all processes), the weight it then copies). Until it reports it has one
    thread (a semaphore says ready, a queue would start a feeder thread), so its wchan is that of wait_newer."""
    ready.release()
    start_wall, start_cpu = time.monotonic(), time.process_time()
    woken = parameters.wait_newer(version, timeout, waiter)
    end = time.monotonic()
    wall, cpu = end - start_wall, time.process_time() - start_cpu
    network = scalar_network(-1.0)
    parameters.copy_to(network)
    results.put((woken, wall, cpu, end, float(network.weight.item())))


def start_waiters(parameters, version, timeout, count=1):
    """`count` child processes blocked in wait_newer (each with its own waiter id); returns them and their results."""
    ready, results = CONTEXT.Semaphore(0), CONTEXT.Queue()
    children = [
        CONTEXT.Process(target=_wait_in_child, args=(parameters, parameters.add_waiter(CONTEXT), version, timeout, ready, results))
        for _ in range(count)
    ]
    for child in children:
        child.start()
    for _ in children:
        assert ready.acquire(timeout=60)
    for child in children:
        wait_until_asleep(child.pid)  # from "ready" to asleep in wait_newer's semaphore
    return children, results


@pytest.mark.slow
def test_wait_newer_times_out_without_busy_waiting():
    parameters = distributed.SharedParameters(scalar_network(0.0), CONTEXT)
    (child,), results = start_waiters(parameters, 0, 1.0)
    woken, wall, cpu, _, _ = results.get(timeout=30)
    child.join(5)
    assert not woken
    assert wall >= 0.95  # it really waited out its timeout ...
    assert cpu < 0.1, f'a waiter blocked for {wall:.2f} s used {cpu:.3f} s of CPU: it is spinning'  # ... asleep


def test_wait_newer_wakes_promptly_on_publish_and_sees_the_new_parameters():
    learner = scalar_network(0.0)
    parameters = distributed.SharedParameters(learner, CONTEXT)
    (child,), results = start_waiters(parameters, 0, 20.0)
    set_weight(learner, 3.5)
    published_at = time.monotonic()
    assert parameters.publish(learner) == 1
    woken, _, cpu, woken_at, weight = results.get(timeout=30)
    child.join(5)
    assert woken
    assert published_at <= woken_at < published_at + 1.0, 'not woken by the publish'
    assert cpu < 0.1
    assert weight == 3.5  # the child copies what was published after it forked: shared memory


def test_publish_never_waits_for_waiters_that_died():
    """A process killed while waiting must not block the next publish (multiprocessing.Condition.notify_all
    waits for every sleeper to wake, and a dead one never does)."""
    learner = scalar_network(0.0)
    parameters = distributed.SharedParameters(learner, CONTEXT)
    children, results = start_waiters(parameters, 0, 30.0, count=2)
    os.kill(children[0].pid, signal.SIGKILL)
    children[0].join(5)
    publish_or_fail(parameters, learner)
    woken, _, _, _, _ = results.get(timeout=10)  # the live waiter was still woken
    children[1].join(5)
    assert woken
    assert not is_running(children[0].pid) and not is_running(children[1].pid)


# --- ActorPool ------------------------------------------------------------------------------------------------


def test_actor_pool_delivers_each_actor_rollout_with_the_version_it_used():
    num_actors = 3
    with Pool(make_fake_actor, num_actors) as pool:
        for version in (1, 2, 3):
            weight = 10.0 * version
            received = pool.round(weight, num_actors)
            assert received == {actor_id: (version, [(weight, actor_id)]) for actor_id in range(num_actors)}
            for actor_id, (buffer,) in enumerate(pool.pool.buffers):  # the data itself was made with those parameters
                assert torch.equal(buffer['weight'], torch.full((3,), weight))
                assert buffer['actor'].item() == actor_id
        pids = pool.pids()
        assert len(set(pids)) == num_actors and os.getpid() not in pids  # one process per actor
        assert all(is_running(pid) for pid in pids)
    assert not any(is_running(pid) for pid in pids), 'stop() left actor processes running'


@pytest.mark.slow  # spawned processes import torch afresh: seconds each
def test_actor_pool_works_with_spawned_actors():
    """GPU actors are spawned, not forked: everything they get (parameters, wake-ups, buffers, queue, stop flag)
    must survive pickling. Checked here with CPU actors started the same way."""
    with Pool(make_fake_actor, 2, torch.multiprocessing.get_context('spawn')) as pool:
        for version in (1, 2):
            assert pool.round(5.0 * version, 2) == {0: (version, [(5.0 * version, 0)]), 1: (version, [(5.0 * version, 1)])}
        pids = pool.pids()
    assert not any(is_running(pid) for pid in pids)


@pytest.mark.parametrize(
    'make_actor, cause',
    [(make_actor_failing_in_collect, 'ValueError: boom from fake actor 1')],
)
def test_an_actor_that_raises_makes_receive_raise_naming_it(make_actor, cause):
    with Pool(make_actor, 2) as pool:
        pool.publish(1.0)
        start = time.monotonic()
        with pytest.raises(distributed.ActorCrashError) as raised:
            for _ in range(2):  # actor 0's rollout may come first
                pool.pool.receive(NO_STOP)
        assert time.monotonic() - start < 5.0
    message = str(raised.value)
    assert message.startswith(f'actor 1 failed: {cause}')
    assert 'Traceback (most recent call last)' in message  # the actor's own traceback follows


def test_an_actor_killed_with_sigkill_makes_receive_raise_within_two_seconds():
    with Pool(make_fake_actor, 2) as pool:
        pool.round(1.0, 2)
        pids = pool.pids()
        for pid in pids:
            wait_until_asleep(pid)  # both actors now wait for newer parameters
        os.kill(pids[1], signal.SIGKILL)
        set_weight(pool.network, 2.0)
        publish_or_fail(pool.parameters, pool.network)  # must not hang on the dead waiter
        start = time.monotonic()
        with pytest.raises(distributed.ActorCrashError, match=rf'^actor 1 \(pid {pids[1]}\) died with exit code -9'):
            for _ in range(2):  # actor 0 still delivers its rollout for version 2
                actor_id, _, version, _ = pool.pool.receive(NO_STOP)
                assert (actor_id, version) == (0, 2)
        assert time.monotonic() - start < 2.0
    assert not any(is_running(pid) for pid in pids)


@pytest.mark.slow
def test_stop_wakes_idle_actors_and_terminates_busy_ones():
    with Pool(make_fake_actor, 2) as idle:
        idle.round(1.0, 2)
        idle_pids = idle.pids()
        start = time.monotonic()
        idle.pool.stop()
        assert time.monotonic() - start < 2.0
        assert not any(is_running(pid) for pid in idle_pids)

    helpers = set(running_children())  # e.g. multiprocessing's resource tracker, started by a spawn context
    slow = Pool(make_slow_actor, 2)
    slow.pool.start()
    slow.publish(1.0)
    busy_pids = sorted(set(running_children()) - helpers)
    assert len(busy_pids) == 2
    for pid in busy_pids:
        wait_until_asleep(pid, 'hrtimer_nanosleep')  # inside its 60 s collect: it never looks at the stop flag
    start = time.monotonic()
    slow.pool.stop(timeout=0.5)
    assert time.monotonic() - start < 3.0
    assert not any(is_running(pid) for pid in busy_pids), 'stop() left busy actors running'
    assert set(running_children()) <= helpers


# --- Lock-free parameters ----------------------------------------------------------------------------------------


class CopyCounts:
    """What a copying child has done so far, in shared memory: copies made, and versions among them that differ
    from the one copied before (each a publish that came between two copies)."""

    def __init__(self):
        self.copies = CONTEXT.Value('q', 0, lock=False)
        self.new_versions = CONTEXT.Value('q', 0, lock=False)


def _copy_repeatedly(parameters, network, counts, stop, results):
    """Child process: copies the parameters into `network` (shaped as the learner's) until `stop` is set, counting
    in `counts`; reports every copy whose numbers are not all equal."""
    torn, last_version = [], None
    while not stop.is_set():
        version = parameters.copy_to(network)
        values = torch.cat([parameter.flatten() for parameter in network.parameters()])
        if not torch.all(values == values[0]):
            torn.append((version, float(values.min()), float(values.max())))
        counts.new_versions.value += version != last_version and last_version is not None
        counts.copies.value += 1
        last_version = version
    results.put(torn)


@pytest.mark.slow
def test_copies_made_while_the_learner_publishes_are_never_torn():
    """Every publish writes one number everywhere; a copy that mixed two versions would hold two numbers. The
    learner publishes until the reader has made 3,000 copies and seen over 100 versions arrive between its copies,
    however the two processes share the CPU."""
    learner = nn.Linear(1000, 100)
    parameters = distributed.SharedParameters(learner, CONTEXT)
    with torch.no_grad():
        for parameter in learner.parameters():
            parameter.fill_(0.0)
    parameters.publish(learner)
    counts, stop, results = CopyCounts(), CONTEXT.Event(), CONTEXT.Queue()
    child = CONTEXT.Process(target=_copy_repeatedly, args=(parameters, nn.Linear(1000, 100), counts, stop, results))
    child.start()
    deadline = time.monotonic() + 120  # a guard against a hang, not a measure of speed
    version = 1
    while counts.copies.value < 3000 or counts.new_versions.value <= 100:
        assert child.is_alive() and time.monotonic() < deadline, f'{counts.copies.value} copies, {counts.new_versions.value} new versions'
        with torch.no_grad():
            for parameter in learner.parameters():
                parameter.fill_(float(version))
        version = parameters.publish(learner)
    stop.set()
    torn = results.get(timeout=60)
    child.join(10)
    assert torn == []


def test_publish_and_copy_need_no_lock_that_a_killed_reader_could_hold():
    learner = scalar_network(1.0)
    parameters = distributed.SharedParameters(learner, CONTEXT)
    counts = CopyCounts()
    child = CONTEXT.Process(target=_copy_repeatedly, args=(parameters, scalar_network(0.0), counts, CONTEXT.Event(), CONTEXT.Queue()))
    child.start()
    deadline = time.monotonic() + 60
    while counts.copies.value < 100:  # copying in a loop
        assert child.is_alive() and time.monotonic() < deadline, 'the reader never copied'
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.join(5)
    publish_or_fail(parameters, learner)
    network = scalar_network(0.0)
    assert parameters.copy_to(network) == 1 and network.weight.item() == 1.0


# --- Asynchronous pools ------------------------------------------------------------------------------------------


def receive_within(pool, seconds):
    """Rollouts the pool delivers within `seconds` (waiting in slices, so no call blocks past the end)."""
    received = []
    deadline = time.monotonic() + seconds
    stop_at_deadline = type('Deadline', (), {'__bool__': lambda self: time.monotonic() >= deadline})()
    while time.monotonic() < deadline:
        rollout = pool.receive(stop_at_deadline)
        if rollout is not None:
            received.append(rollout)
    return received


def receive_exactly(pool, count, seconds=120.0):
    """The next `count` rollouts, however long they take (up to `seconds`, a guard against a hang); then 0.5 s in
    which no other may arrive (a wait that shows an absence, not one that waits for work)."""
    received = []
    deadline = time.monotonic() + seconds
    stop_at_deadline = type('Deadline', (), {'__bool__': lambda self: time.monotonic() >= deadline})()
    while len(received) < count:
        rollout = pool.receive(stop_at_deadline)
        assert rollout is not None, f'{len(received)} of {count} rollouts after {seconds} s: {received}'
        received.append(rollout)
    extra = receive_within(pool, 0.5)
    assert extra == [], f'{len(extra)} more rollouts than the {count} expected: {extra}'
    return received


@pytest.mark.slow
def test_asynchronous_actors_fill_every_free_buffer_without_waiting_for_parameters():
    num_actors, num_buffers = 2, 3
    with Pool(make_fake_actor, num_actors, num_buffers=num_buffers, asynchronous=True) as pool:
        pool.publish(1.0)
        first = receive_exactly(pool.pool, num_actors * num_buffers)
        # Each actor filled all its buffers with version 1 and then waits for a free one, not for parameters.
        assert sorted((r.actor_id, r.buffer_index, r.version) for r in first) == [(a, b, 1) for a in range(num_actors) for b in range(num_buffers)]
        assert all(r.finished == [(1.0, r.actor_id)] for r in first)
        pool.publish(2.0)  # a newer version is picked up by the next rollout, not waited for
        pool.pool.release(first[0])
        (second,) = receive_exactly(pool.pool, 1)
        assert (second.actor_id, second.buffer_index, second.version) == (first[0].actor_id, first[0].buffer_index, 2)
        assert torch.equal(pool.pool.buffer(second)['weight'], torch.full((3,), 2.0))
        for rollout in first[1:]:  # buffers given back are filled again, with the parameters of the moment
            pool.pool.release(rollout)
        again = receive_exactly(pool.pool, len(first) - 1)
        assert sorted((r.actor_id, r.buffer_index, r.version) for r in again) == sorted((r.actor_id, r.buffer_index, 2) for r in first[1:])


def test_a_synchronous_pool_refuses_several_buffers_per_actor():
    with pytest.raises(ValueError, match='exactly one buffer per actor'):
        Pool(make_fake_actor, 1, num_buffers=2)


def make_actor_failing_on_third_rollout(actor_id, device):
    actor = FakeActor(actor_id)
    collect, calls = actor.collect, [0]

    def failing_collect(buffer):
        calls[0] += 1
        if actor_id == 1 and calls[0] == 3:
            raise RuntimeError('third rollout fails (fake)')
        return collect(buffer)

    actor.collect = failing_collect
    return actor


@pytest.mark.slow
@pytest.mark.parametrize('asynchronous', [False, True])
def test_restart_actors_replaces_a_killed_actor_and_the_pool_goes_on(asynchronous, capfd):
    num_buffers = 2 if asynchronous else 1
    with Pool(make_fake_actor, 2, num_buffers=num_buffers, asynchronous=asynchronous, restart_actors=True) as pool:
        pool.publish(1.0)
        first = receive_exactly(pool.pool, 2 * num_buffers)
        old_pid = int(pool.pool.buffer(next(r for r in first if r.actor_id == 1))['pid'].item())
        os.kill(old_pid, signal.SIGKILL)
        while is_running(old_pid):  # dead before the release and the publish: it makes nothing more
            time.sleep(0.01)
        for rollout in first:
            pool.pool.release(rollout)
        pool.publish(2.0)
        second = receive_exactly(pool.pool, 2 * num_buffers)  # every buffer filled again: actor 0's and the restarted one's
        from_restarted = [r for r in second if r.actor_id == 1]
        assert from_restarted, 'the restarted actor delivered nothing'
        new_pid = int(pool.pool.buffer(from_restarted[-1])['pid'].item())
        assert new_pid != old_pid and is_running(new_pid) and not is_running(old_pid)
        assert pool.pool.restarts == [0, 1]
        assert all(r.version == 2 for r in from_restarted)
        pids = [new_pid, int(pool.pool.buffer(next(r for r in second if r.actor_id == 0))['pid'].item())]
    assert not any(is_running(pid) for pid in pids)
    assert f'actor 1 (pid {old_pid}) died with exit code -9; restarting it (restart 1 of at most 10)' in capfd.readouterr().err


@pytest.mark.parametrize('restart_actors', [False, True])
def test_an_actor_that_cannot_be_built_stops_the_pool_at_start_naming_it(restart_actors):
    """`start` waits until every actor has built its environments and network: one that cannot be built ends the run
    there, before the experiment has written anything (restarting it would only fail again), with every actor gone."""
    pool = Pool(make_actor_failing_in_construction, 2, restart_actors=restart_actors)
    start = time.monotonic()
    with pytest.raises(distributed.ActorCrashError) as raised:
        pool.pool.start()
    assert time.monotonic() - start < 10.0
    message = str(raised.value)
    assert message.startswith('actor 1 could not be built: RuntimeError: cannot build actor 1 (fake); the run stops before it starts\nTraceback')
    assert not any(process.is_alive() for process in pool.pool._processes)  # pylint: disable=protected-access


def test_start_returns_once_every_actor_is_built():
    with Pool(make_fake_actor, 3) as pool:
        assert pool.pool._built == {0, 1, 2}  # pylint: disable=protected-access
        assert pool.round(1.0, 3).keys() == {0, 1, 2}


@pytest.mark.slow
def test_restart_actors_gives_up_after_max_restarts_naming_the_cause():
    with Pool(make_actor_failing_in_collect, 2, num_buffers=2, asynchronous=True, restart_actors=True, max_restarts=2) as pool:
        pool.publish(1.0)
        with pytest.raises(distributed.ActorCrashError, match=r'^actor 1 failed: ValueError: boom from fake actor 1; stopping the run after 2 restarts'):
            receive_within(pool.pool, 30.0)
        assert pool.pool.restarts == [0, 2]


@pytest.mark.slow
def test_a_restarted_asynchronous_actor_never_refills_buffers_the_learner_still_holds():
    with Pool(make_actor_failing_on_third_rollout, 2, num_buffers=2, asynchronous=True, restart_actors=True) as pool:
        pool.publish(1.0)
        held = [r for r in receive_exactly(pool.pool, 4) if r.actor_id == 1]
        assert len(held) == 2  # actor 1 filled both buffers; its third rollout (after a release) will fail
        pool.pool.release(held[0])
        after = [r for r in receive_exactly(pool.pool, 1) if r.actor_id == 1]  # actor 0's buffers are all held
        assert pool.pool.restarts == [0, 1]
        # The restarted actor filled the buffer that was given back, never the one the learner still holds.
        assert [r.buffer_index for r in after] == [held[0].buffer_index]


# --- Rollout buffers ---------------------------------------------------------------------------------------------


def open_file_descriptors() -> int:
    return len(os.listdir('/proc/self/fd'))


@pytest.mark.slow
def test_rollout_buffers_keep_one_shared_tensor_per_field_per_actor_open():
    """Every shared tensor keeps a file descriptor open: one per buffer per field were 1,280 for Sample Factory's Atari
    model card (16 actors x 8 buffers x 10 fields), past the usual `ulimit -n` of 1,024; one per field per actor are
    160, each buffer a view of its own slice."""
    spec = {f'field_{i}': ((3, 2), torch.float32) for i in range(10)}
    gc.collect()  # shared tensors of earlier tests, freed meanwhile, would close their descriptors
    gc.disable()
    try:
        before = open_file_descriptors()
        buffers = distributed.make_rollout_buffers(16, spec, 8)
        assert open_file_descriptors() - before == 16 * 10
    finally:
        gc.enable()
    for actor_buffers in buffers:
        for index, buffer in enumerate(actor_buffers):
            for tensor in buffer.values():
                assert tensor.shape == (3, 2) and tensor.is_shared()
                tensor.fill_(index)
    assert all(torch.equal(tensor, torch.full((3, 2), float(index))) for actor_buffers in buffers for index, buffer in enumerate(actor_buffers) for tensor in buffer.values())


def test_rollout_buffer_bytes_and_the_refusal_of_buffers_larger_than_the_free_shared_memory():
    spec = {'observation': ((33, 8, 4), torch.float32), 'action': ((32, 8), torch.int64), 'done': ((32, 8), torch.bool)}
    one_buffer = 33 * 8 * 4 * 4 + 32 * 8 * 8 + 32 * 8 * 1  # 4,224 + 2,048 + 256 bytes
    assert distributed.rollout_buffer_bytes(3, spec, num_buffers_per_actor=2) == 3 * 2 * one_buffer == 39_168
    distributed.check_rollout_memory(39_168, 'sizes', free_bytes=39_168)  # fits exactly
    with pytest.raises(ValueError, match=r'^the rollout buffers would need 1.5 GiB of shared memory \(--unroll_length=9\) but 1.0 GiB is free: lower one of them$'):
        distributed.check_rollout_memory(3 * 2**29, '--unroll_length=9', free_bytes=2**30)
    assert 0 < distributed.free_shared_memory_bytes() < 2**50


def test_set_up_torch_flushes_denormals_on_every_thread_it_starts():
    """In fresh processes: the smallest denormal float times 2 (an elementwise op of 4M numbers, split across 2
    threads) is 0 everywhere after set_up_torch(2), and 2.8e-45 everywhere without it."""
    import subprocess
    import sys

    def nonzero_products(set_up: bool) -> list[str]:
        program = (
            'import torch\n'
            'from deep_rl_zoo import distributed\n'
            + ('distributed.set_up_torch(2)\n' if set_up else 'torch.set_num_threads(2)\n')
            + 'tiny = torch.ones(1 << 22, dtype=torch.int32).view(torch.float32)\n'  # every bit pattern 1: 1.4e-45
            'print(int((tiny * 2).count_nonzero()), torch.get_num_threads())\n'
        )
        return subprocess.run([sys.executable, '-c', program], capture_output=True, text=True, check=True).stdout.split()

    assert nonzero_products(set_up=False) == [str(1 << 22), '2']
    assert nonzero_products(set_up=True) == ['0', '2']
