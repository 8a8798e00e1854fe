"""Exact values of LinearSchedule and of the KL-adaptive learning rate."""

import pytest

from deep_rl_zoo.schedule import LinearSchedule, kl_adaptive_learning_rate


def test_decays_linearly_then_stays_at_end_value():
    schedule = LinearSchedule(1.0, 0.0, 4)
    assert [schedule(step) for step in range(7)] == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0, 0.0]


def test_increasing_schedule():
    schedule = LinearSchedule(0.0, 2.0, 8)
    assert [schedule(step) for step in (0, 2, 4, 8, 9)] == [0.0, 0.5, 1.0, 2.0, 2.0]


def test_begin_step_holds_begin_value_then_decays():
    schedule = LinearSchedule(1.0, 0.5, decay_steps=10, begin_step=5)
    assert schedule(0) == 1.0
    assert schedule(4) == 1.0
    assert schedule(5) == 1.0
    assert schedule(10) == pytest.approx(0.75)
    assert schedule(15) == 0.5
    assert schedule(1_000) == 0.5


def test_dqn_style_epsilon():
    """Epsilon 1 -> 0.01 over 100 steps: the value at step k is 1 - 0.99 * k / 100."""
    schedule = LinearSchedule(1.0, 0.01, 100)
    for step in (0, 1, 33, 50, 99, 100):
        assert schedule(step) == pytest.approx(1.0 - 0.99 * step / 100, abs=1e-12)
    assert schedule(10**9) == pytest.approx(0.01, abs=1e-15)


def test_value_after_decay_is_exactly_end_value():
    assert LinearSchedule(1.0, 0.01, 100)(100) == 0.01
    assert LinearSchedule(1.0, 0.01, 100)(10**9) == 0.01


def test_zero_decay_steps_is_a_step_function_at_begin_step():
    schedule = LinearSchedule(1.0, 0.1, decay_steps=0, begin_step=3)
    assert [schedule(step) for step in range(6)] == [1.0, 1.0, 1.0, 0.1, 0.1, 0.1]
    assert LinearSchedule(1.0, 0.1, decay_steps=0)(0) == 0.1


def test_negative_step_before_begin_gives_begin_value():
    assert LinearSchedule(1.0, 0.0, 10)(-5) == 1.0


@pytest.mark.parametrize('decay_steps, begin_step', [(-1, 0), (10, -1)])
def test_negative_arguments_are_refused(decay_steps, begin_step):
    with pytest.raises(ValueError, match='decay_steps >= 0 and begin_step >= 0'):
        LinearSchedule(1.0, 0.0, decay_steps, begin_step)


def test_kl_adaptive_learning_rate_rule():
    threshold, low, high = 0.008, 1e-6, 1e-2
    rule = lambda lr, kl: kl_adaptive_learning_rate(lr, kl, threshold, low, high)  # noqa: E731
    assert rule(3e-4, 0.017) == pytest.approx(2e-4)  # > 2 x threshold: / 1.5
    assert rule(3e-4, 0.016) == 3e-4  # exactly 2 x threshold: unchanged
    assert rule(3e-4, 0.008) == 3e-4  # inside the band
    assert rule(3e-4, 0.004) == 3e-4  # exactly threshold / 2: unchanged
    assert rule(3e-4, 0.003) == pytest.approx(4.5e-4)  # < threshold / 2: x 1.5
    assert rule(1.2e-6, 1.0) == 1e-6  # floored at the minimum
    assert rule(8e-3, 0.0) == 1e-2  # capped at the maximum
