"""Tests for deep_rl_zoo.trackers."""

import io
import math
import os

import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing import event_accumulator

from deep_rl_zoo import trackers

torch.set_num_threads(1)


class FakeClock:
    """A clock the test sets by hand."""

    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _read_events(log_dir):
    accumulator = event_accumulator.EventAccumulator(log_dir, size_guidance={"scalars": 0, "images": 0})
    accumulator.Reload()
    return accumulator


def _scalars(accumulator, tag):
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def _decoded_image(accumulator, tag):
    (event,) = accumulator.Images(tag)
    return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)).convert("RGB"))


def test_episode_tracker_two_envs_ending_at_different_steps():
    tracker = trackers.EpisodeTracker(num_envs=2)
    assert tracker.step(np.array([1.0, 0.5]), np.array([False, False])) == []
    assert tracker.step(np.array([-2.0, 3.0]), np.array([True, False])) == [(-1.0, 2)]
    assert tracker.step(np.array([4.0, 10.0]), np.array([False, True])) == [(13.5, 3)]
    # Env 0 restarted after step 2 (4 + 1 over 2 steps); env 1 after step 3 (1 over 1 step).
    assert tracker.step(np.array([1.0, 1.0]), np.array([True, True])) == [(5.0, 2), (1.0, 1)]
    assert tracker.step(np.array([7.0, 0.0]), np.array([True, False])) == [(7.0, 1)]


def test_episode_tracker_rejects_bad_input():
    with pytest.raises(ValueError, match="num_envs"):
        trackers.EpisodeTracker(num_envs=0)
    tracker = trackers.EpisodeTracker(num_envs=2)
    with pytest.raises(ValueError, match=r"raw_reward must have shape \(2,\)"):
        tracker.step(np.zeros(3), np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match=r"episode_end must have shape \(2,\)"):
        tracker.step(np.zeros(2), np.zeros((2, 1), dtype=bool))


def test_run_logger_writes_tensorboard_tags_and_values(tmp_path):
    clock = FakeClock(100.0)
    logger = trackers.RunLogger("Pong-DQN-1", "train", True, runs_dir=str(tmp_path), frames_per_step=4, clock=clock)

    logger.log_episodes(1000, [(10.0, 200), (20.0, 300)])
    clock.now = 110.0
    first = logger.write_performance(2000)
    assert first == {
        "episode_return": 15.0,
        "episode_steps": 250.0,
        "num_episodes": 2,
        "step_rate": 200.0,
        "frame_rate": 800.0,
    }

    logger.log_episodes(2500, [(-3.0, 100)])
    clock.now = 115.0
    assert logger.write_performance(3000)["step_rate"] == 200.0

    clock.now = 125.0
    empty = logger.write_performance(4000)
    assert math.isnan(empty["episode_return"]) and math.isnan(empty["episode_steps"])
    assert (empty["num_episodes"], empty["step_rate"]) == (0, 100.0)

    logger.write_agent_statistics(3000, {"epsilon": 0.25})
    logger.write_learner_statistics(50, {"loss": 1.5, "grad_norm": torch.tensor(2.0)})

    frame_stack = np.zeros((4, 84, 84), dtype=np.uint8)
    frame_stack[:3] = 255  # older frames, which must not be shown
    frame_stack[3] = np.arange(84, dtype=np.uint8)[None, :] * 3
    logger.write_screenshot(4000, frame_stack)
    rgb = np.random.default_rng(0).integers(0, 256, size=(210, 160, 3), dtype=np.uint8)
    logger.write_screenshot(4000, rgb, name="screenshot_rgb")
    logger.close()

    log_dir = os.path.join(str(tmp_path), "Pong-DQN-1", "train")
    events = _read_events(log_dir)
    assert set(events.Tags()["scalars"]) == {
        "performance(env_steps)/episode_return",
        "performance(env_steps)/episode_steps",
        "performance(env_steps)/num_episodes",
        "performance(env_steps)/step_rate",
        "agent_statistics(env_steps)/epsilon",
        "learner_statistics(learner_steps)/loss",
        "learner_statistics(learner_steps)/grad_norm",
    }
    assert _scalars(events, "performance(env_steps)/episode_return") == [(2000, 15.0), (3000, -3.0)]
    assert _scalars(events, "performance(env_steps)/episode_steps") == [(2000, 250.0), (3000, 100.0)]
    assert _scalars(events, "performance(env_steps)/num_episodes") == [(2000, 2.0), (3000, 1.0), (4000, 0.0)]
    assert _scalars(events, "performance(env_steps)/step_rate") == [(2000, 200.0), (3000, 200.0), (4000, 100.0)]
    assert _scalars(events, "agent_statistics(env_steps)/epsilon") == [(3000, 0.25)]
    assert _scalars(events, "learner_statistics(learner_steps)/loss") == [(50, 1.5)]
    assert _scalars(events, "learner_statistics(learner_steps)/grad_norm") == [(50, 2.0)]

    assert set(events.Tags()["images"]) == {"screenshot", "screenshot_rgb"}
    shown = _decoded_image(events, "screenshot")
    assert shown.shape == (84, 84, 3)
    for channel in range(3):
        np.testing.assert_array_equal(shown[..., channel], frame_stack[3])
    np.testing.assert_array_equal(_decoded_image(events, "screenshot_rgb"), rgb)


