"""Episode and learner statistics, written to TensorBoard, a CSV file and the console.

TensorBoard tags follow the original Deep RL Zoo:
  performance(env_steps)/episode_return   mean raw (unclipped) return of the episodes finished
  performance(env_steps)/episode_steps    their mean length in env steps
  performance(env_steps)/num_episodes     how many episodes finished
  performance(env_steps)/step_rate        env steps per second
  agent_statistics(env_steps)/<name>      anything an actor reports
  learner_statistics(learner_steps)/<name> anything the learner reports (losses, gradient norms, ...)

An episode is a whole game: the caller marks its end with the environment's terminated or truncated
signal, never at a lost life, so Atari returns are full game scores.
"""

from __future__ import annotations

import collections
import csv
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
import torch

PERFORMANCE_PREFIX = "performance(env_steps)"
AGENT_STATISTICS_PREFIX = "agent_statistics(env_steps)"
LEARNER_STATISTICS_PREFIX = "learner_statistics(learner_steps)"

# How many finished episodes a RunLogger remembers for `recent_returns`.
RECENT_EPISODES_KEPT = 1000
# A terminal line is redrawn at most this often, however often `ConsoleProgress.update` is called.
_TTY_REFRESH_SECONDS = 0.5


class EpisodeTracker:
    """Counts whole-episode raw returns and lengths over a vector of N envs (pure numpy, no I/O)."""

    def __init__(self, num_envs: int):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.num_envs = num_envs
        self._returns = np.zeros(num_envs, dtype=np.float64)
        self._lengths = np.zeros(num_envs, dtype=np.int64)

    def step(self, raw_reward: np.ndarray, episode_end: np.ndarray) -> list[tuple[float, int]]:
        """Adds one env step of every env; returns (return, length) of the episodes that ended at it.

        Args:
          raw_reward: shape [num_envs], the unclipped rewards of this step.
          episode_end: shape [num_envs], True where the game ended (terminated or truncated) at this step.

        Returns:
          One (raw return, length in steps) per env whose episode ended, in env order.
        """
        raw_reward = np.asarray(raw_reward, dtype=np.float64)
        episode_end = np.asarray(episode_end, dtype=bool)
        expected_shape = (self.num_envs,)
        if raw_reward.shape != expected_shape:
            raise ValueError(f"raw_reward must have shape {expected_shape}, got {raw_reward.shape}")
        if episode_end.shape != expected_shape:
            raise ValueError(f"episode_end must have shape {expected_shape}, got {episode_end.shape}")
        self._returns += raw_reward
        self._lengths += 1
        ended = np.flatnonzero(episode_end)
        finished = [(float(self._returns[i]), int(self._lengths[i])) for i in ended]
        self._returns[ended] = 0.0
        self._lengths[ended] = 0
        return finished

    def abandon_running(self) -> None:
        """Forgets every unfinished episode: the environments were reset mid-game and those games will never end."""
        self._returns[:] = 0.0
        self._lengths[:] = 0

    def current(self, env_index: int) -> tuple[float, int]:
        """(raw return, length) so far of the unfinished episode of env `env_index`."""
        return float(self._returns[env_index]), int(self._lengths[env_index])


def _newest_frame_as_image(image: np.ndarray) -> tuple[np.ndarray, str]:
    """Returns an HWC RGB or HW grayscale view of `image` and its TensorBoard dataformats.

    The channel axis is the smallest one (first for CHW, last for HWC). Three channels are RGB; one is
    grayscale; any other count is a stack of grayscale frames (e.g. 4x84x84) and the newest, last, is shown.
    """
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError(
            "image must be a uint8 numpy array of shape HW, HWC or CHW, got "
            f"{type(image).__name__} {getattr(image, 'dtype', '')} {getattr(image, 'shape', '')}"
        )
    if image.ndim == 2:
        return image, "HW"
    if image.shape[0] < min(image.shape[1], image.shape[2]):
        image = np.moveaxis(image, 0, -1)
    channels = image.shape[-1]
    if channels == 3:
        return image, "HWC"
    return image[..., -1], "HW"


