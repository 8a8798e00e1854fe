"""Micro-benchmark of deep_rl_zoo.replay: sampling time and memory of Atari-sized storage.

    python -m benchmarks.replay_speed

Prints the time to sample 32 transitions from a full 1M-slot replay of 4-float observations (n_step 1 and 3),
and, for 100k Atari slots (frame_stack 4, 84x84 uint8), the resident memory added and the sampling time, with
and without snappy compression. Takes about a minute and up to ~1 GB of memory.
"""

import resource
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
    benchmark_small_observations()
    benchmark_atari()