def test_step_rate_from_given_window_or_since_last_call(tmp_path):
    clock = FakeClock(0.0)
    logger = trackers.RunLogger("run", "eval", False, runs_dir=str(tmp_path), start_env_steps=50_000, clock=clock)
    clock.now = 100.0  # an eval stream: 1000 eval steps in 4 s, logged at training step 60,000
    assert logger.write_performance(60_000, steps_taken=1000, seconds_taken=4.0)["step_rate"] == 250.0
    clock.now = 102.0
    assert logger.write_performance(70_000)["step_rate"] == 5000.0  # 10,000 steps since the call at 100 s
    with pytest.raises(ValueError, match="steps_taken and seconds_taken must be given together"):
        logger.write_performance(70_000, steps_taken=10)


def test_run_logger_without_tensorboard_writes_nothing_but_keeps_stats(tmp_path):
    clock = FakeClock(0.0)
    logger = trackers.RunLogger("run", "train", False, runs_dir=str(tmp_path / "runs"), clock=clock)
    logger.log_episodes(10, [(float(value), 5) for value in range(25)])
    clock.now = 2.0
    performance = logger.write_performance(100)
    logger.write_agent_statistics(100, {"epsilon": 0.1})
    logger.write_learner_statistics(3, {"loss": 0.5})
    logger.write_screenshot(100, np.zeros((84, 84, 4), dtype=np.uint8))
    logger.close()

    assert not os.listdir(tmp_path)
    assert performance == {
        "episode_return": 12.0,
        "episode_steps": 5.0,
        "num_episodes": 25,
        "step_rate": 50.0,
        "frame_rate": 50.0,
    }
    assert logger.recent_returns() == 14.5  # mean of 5..24
    assert logger.recent_returns(3) == 23.0
    assert logger.recent_returns(100) == 12.0


def test_run_logger_rejects_bad_input(tmp_path):
    logger = trackers.RunLogger("run", "train", False, runs_dir=str(tmp_path))
    assert math.isnan(logger.recent_returns())
    with pytest.raises(ValueError, match="n must be an integer"):
        logger.recent_returns(0)
    logger.log_episodes(500, [])
    with pytest.raises(ValueError, match="env_steps must not decrease: got 400 after 500"):
        logger.write_performance(400)
    with pytest.raises(ValueError, match="image must be a uint8 numpy array"):
        logger.write_screenshot(500, np.zeros((84, 84), dtype=np.float32))
    with pytest.raises(ValueError, match=r"stats\['loss'\] must be a number"):
        logger.write_learner_statistics(1, {"loss": "high"})
    with pytest.raises(ValueError, match="frames_per_step"):
        trackers.RunLogger("run", "train", False, frames_per_step=0)


