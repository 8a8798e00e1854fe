"""Micro-benchmark of deep_rl_zoo.replay: sampling time and memory of Atari-sized storage.

    python -m benchmarks.replay_speed

Prints the time to sample 32 transitions from a full 1M-slot replay of 4-float observations (n_step 1 and 3);
a table of prioritized replay against uniform sampling at the same size (median microseconds of a batch of 32:
prioritized sampling with importance weights, the priority update, and the sum tree's own search and update);
and, for 100k Atari slots (frame_stack 4, 84x84 uint8), the resident memory added and the sampling time, with
and without snappy compression. Takes a few minutes and up to ~1 GB of memory.

    python -m benchmarks.replay_speed --only=prioritized     # just the prioritized table
    python -m benchmarks.replay_speed --only=add             # add() of one stream, DQN's case (seconds)

`--only=add` times what every env step of a single-environment DQN pays: one `add()` of a CartPole-sized step
(4 float32) into a 10k-slot replay that fills and wraps around (episodes of 20-200 steps, one in ten truncated),
for n_step 1 and 3, uniform and prioritized; median microseconds of single calls, with `--repeats` runs.
"""

import argparse
import resource
import statistics
import time

import numpy as np

from deep_rl_zoo import replay as replay_lib

_NUM_STREAMS = 16
_BATCH_SIZE = 32


def _resident_mib() -> float:
    """Resident memory of this process now, from /proc (Linux)."""
    with open('/proc/self/statm') as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def _microseconds_per_sample(replay: replay_lib.UniformReplay, repeats: int) -> float:
    replay.sample(_BATCH_SIZE)
    start = time.perf_counter()
    for _ in range(repeats):
        replay.sample(_BATCH_SIZE)
    return (time.perf_counter() - start) / repeats * 1e6


def _median_microseconds(operation, repeats: int) -> float:
    """Median wall time of `operation()` over `repeats` calls, after one warm-up call."""
    operation()
    times = np.empty(repeats)
    for repeat in range(repeats):
        start = time.perf_counter()
        operation()
        times[repeat] = time.perf_counter() - start
    return float(np.median(times) * 1e6)


def _fill(replay: replay_lib.UniformReplay, observation_at, num_adds: int, random: np.random.Generator) -> float:
    """Adds `num_adds` steps to every stream, episodes ending now and then; returns microseconds per add()."""
    start = time.perf_counter()
    for step in range(num_adds):
        observation = observation_at(step)
        terminal = random.random(_NUM_STREAMS) < 0.001
        replay.add(
            observation,
            random.integers(0, 6, _NUM_STREAMS),
            random.random(_NUM_STREAMS),
            terminal,
            terminal,
        )
    return (time.perf_counter() - start) / num_adds * 1e6


