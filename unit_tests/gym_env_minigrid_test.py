"""The MiniGrid environment kind, MountainCar-v0 as the classic sparse task, and Montezuma's room byte."""

import numpy as np
import pytest

from deep_rl_zoo import gym_env

FORWARD, RIGHT = 2, 1  # MiniGrid actions: 0 turn left, 1 turn right, 2 move forward, ...


def test_minigrid_observation_is_the_partial_view_as_a_uint8_grid_channels_first():
    with gym_env.create_vector_env('minigrid', 'MiniGrid-DoorKey-5x5-v0', 2, seed=1) as env:
        observation = env.reset()
        assert observation.shape == (2, 3, 7, 7) and observation.dtype == np.uint8
        assert env.single_observation_space.shape == (3, 7, 7) and env.single_action_space.n == 7
        # [object/colour/state, x, y]: the agent's own cell, bottom middle of its view, holds nothing (object index 1).
        np.testing.assert_array_equal(observation[:, 0, 3, 6], [1, 1])


def test_minigrid_reaching_the_goal_pays_one_minus_point_nine_steps_over_max_steps():
    # Empty-5x5: the agent starts at (1, 1) facing right, the goal is at (3, 3); max_steps = 4 * 5 * 5 = 100.
    with gym_env.create_vector_env('minigrid', 'MiniGrid-Empty-5x5-v0', 1, seed=0) as env:
        first = env.reset()
        rewards, ends = [], []
        for action in (FORWARD, FORWARD, RIGHT, FORWARD, FORWARD):
            step = env.step(np.array([action]))
            rewards.append(float(step.reward[0]))
            ends.append(bool(step.terminated[0]))
    assert rewards == [0.0, 0.0, 0.0, 0.0, pytest.approx(1 - 0.9 * 5 / 100)]
    assert ends == [False, False, False, False, True]
    np.testing.assert_array_equal(step.observation, first)  # same-step autoreset: the same fixed layout again
    assert not np.array_equal(step.final_observation, first)


def test_minigrid_environments_are_seeded_like_the_other_kinds():
    def observations(seed, num_envs):
        with gym_env.create_vector_env('minigrid', 'MiniGrid-DoorKey-8x8-v0', num_envs, seed=seed) as env:
            return env.reset()

    np.testing.assert_array_equal(observations(3, 2), observations(3, 2))
    np.testing.assert_array_equal(observations(3, 2)[1], observations(4, 1)[0])  # env i gets seed + i
    layouts = {observations(seed, 1).tobytes() for seed in range(5)}
    assert len(layouts) > 1


def test_minigrid_renders_the_whole_grid_for_videos():
    with gym_env.create_vector_env('minigrid', 'MiniGrid-DoorKey-5x5-v0', 1, seed=1, render=True) as env:
        env.reset()
        frame = env.render()
    assert frame.shape == (160, 160, 3) and frame.dtype == np.uint8  # 5 x 5 tiles of 32 pixels


def test_an_unknown_minigrid_name_is_refused_with_examples():
    with pytest.raises(ValueError, match='--environment_name=.MiniGrid-Nowhere-v0. is not a MiniGrid environment; e.g. MiniGrid-DoorKey-5x5-v0'):
        gym_env.create_vector_env('minigrid', 'MiniGrid-Nowhere-v0', 1, seed=1)


def test_mountain_car_pays_minus_one_per_step_and_truncates_at_200():
    with gym_env.create_vector_env('classic', 'MountainCar-v0', 1, seed=1) as env:
        env.reset()
        steps = [env.step(np.array([1])) for _ in range(200)]  # "no push": the car never reaches the flag
    assert all(step.reward[0] == -1.0 for step in steps)
    assert [bool(step.truncated[0]) for step in steps] == [False] * 199 + [True]
    assert not any(step.terminated[0] for step in steps)


@pytest.mark.slow
def test_montezuma_room_byte_reads_the_first_room_and_needs_python_wrappers():
    with gym_env.create_atari_vector_env('MontezumaRevenge', 2, seed=1, use_python_wrappers=True) as env:
        env.reset()
        np.testing.assert_array_equal(env.ram_byte(gym_env.MONTEZUMA_ROOM_RAM_ADDRESS), [1, 1])  # the game starts in room 1
    with gym_env.create_atari_vector_env('MontezumaRevenge', 1, seed=1) as env:
        env.reset()
        with pytest.raises(ValueError, match='use_python_wrappers=True'):
            env.ram_byte(gym_env.MONTEZUMA_ROOM_RAM_ADDRESS)