def test_csv_results_header_once_append_on_reopen_and_mismatch_refused(tmp_path):
    path = tmp_path / "results" / "pong.csv"
    results = trackers.CsvResults(str(path))
    results.append({"iteration": 0, "env_steps": 1000, "episode_return": -21.0})
    results.append({"iteration": 1, "env_steps": 2000, "episode_return": -20.5})
    assert path.read_bytes().decode() == (
        "iteration,env_steps,episode_return\n0,1000,-21.0\n1,2000,-20.5\n"
    )
    results.close()

    reopened = trackers.CsvResults(str(path))
    reopened.append({"env_steps": 3000, "episode_return": -19.0, "iteration": 2})  # header order wins
    with pytest.raises(ValueError, match="differ from the columns"):
        reopened.append({"iteration": 3, "env_steps": 4000})
    reopened.close()

    mismatched = trackers.CsvResults(str(path))
    with pytest.raises(ValueError, match="pass a new --results_csv_path"):
        mismatched.append({"iteration": 3, "loss": 0.1, "episode_return": 1.0})
    mismatched.close()
    assert path.read_bytes().decode() == (
        "iteration,env_steps,episode_return\n0,1000,-21.0\n1,2000,-20.5\n2,3000,-19.0\n"
    )


def test_console_progress_plain_lines_at_interval():
    clock, out = FakeClock(0.0), io.StringIO()
    progress = trackers.ConsoleProgress(1_000_000, frames_per_step=4, interval_seconds=10.0, stream=out, clock=clock)
    progress.update(0, math.nan)
    clock.now = 5.0
    progress.update(5000, 1.0)  # too soon: not printed
    clock.now = 10.0
    progress.update(10_000, 12.5)
    clock.now = 12.0
    progress.update(12_000, 13.0, force=True)
    progress.close()
    assert out.getvalue().splitlines() == [
        "env steps 0/1,000,000 (0.0%) | n/a steps/s, n/a frames/s | return n/a | ETA n/a",
        "env steps 10,000/1,000,000 (1.0%) | 1,000 steps/s, 4,000 frames/s | return 12.50 | ETA 0:16:30",
        "env steps 12,000/1,000,000 (1.2%) | 1,000 steps/s, 4,000 frames/s | return 13.00 | ETA 0:16:28",
    ]


def test_console_progress_eta_from_rate_since_first_update():
    clock, out = FakeClock(50.0), io.StringIO()
    progress = trackers.ConsoleProgress(10_000_000, stream=out, clock=clock)
    progress.update(2_000_000, 5.0)  # a resumed run: the rate counts steps from here
    clock.now = 150.0
    progress.update(2_100_000, 5.0)
    assert out.getvalue().splitlines()[-1] == (
        "env steps 2,100,000/10,000,000 (21.0%) | 1,000 steps/s | return 5.00 | ETA 2:11:40"
    )


def test_console_progress_redraws_one_line_on_a_terminal():
    clock, terminal = FakeClock(0.0), FakeTerminal()
    progress = trackers.ConsoleProgress(1000, stream=terminal, clock=clock)
    progress.update(0, math.nan)
    clock.now = 0.1
    progress.update(10, 1.0)  # redrawn at most every 0.5 s
    clock.now = 1.0
    progress.update(100, 2.0)
    progress.close()
    first = "env steps 0/1,000 (0.0%) | n/a steps/s | return n/a | ETA n/a"
    second = "env steps 100/1,000 (10.0%) | 100 steps/s | return 2.00 | ETA 0:00:09"
    assert terminal.getvalue() == "\r" + first + "\r" + second.ljust(len(first)) + "\n"


def test_learner_statistics_average_numbers_and_tensors_per_name_then_forget_them():
    statistics = trackers.LearnerStatistics()
    statistics.record(loss=1.0, entropy=torch.tensor(0.5))
    statistics.record(loss=2.0, entropy=torch.tensor([1.5], requires_grad=True) * 1.0)  # kept detached
    statistics.record(loss=4.5)
    means = statistics.means()
    assert means == {'loss': 2.5, 'entropy': 1.0}
    assert statistics.means() == {}  # each iteration reports only its own values


def test_room_statistics_average_the_rooms_of_finished_episodes():
    statistics = trackers.RoomStatistics(active=True)
    statistics.record({'visited_rooms': torch.tensor([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0]])})  # 0: no episode ended there
    assert statistics.statistics() == {'visited_rooms_mean': 2.0, 'visited_rooms_max': 3.0}
    nothing = statistics.statistics()  # nothing finished since: nan, so the results CSV keeps its columns
    assert list(nothing) == ['visited_rooms_mean', 'visited_rooms_max'] and all(math.isnan(value) for value in nothing.values())
    inactive = trackers.RoomStatistics()  # a run whose actors count no rooms reports none
    inactive.record({'visited_rooms': torch.tensor([[3.0]])})
    assert inactive.statistics() == {}