class RunLogger:
    """One log stream (train / eval / actor_<i> / learner) of one run.

    With use_tensorboard=True the stream writes TensorBoard event files under runs_dir/run_name/stream, beside
    those of earlier sessions of the same run (TensorBoard reads them as one); with use_tensorboard=False
    (--nouse_tensorboard) it writes no files at all but still keeps its in-memory statistics.
    """

    def __init__(
        self,
        run_name: str,
        stream: str,
        use_tensorboard: bool,
        runs_dir: str = "runs",
        frames_per_step: int = 1,
        *,
        start_env_steps: int = 0,
        purge_step: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        """Creates the stream.

        Args:
          run_name: the run's folder under runs_dir (the experiment's name).
          stream: 'train', 'eval', 'actor_<i>', 'learner', ...
          use_tensorboard: write TensorBoard event files.
          runs_dir: the directory holding all runs.
          frames_per_step: emulator frames per env step (the Atari frame skip) for `frame_rate`.
          start_env_steps: env steps already taken when logging starts (non-zero when resuming).
          purge_step: a resumed session's first step: TensorBoard hides the events earlier sessions wrote to this
            stream at or after it (work lost and trained again), so the curve continues without a fold.
          clock: seconds, for `step_rate`.
        """
        if not run_name:
            raise ValueError("run_name must be a non-empty string")
        if not stream:
            raise ValueError("stream must be a non-empty string such as 'train' or 'eval'")
        if isinstance(frames_per_step, bool) or not isinstance(frames_per_step, int) or frames_per_step < 1:
            raise ValueError(f"frames_per_step must be an integer >= 1, got {frames_per_step!r}")
        self.log_dir = os.path.join(runs_dir, run_name, stream)
        self.frames_per_step = frames_per_step
        self._clock = clock
        self._writer = None
        if use_tensorboard:  # imported here: TensorBoard's import is a tenth of a run's start-up, and eval_agent needs none
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=self.log_dir, purge_step=purge_step)
        self._pending_episodes: list[tuple[float, int]] = []
        self._recent_returns: collections.deque[float] = collections.deque(maxlen=RECENT_EPISODES_KEPT)
        self._latest_env_steps = start_env_steps
        self._rate_env_steps = start_env_steps
        self._rate_time = clock()

    def _check_env_steps(self, env_steps: int) -> None:
        """Refuses an env step count that goes backwards, a sign two counters were mixed up."""
        if env_steps < self._latest_env_steps:
            raise ValueError(
                f"env_steps must not decrease: got {env_steps} after {self._latest_env_steps} "
                f"in stream {self.log_dir}"
            )
        self._latest_env_steps = env_steps

    def log_episodes(self, env_steps: int, finished: list[tuple[float, int]]) -> None:
        """Accumulates episodes (raw return, length) that finished by `env_steps`, for `write_performance`."""
        self._check_env_steps(env_steps)
        for episode_return, episode_steps in finished:
            self._pending_episodes.append((float(episode_return), int(episode_steps)))
            self._recent_returns.append(float(episode_return))

    def write_performance(
        self, env_steps: int, *, steps_taken: int | None = None, seconds_taken: float | None = None
    ) -> dict[str, float]:
        """Writes performance(env_steps)/* for the episodes accumulated since the last call, then resets.

        Args:
          env_steps: the x-axis value.
          steps_taken, seconds_taken: given together, the env steps this stream took and the seconds they
            took, for a stream whose x-axis is not its own step count: an eval stream logs against training
            env steps but its step_rate is its own steps over its own time. When both are None, step_rate
            is the change in env_steps over the time since the last call (or since construction).

        Returns:
          {'episode_return', 'episode_steps', 'num_episodes', 'step_rate', 'frame_rate'}: mean raw return
          and mean length (nan when no episode finished, and then not written), episode count, env steps
          per second and emulator frames per second (frame_rate is not written to TensorBoard).
        """
        if (steps_taken is None) != (seconds_taken is None):
            raise ValueError("steps_taken and seconds_taken must be given together or not at all")
        self._check_env_steps(env_steps)
        now = self._clock()
        if steps_taken is None:
            steps, elapsed = env_steps - self._rate_env_steps, now - self._rate_time
        else:
            steps, elapsed = steps_taken, seconds_taken
        step_rate = steps / elapsed if elapsed > 0 else math.nan
        num_episodes = len(self._pending_episodes)
        if num_episodes:
            returns, lengths = zip(*self._pending_episodes)
            mean_return, mean_steps = float(np.mean(returns)), float(np.mean(lengths))
        else:
            mean_return = mean_steps = math.nan
        performance = {
            "episode_return": mean_return,
            "episode_steps": mean_steps,
            "num_episodes": num_episodes,
            "step_rate": step_rate,
            "frame_rate": step_rate * self.frames_per_step,
        }
        if self._writer is not None:
            for name in ("episode_return", "episode_steps", "num_episodes", "step_rate"):
                if not math.isnan(performance[name]):
                    self._writer.add_scalar(f"{PERFORMANCE_PREFIX}/{name}", performance[name], env_steps)
            self._writer.flush()
        self._pending_episodes = []
        self._rate_env_steps, self._rate_time = env_steps, now
        return performance

    def _write_statistics(self, prefix: str, step: int, stats: dict[str, float]) -> None:
        values = {}
        for name, value in stats.items():
            try:
                values[name] = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"stats[{name!r}] must be a number, got {type(value).__name__}") from None
        if self._writer is not None:
            for name, value in values.items():
                self._writer.add_scalar(f"{prefix}/{name}", value, step)

    def write_agent_statistics(self, env_steps: int, stats: dict[str, float]) -> None:
        """Writes agent_statistics(env_steps)/<name> for each named number."""
        self._write_statistics(AGENT_STATISTICS_PREFIX, env_steps, stats)

    def write_learner_statistics(self, learner_steps: int, stats: dict[str, float]) -> None:
        """Writes learner_statistics(learner_steps)/<name> for each named number."""
        self._write_statistics(LEARNER_STATISTICS_PREFIX, learner_steps, stats)

    def write_screenshot(self, env_steps: int, image: np.ndarray, name: str = "screenshot") -> None:
        """Writes an HW, HWC or CHW uint8 image; of a frame stack (e.g. 4x84x84) the newest frame."""
        picture, dataformats = _newest_frame_as_image(image)
        if self._writer is not None:
            self._writer.add_image(name, picture, env_steps, dataformats=dataformats)

    def recent_returns(self, n: int = 20) -> float:
        """Mean raw return of the last n finished episodes (fewer if fewer finished; nan if none)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= RECENT_EPISODES_KEPT:
            raise ValueError(f"n must be an integer in [1, {RECENT_EPISODES_KEPT}], got {n!r}")
        if not self._recent_returns:
            return math.nan
        return float(np.mean(list(self._recent_returns)[-n:]))

    def close(self) -> None:
        """Flushes and closes the event file, if any."""
        if self._writer is not None:
            self._writer.close()


class CsvResults:
    """Append one row per iteration to a CSV; writes the header once; refuses (ValueError) to append rows
    whose columns differ from an existing file's header. Creates parent dirs; flushes each row."""

    def __init__(self, path: str):
        if not path:
            raise ValueError("path must be the CSV file to write (--results_csv_path), got an empty string")
        self.path = os.fspath(path)
        self._file: TextIO | None = None
        self._writer: csv.DictWriter | None = None

    def _open(self, columns: list[str]) -> None:
        """Opens the file for appending; takes the header from an existing file or writes `columns`."""
        header = None
        if os.path.exists(self.path):
            with open(self.path, newline="", encoding="utf-8") as existing:
                header = next(csv.reader(existing), None)
        else:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._file = open(self.path, "a", newline="", encoding="utf-8")  # pylint: disable=consider-using-with
        self._writer = csv.DictWriter(self._file, fieldnames=header or columns, lineterminator="\n")
        if header is None:
            self._writer.writeheader()

    def append(self, row: dict[str, Any]) -> None:
        """Appends one row; its column names must match the file's header (in any order)."""
        if not row:
            raise ValueError("row must be a non-empty dict of column name to value")
        if self._writer is None:
            self._open(list(row))
        header = list(self._writer.fieldnames)
        if set(row) != set(header):
            raise ValueError(
                f"row columns {sorted(row)} differ from the columns {header} of {self.path}: "
                "write the same columns or pass a new --results_csv_path"
            )
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file, self._writer = None, None