def benchmark_small_observations() -> None:
    random = np.random.default_rng(0)
    for n_step in (1, 3):
        replay = replay_lib.UniformReplay(
            1_000_000, (4,), np.float32, n_step=n_step, num_streams=_NUM_STREAMS, seed=0
        )
        observations = random.standard_normal((_NUM_STREAMS, 4)).astype(np.float32)
        add_us = _fill(replay, lambda step: observations + step, 1_000_000 // _NUM_STREAMS, random)
        sample_us = _microseconds_per_sample(replay, 2000)
        print(
            f'1M slots, 4 float32, n_step={n_step}: sample({_BATCH_SIZE}) {sample_us:.0f} us, '
            f'add() of {_NUM_STREAMS} streams {add_us:.0f} us, size {replay.size}'
        )


def benchmark_prioritized(capacity: int = 1_000_000, repeats: int = 2000) -> dict[str, float]:
    """Median microseconds of batch-of-32 operations on full uniform and prioritized replays of `capacity` slots."""
    random = np.random.default_rng(0)
    observations = random.standard_normal((_NUM_STREAMS, 4)).astype(np.float32)
    arguments = dict(capacity=capacity, observation_shape=(4,), observation_dtype=np.float32, num_streams=_NUM_STREAMS, seed=0)
    uniform = replay_lib.UniformReplay(**arguments)
    prioritized = replay_lib.PrioritizedReplay(priority_exponent=0.6, priority_eps=1e-6, **arguments)
    uniform_add_us = _fill(uniform, lambda step: observations + step, capacity // _NUM_STREAMS, random)
    prioritized_add_us = _fill(prioritized, lambda step: observations + step, capacity // _NUM_STREAMS, random)
    # Spread the stored priorities as |td errors| would be, so the tree is not flat.
    streams, slots = np.nonzero(prioritized._valid)
    prioritized.update_priorities((streams, slots), random.exponential(1.0, streams.size))
    tree = prioritized._tree
    keys = prioritized.sample_prioritized(_BATCH_SIZE, 0.5).keys

    def sample_and_update() -> None:
        sample = prioritized.sample_prioritized(_BATCH_SIZE, 0.5)
        prioritized.update_priorities(sample.keys, random.random(_BATCH_SIZE))

    leaves = random.integers(0, capacity, _BATCH_SIZE)
    timings = {
        'uniform: sample(32)': _median_microseconds(lambda: uniform.sample(_BATCH_SIZE), repeats),
        'prioritized: sample_prioritized(32) (transitions and weights)': _median_microseconds(
            lambda: prioritized.sample_prioritized(_BATCH_SIZE, 0.5), repeats
        ),
        'prioritized: update_priorities(32)': _median_microseconds(
            lambda: prioritized.update_priorities(keys, random.random(_BATCH_SIZE)), repeats
        ),
        'prioritized: sample 32 + update 32 priorities': _median_microseconds(sample_and_update, repeats),
        'sum tree: find(32 targets)': _median_microseconds(lambda: tree.find(random.random(_BATCH_SIZE) * tree.total), repeats),
        'sum tree: set(32 leaves)': _median_microseconds(lambda: tree.set(leaves, random.random(_BATCH_SIZE)), repeats),
        f'uniform: add() of {_NUM_STREAMS} streams (mean while filling)': uniform_add_us,
        f'prioritized: add() of {_NUM_STREAMS} streams (mean while filling)': prioritized_add_us,
    }
    print(f'\n{capacity:,} slots of 4 float32 ({_NUM_STREAMS} streams, n_step 1), median of {repeats} repeats:\n')
    print('| operation | microseconds |\n|---|---:|')
    for name, microseconds in timings.items():
        print(f'| {name} | {microseconds:.0f} |')
    return timings


def _single_stream_steps(num_adds: int, random: np.random.Generator) -> list[tuple]:
    """The add() arguments of `num_adds` CartPole-like steps of one environment, as DQN's agent passes them."""
    steps, observation, steps_left = [], random.standard_normal((1, 4)).astype(np.float32), random.integers(20, 200)
    for _ in range(num_adds):
        steps_left -= 1
        ends = steps_left == 0
        terminal = ends and random.random() > 0.1  # one episode in ten is truncated instead
        final = observation + 1.0 if ends else observation
        steps.append((observation, random.integers(0, 2, 1), np.ones(1, np.float32), np.array([terminal]), np.array([ends]), final))
        observation = random.standard_normal((1, 4)).astype(np.float32)
        if ends:
            steps_left = random.integers(20, 200)
    return steps


def benchmark_single_stream_add(repeats: int, replay_module=replay_lib) -> dict[str, float]:
    """Median microseconds of one add() of one stream (a 10k-slot replay filled 3 times over), per configuration;
    the median over `repeats` runs of each."""
    steps = _single_stream_steps(30_000, np.random.default_rng(0))
    timings = {}
    for prioritized in (False, True):
        for n_step in (1, 3):
            arguments = dict(capacity=10_000, observation_shape=(4,), observation_dtype=np.float32, n_step=n_step, seed=0)
            medians = []
            for _ in range(repeats):
                if prioritized:
                    replay = replay_module.PrioritizedReplay(priority_exponent=0.6, priority_eps=1e-6, **arguments)
                else:
                    replay = replay_module.UniformReplay(**arguments)
                times = np.empty(len(steps))
                for index, step in enumerate(steps):
                    start = time.perf_counter()
                    replay.add(*step)
                    times[index] = time.perf_counter() - start
                medians.append(float(np.median(times) * 1e6))
            name = f'{"prioritized" if prioritized else "uniform"}, n_step {n_step}'
            timings[name] = statistics.median(medians)
            print(f'add() of 1 stream, {name}: {timings[name]:.1f} us (median of single calls; runs: '
                  + ', '.join(f'{m:.1f}' for m in medians) + ')', flush=True)
    return timings


def _atari_like_stacks(random: np.random.Generator):
    """Frames of a flat background with a few moving bright blocks, so they compress like game screens."""
    background = np.full((84, 84), 40, np.uint8)
    background[70:] = 90
    positions = random.integers(0, 76, (_NUM_STREAMS, 3, 2))
    stacks = np.repeat(background[None, None], 4, axis=1).repeat(_NUM_STREAMS, axis=0)

    def observation_at(step: int) -> np.ndarray:
        nonlocal stacks
        frames = np.repeat(background[None], _NUM_STREAMS, axis=0)
        moved = (positions + step) % 76
        for stream in range(_NUM_STREAMS):
            for row, column in moved[stream]:
                frames[stream, row : row + 8, column : column + 8] = 200
        stacks = np.concatenate([stacks[:, 1:], frames[:, None]], axis=1)
        return stacks

    return observation_at


def benchmark_atari() -> None:
    for compress in (False, True):
        random = np.random.default_rng(0)
        before = _resident_mib()
        replay = replay_lib.UniformReplay(
            100_000, (4, 84, 84), np.uint8, n_step=3, num_streams=_NUM_STREAMS, frame_stack=4, compress=compress
        )
        add_us = _fill(replay, _atari_like_stacks(random), 100_000 // _NUM_STREAMS, random)
        added = _resident_mib() - before
        sample_us = _microseconds_per_sample(replay, 300)
        print(
            f'100k Atari slots (4x84x84 uint8, compress={compress}): {added:.0f} MiB resident '
            f'({added * 2**20 / 100_000:.0f} bytes per slot), sample({_BATCH_SIZE}) {sample_us / 1000:.2f} ms, '
            f'add() of {_NUM_STREAMS} streams {add_us:.0f} us'
        )
        del replay


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='Replay sampling speed and memory.')
    parser.add_argument('--only', choices=['small', 'prioritized', 'atari', 'add'], help='run only this benchmark')
    parser.add_argument('--repeats', type=int, default=5, help='runs of each --only=add configuration')
    arguments = parser.parse_args()
    only = arguments.only
    if only == 'add':
        benchmark_single_stream_add(arguments.repeats)
    if only in (None, 'small'):
        benchmark_small_observations()
    if only in (None, 'prioritized'):
        benchmark_prioritized()
    if only in (None, 'atari'):
        benchmark_atari()