def _format_duration(seconds: float) -> str:
    """Formats seconds as H:MM:SS."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


class ConsoleProgress:
    """A live one-line progress report: env steps / total, steps/s (and frames/s with a frame skip), recent return,
    time left (ETA). Counts are the run's own, a resumed run's included: `update` gets the env steps done so far.

    Prints with '\\r' when stdout is a tty, otherwise a plain line at most every `interval_seconds`.
    Rates are averaged from the first `update` call, so the ETA is steady and right after a resume.
    """

    def __init__(
        self,
        total_env_steps: int,
        frames_per_step: int = 1,
        interval_seconds: float = 10.0,
        stream: TextIO = sys.stdout,
        clock: Callable[[], float] = time.monotonic,
        label: str = "env steps",
    ):
        if isinstance(total_env_steps, bool) or not isinstance(total_env_steps, int) or total_env_steps < 1:
            raise ValueError(f"total_env_steps must be an integer >= 1, got {total_env_steps!r}")
        if isinstance(frames_per_step, bool) or not isinstance(frames_per_step, int) or frames_per_step < 1:
            raise ValueError(f"frames_per_step must be an integer >= 1, got {frames_per_step!r}")
        if not interval_seconds > 0:
            raise ValueError(f"interval_seconds must be > 0, got {interval_seconds!r}")
        self.total_env_steps = total_env_steps
        self.frames_per_step = frames_per_step
        self.interval_seconds = interval_seconds
        self.label = label
        self._stream = stream
        self._clock = clock
        self._is_tty = bool(getattr(stream, "isatty", lambda: False)())
        self._start: tuple[int, float] | None = None
        self._last_print_time: float | None = None
        self._last_line_length = 0

    def _line(self, env_steps: int, recent_return: float, now: float) -> str:
        assert self._start is not None
        start_steps, start_time = self._start
        elapsed = now - start_time
        step_rate = (env_steps - start_steps) / elapsed if elapsed > 0 and env_steps > start_steps else None
        percent = 100.0 * env_steps / self.total_env_steps
        if step_rate is None:
            rate_text = "n/a steps/s" + (", n/a frames/s" if self.frames_per_step > 1 else "")
            eta_text = "ETA n/a"
        else:
            rate_text = f"{step_rate:,.0f} steps/s"
            if self.frames_per_step > 1:  # Atari: agent steps and emulator frames (frame skip)
                rate_text += f", {step_rate * self.frames_per_step:,.0f} frames/s"
            eta_text = f"ETA {_format_duration(max(self.total_env_steps - env_steps, 0) / step_rate)}"
        return_text = "n/a" if math.isnan(recent_return) else f"{recent_return:.2f}"
        return (
            f"{self.label} {env_steps:,}/{self.total_env_steps:,} ({percent:.1f}%) | {rate_text} | "
            f"return {return_text} | {eta_text}"
        )

    def update(self, env_steps: int, recent_return: float, force: bool = False) -> None:
        """Reports progress if enough time passed since the last report (or `force`)."""
        now = self._clock()
        if self._start is None:
            self._start = (env_steps, now)
        min_gap = _TTY_REFRESH_SECONDS if self._is_tty else self.interval_seconds
        if not force and self._last_print_time is not None and now - self._last_print_time < min_gap:
            return
        line = self._line(env_steps, recent_return, now)
        if self._is_tty:
            self._stream.write("\r" + line.ljust(self._last_line_length))
            self._last_line_length = len(line)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()
        self._last_print_time = now

    def break_line(self) -> None:
        """Ends a live terminal line so that the next output (e.g. an `iteration N:` line) starts on its own line;
        the next `update` draws a fresh progress line below it."""
        if self._is_tty and self._last_line_length:
            self._stream.write("\n")
            self._stream.flush()
            self._last_line_length = 0

    def close(self) -> None:
        """Ends a live terminal line so the next output starts on its own line."""
        self.break_line()


class LearnerStatistics:
    """Learner values recorded by name during an iteration, read back as one mean per name (then forgotten).

    Tensors are kept as they are, on their device, until `means()`: recording costs no device synchronisation.
    """

    def __init__(self) -> None:
        self._values: dict[str, list[Any]] = {}

    def record(self, **values: Any) -> None:
        """Adds each value (a number or a one-element tensor) under its name."""
        for name, value in values.items():
            self._values.setdefault(name, []).append(value.detach() if isinstance(value, torch.Tensor) else value)

    def means(self) -> dict[str, float]:
        """The mean of each name's values since the last call."""
        means = {}
        for name, values in self._values.items():
            tensors = [value for value in values if isinstance(value, torch.Tensor)]
            if not tensors:
                means[name] = float(np.mean(values))
                continue
            device = tensors[0].device
            stacked = torch.stack([torch.as_tensor(value, dtype=torch.float32, device=device).reshape(()) for value in values])
            means[name] = stacked.mean().item()
        self._values.clear()
        return means


class RoomStatistics:
    """Rooms visited per finished training episode (Montezuma's Revenge: `gym_env.RoomCounter`), from the rollouts'
    'visited_rooms', averaged per iteration; `active` when the actors count them (its statistics then also become
    results CSV columns, nan for an iteration without an episode end)."""

    def __init__(self, active: bool = False) -> None:
        self.active = active
        self._counts: list[torch.Tensor] = []

    def record(self, batch: dict[str, torch.Tensor]) -> None:
        rooms = batch['visited_rooms']
        self._counts.append(rooms[rooms > 0].cpu())

    def statistics(self) -> dict[str, float]:
        """{'visited_rooms_mean', 'visited_rooms_max'} of the episodes finished since the last call (nan without one;
        {} when the actors count no rooms)."""
        counts = torch.cat(self._counts) if self._counts else torch.zeros(0)
        self._counts = []
        if not self.active:
            return {}
        if counts.numel() == 0:
            return {'visited_rooms_mean': math.nan, 'visited_rooms_max': math.nan}
        return {'visited_rooms_mean': float(counts.mean()), 'visited_rooms_max': float(counts.max())}
