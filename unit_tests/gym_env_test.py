"""Tests for deep_rl_zoo.gym_env, on real environments (ALE ROMs, Box2D, MuJoCo)."""

import gymnasium
import numpy as np
import pytest

from deep_rl_zoo import gym_env

NOOP = 0


def _run(env: gym_env.VectorEnvironment, actions: np.ndarray) -> list[gym_env.VectorStep]:
    """Steps `env` through `actions` [T, N, ...] and returns the T steps."""
    return [env.step(step_actions) for step_actions in actions]


def _constant_actions(env: gym_env.VectorEnvironment, action: int) -> np.ndarray:
    return np.full(env.num_envs, action, dtype=np.int64)


class _ScriptedLivesVectorEnv(gymnasium.vector.VectorEnv):
    """One same-step-autoreset env replaying scripted (lives, terminated, truncated) steps."""

    metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}

    def __init__(self, reset_lives, script):
        self.num_envs = 1
        self.single_observation_space = gymnasium.spaces.Box(0, 10, (1,), np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(2)
        self._reset_lives = reset_lives
        self._script = iter(script)
        self._time = 0

    def reset(self, *, seed=None, options=None):
        return np.zeros((1, 1), np.float32), {"lives": np.array([self._reset_lives])}

    def step(self, actions):
        lives, terminated, truncated = next(self._script)
        self._time += 1
        observation = np.full((1, 1), self._time, np.float32)
        info = {"lives": np.array([lives])}
        if terminated or truncated:
            info["final_obs"] = np.array([np.full(1, 100 + self._time, np.float32)], dtype=object)
            observation = np.zeros((1, 1), np.float32)
        return observation, np.array([2.5]), np.array([terminated]), np.array([truncated]), info


def test_life_loss_and_final_observation_from_scripted_lives():
    # Lives: 3 -> 3 -> 2 (lost) -> 4 (extra life) -> truncated, the next game starts with 3 (no loss:
    # the episode ended) -> 2 (lost) -> game over, next game starts with 3.
    script = [
        (3, False, False),
        (2, False, False),
        (4, False, False),
        (3, False, True),
        (2, False, False),
        (3, True, False),
    ]
    env = gym_env.VectorEnvironment(_ScriptedLivesVectorEnv(3, script), seed=0, clip_reward=True)
    env.reset()
    steps = _run(env, np.zeros((6, 1), dtype=np.int64))
    assert [step.life_loss[0] for step in steps] == [False, True, False, False, True, False]
    assert [step.final_observation[0, 0] for step in steps] == [1.0, 2.0, 3.0, 104.0, 5.0, 106.0]
    assert [step.observation[0, 0] for step in steps] == [1.0, 2.0, 3.0, 0.0, 5.0, 0.0]
    np.testing.assert_array_equal(steps[0].raw_reward, [2.5])
    np.testing.assert_array_equal(steps[0].reward, [1.0])


def test_vector_env_must_autoreset_in_the_same_step():
    vector_env = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make("CartPole-v1")], autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP
    )
    with pytest.raises(ValueError, match="vector_env must use autoreset_mode=AutoresetMode.SAME_STEP"):
        gym_env.VectorEnvironment(vector_env, seed=0)


# ----------------------------------------------------------------------------------------------
# Classic and continuous control.


@pytest.mark.parametrize(
    "name, observation_shape, num_actions",
    [
        ("CartPole-v1", (4,), 2),
        ("LunarLander-v3", (8,), 4),
        ("MountainCar-v0", (2,), 3),
        ("Acrobot-v1", (6,), 3),
    ],
)
def test_classic_shapes_dtypes_and_spaces(name, observation_shape, num_actions):
    with gym_env.create_classic_vector_env(name, num_envs=3, seed=0) as env:
        assert env.num_envs == 3
        assert env.frames_per_step == 1
        assert env.single_observation_space.shape == observation_shape
        assert env.single_action_space == gymnasium.spaces.Discrete(num_actions)
        observation = env.reset()
        assert observation.shape == (3, *observation_shape)
        assert observation.dtype == np.float32
        step = env.step(np.array([0, 1, 0]))
        assert step.observation.shape == step.final_observation.shape == (3, *observation_shape)
        for field in (step.reward, step.raw_reward):
            assert field.shape == (3,) and field.dtype == np.float32
        for field in (step.terminated, step.truncated, step.life_loss):
            assert field.shape == (3,) and field.dtype == np.bool_
        np.testing.assert_array_equal(step.reward, step.raw_reward)  # Only Atari clips rewards.
        np.testing.assert_array_equal(step.life_loss, [False, False, False])
        assert env.render() is None


def test_env_i_is_seeded_with_seed_plus_i():
    reference = gymnasium.make("CartPole-v1")
    expected = np.stack([reference.reset(seed=seed)[0] for seed in (7, 8, 9)])
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=3, seed=7) as env:
        np.testing.assert_array_equal(env.reset(), expected)


def test_only_the_first_reset_seeds():
    reference = gymnasium.make("CartPole-v1")
    reference.reset(seed=7)
    expected_second_reset = reference.reset()[0]
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=1, seed=7) as env:
        env.reset()
        np.testing.assert_array_equal(env.reset()[0], expected_second_reset)


def test_same_seed_same_trajectory_and_different_seed_differs():
    actions = np.random.default_rng(0).integers(0, 2, size=(40, 2))

    def trajectory(seed):
        with gym_env.create_classic_vector_env("CartPole-v1", num_envs=2, seed=seed) as env:
            first = env.reset()
            return first, np.stack([step.observation for step in _run(env, actions)])

    first_a, trajectory_a = trajectory(seed=3)
    first_b, trajectory_b = trajectory(seed=3)
    first_c, _ = trajectory(seed=4)
    np.testing.assert_array_equal(first_a, first_b)
    np.testing.assert_array_equal(trajectory_a, trajectory_b)
    assert not np.array_equal(first_a[0], first_c[0])
    np.testing.assert_array_equal(first_a[1], first_c[0])  # seed 3 + 1 == seed 4 + 0.


def test_action_space_is_seeded():
    env_a = gym_env.create_classic_vector_env("CartPole-v1", num_envs=1, seed=11)
    env_b = gym_env.create_classic_vector_env("CartPole-v1", num_envs=1, seed=11)
    samples_a = [env_a.single_action_space.sample() for _ in range(20)]
    samples_b = [env_b.single_action_space.sample() for _ in range(20)]
    assert samples_a == samples_b
    env_a.close()
    env_b.close()


def test_same_step_autoreset_on_termination():
    """Pushing CartPole right always: compared step by step with a plain gymnasium env of the same seed."""
    reference = gymnasium.make("CartPole-v1")
    reference_observation, _ = reference.reset(seed=5)
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=1, seed=5) as env:
        np.testing.assert_array_equal(env.reset()[0], reference_observation)
        for _ in range(100):
            reference_observation, reference_reward, terminated, truncated, _ = reference.step(1)
            step = env.step(np.array([1]))
            np.testing.assert_array_equal(step.final_observation[0], reference_observation)
            np.testing.assert_array_equal(step.raw_reward, [reference_reward])
            if terminated:
                break
            np.testing.assert_array_equal(step.observation[0], reference_observation)
            np.testing.assert_array_equal(step.terminated, [False])
        assert terminated and not truncated
        np.testing.assert_array_equal(step.terminated, [True])
        np.testing.assert_array_equal(step.truncated, [False])
        # The last observation is out of bounds (pole angle > 12 degrees or cart position > 2.4) ...
        last = step.final_observation[0]
        assert abs(last[2]) > 12 * 2 * np.pi / 360 or abs(last[0]) > 2.4
        # ... and the returned one is a fresh start: CartPole resets every state variable within +-0.05.
        assert np.all(np.abs(step.observation[0]) <= 0.05)


def test_mountain_car_truncates_after_200_steps():
    with gym_env.create_classic_vector_env("MountainCar-v0", num_envs=2, seed=0) as env:
        env.reset()
        steps = _run(env, np.ones((200, 2), dtype=np.int64))  # Doing nothing never reaches the flag.
    truncated = np.stack([step.truncated for step in steps])
    terminated = np.stack([step.terminated for step in steps])
    assert not terminated.any()
    assert not truncated[:199].any()
    np.testing.assert_array_equal(truncated[199], [True, True])
    np.testing.assert_array_equal(steps[-1].raw_reward, [-1.0, -1.0])


def test_max_episode_steps_truncates_where_it_says():
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=1, seed=0, max_episode_steps=3) as env:
        env.reset()
        steps = _run(env, np.array([[0], [1], [0], [1]]))
    np.testing.assert_array_equal([step.truncated[0] for step in steps], [False, False, True, False])
    # In rows that go on, final_observation is the next observation itself.
    np.testing.assert_array_equal(steps[0].final_observation, steps[0].observation)
    assert not np.array_equal(steps[2].final_observation, steps[2].observation)


def test_lunar_lander_v2_is_v3_with_a_one_line_notice_once(capsys, monkeypatch):
    monkeypatch.setattr(gym_env, "_announced_renames", set())
    with gym_env.create_classic_vector_env("LunarLander-v2", num_envs=1, seed=0) as old_name:
        old_observation = old_name.reset()
    with gym_env.create_classic_vector_env("LunarLander-v2", num_envs=1, seed=0):
        pass
    with gym_env.create_classic_vector_env("LunarLander-v3", num_envs=1, seed=0) as new_name:
        np.testing.assert_array_equal(old_observation, new_name.reset())
    notice = capsys.readouterr().err.strip().splitlines()
    assert notice == ["Note: LunarLander-v2 is now LunarLander-v3 in gymnasium; using it."]


def test_classic_render_gives_rgb_frame_of_env_zero():
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=2, seed=0, render=True) as env:
        env.reset()
        frame = env.render()
    assert frame.shape == (400, 600, 3) and frame.dtype == np.uint8


@pytest.mark.parametrize(
    "name, observation_shape, action_shape",
    [("Pendulum-v1", (3,), (1,)), ("Hopper-v5", (11,), (3,)), ("HalfCheetah-v5", (17,), (6,))],
)
def test_continuous_shapes_dtypes_and_seeding(name, observation_shape, action_shape):
    actions = np.random.default_rng(0).uniform(-1.0, 1.0, size=(5, 2, *action_shape)).astype(np.float32)

    def trajectory(seed):
        with gym_env.create_continuous_vector_env(name, num_envs=2, seed=seed) as env:
            assert env.single_observation_space.shape == observation_shape
            assert env.single_observation_space.dtype == np.float32
            assert isinstance(env.single_action_space, gymnasium.spaces.Box)
            assert env.single_action_space.shape == action_shape
            first = env.reset()
            assert first.dtype == np.float32 and first.shape == (2, *observation_shape)
            steps = _run(env, actions)
        return np.stack([first] + [step.observation for step in steps]), steps

    observations_a, steps = trajectory(seed=1)
    observations_b, _ = trajectory(seed=1)
    observations_c, _ = trajectory(seed=2)
    np.testing.assert_array_equal(observations_a, observations_b)
    assert not np.array_equal(observations_a[:, 0], observations_c[:, 0])
    assert steps[0].reward.dtype == np.float32 and steps[0].observation.dtype == np.float32


def test_mujoco_render_with_egl():
    with gym_env.create_continuous_vector_env("InvertedPendulum-v5", num_envs=1, seed=0, render=True) as env:
        env.reset()
        frame = env.render()
    assert frame.shape == (480, 480, 3) and frame.dtype == np.uint8
    assert frame.std() > 0  # An actual picture, not a blank buffer.


# ----------------------------------------------------------------------------------------------
# Atari.


@pytest.mark.parametrize(
    "name, rom_id",
    [
        ("Pong", "pong"),
        ("pong", "pong"),
        ("PONG", "pong"),
        ("ALE/Pong-v5", "pong"),
        ("PongNoFrameskip-v4", "pong"),
        ("MontezumaRevenge", "montezuma_revenge"),
        ("montezuma_revenge", "montezuma_revenge"),
        ("ALE/MontezumaRevenge-v5", "montezuma_revenge"),
        ("MontezumaRevengeNoFrameskip-v4", "montezuma_revenge"),
        ("SpaceInvaders", "space_invaders"),
        ("Amidar", "amidar"),
    ],
)
def test_atari_names(name, rom_id):
    assert gym_env.atari_rom_id(name) == rom_id


@pytest.mark.parametrize("name", ["Pongg", "Pong-v4", "ALE/Pong-v4", "CartPole-v1", "Combat", ""])
def test_unknown_atari_name_gives_one_clear_line(name):
    with pytest.raises(ValueError) as error:
        gym_env.create_atari_vector_env(name, num_envs=1, seed=0)
    message = str(error.value)
    assert "\n" not in message
    assert f"--environment_name={name!r}" in message
    assert "any ALE game, e.g. Pong, Breakout, Amidar, MontezumaRevenge" in message


@pytest.mark.slow
@pytest.mark.parametrize("use_python_wrappers", [False, True])
@pytest.mark.parametrize("name, num_actions", [("Pong", 6), ("Breakout", 4)])
def test_atari_shapes_dtypes_and_spaces(name, num_actions, use_python_wrappers):
    with gym_env.create_atari_vector_env(name, 2, seed=0, use_python_wrappers=use_python_wrappers) as env:
        assert env.frames_per_step == 4
        assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        assert env.single_action_space == gymnasium.spaces.Discrete(num_actions)
        observation = env.reset()
        assert observation.shape == (2, 4, 84, 84) and observation.dtype == np.uint8
        # The stack starts zero-padded: only the newest frame holds a screen.
        assert not observation[:, :3].any() and observation[:, 3].any(axis=(1, 2)).all()
        step = env.step(_constant_actions(env, NOOP))
        assert step.observation.shape == step.final_observation.shape == (2, 4, 84, 84)
        assert step.reward.dtype == step.raw_reward.dtype == np.float32
        assert step.life_loss.dtype == np.bool_


def test_atari_frame_options():
    with gym_env.create_atari_vector_env(
        "Breakout", 1, seed=0, frame_skip=2, frame_stack=3, frame_size=64
    ) as env:
        assert env.frames_per_step == 2
        assert env.reset().shape == (1, 3, 64, 64)


@pytest.mark.slow
@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_sticky_actions_repeat_the_previous_action(use_python_wrappers):
    """With repeat_action_probability=1 every frame repeats the action before it (NOOP from the reset on), so moving
    the paddle up plays exactly as doing nothing; without sticky actions it does not."""

    def trajectory(action, probability):
        options = dict(noop_max=0, repeat_action_probability=probability, use_python_wrappers=use_python_wrappers)
        with gym_env.create_atari_vector_env("Pong", 1, seed=3, **options) as env:
            env.reset()
            return np.stack([step.observation for step in _run(env, np.full((40, 1), action))])

    up = 2  # RIGHT in Pong's minimal action set moves the paddle up
    np.testing.assert_array_equal(trajectory(up, 1.0), trajectory(0, 1.0))
    assert not np.array_equal(trajectory(up, 0.0), trajectory(0, 0.0))


@pytest.mark.slow
def test_atari_seeding_is_reproducible_and_env_i_gets_seed_plus_i():
    actions = np.random.default_rng(0).integers(0, 4, size=(60, 1)).repeat(2, axis=1)

    def trajectory(seed):
        with gym_env.create_atari_vector_env("Breakout", 2, seed=seed) as env:
            first = env.reset()
            return np.stack([first] + [step.observation for step in _run(env, actions)])

    trajectory_a = trajectory(seed=10)
    trajectory_b = trajectory(seed=10)
    trajectory_c = trajectory(seed=11)
    np.testing.assert_array_equal(trajectory_a, trajectory_b)
    np.testing.assert_array_equal(trajectory_a[:, 1], trajectory_c[:, 0])  # seed 10 + 1 == seed 11 + 0.
    assert not np.array_equal(trajectory_a[:, 0], trajectory_c[:, 0])


def test_pong_raw_and_clipped_rewards():
    rng = np.random.default_rng(0)
    with gym_env.create_atari_vector_env("Pong", 1, seed=0) as env:
        env.reset()
        for _ in range(500):
            step = env.step(rng.integers(0, 6, size=1))
            if step.raw_reward[0] != 0:
                break
    assert step.raw_reward[0] in (-1.0, 1.0)
    np.testing.assert_array_equal(step.reward, step.raw_reward)


@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_space_invaders_reward_is_sign_clipped_and_raw_score_kept(use_python_wrappers):
    """Shooting an invader scores 5 to 30 points in one step: learning sees 1, reporting the score."""
    rng = np.random.default_rng(0)
    with gym_env.create_atari_vector_env(
        "SpaceInvaders", 1, seed=0, use_python_wrappers=use_python_wrappers
    ) as env:
        env.reset()
        for _ in range(500):
            step = env.step(rng.integers(0, 6, size=1))
            if step.raw_reward[0] != 0:
                break
    assert step.raw_reward[0] in (5.0, 10.0, 15.0, 20.0, 25.0, 30.0)
    np.testing.assert_array_equal(step.reward, [1.0])


def test_unclipped_rewards_when_asked():
    rng = np.random.default_rng(0)
    with gym_env.create_atari_vector_env("SpaceInvaders", 1, seed=0, clip_reward=False) as env:
        env.reset()
        for _ in range(500):
            step = env.step(rng.integers(0, 6, size=1))
            if step.raw_reward[0] != 0:
                break
    assert step.raw_reward[0] > 1.0
    np.testing.assert_array_equal(step.reward, step.raw_reward)


@pytest.mark.slow
@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_breakout_life_loss_does_not_end_the_game(use_python_wrappers):
    """Breakout has 5 lives: 4 losses are reported as life_loss, the 5th ends the game as terminated."""
    rng = np.random.default_rng(0)
    steps = []
    with gym_env.create_atari_vector_env(
        "Breakout", 1, seed=0, use_python_wrappers=use_python_wrappers
    ) as env:
        env.reset()
        while not (steps and steps[-1].terminated[0]) and len(steps) < 2_000:
            steps.append(env.step(rng.integers(0, 4, size=1)))  # Random actions include FIRE.
    life_loss = np.array([step.life_loss[0] for step in steps])
    terminated = np.array([step.terminated[0] for step in steps])
    truncated = np.array([step.truncated[0] for step in steps])
    assert life_loss.sum() == 4
    assert terminated.sum() == 1 and terminated[-1]
    assert not (life_loss & terminated).any()
    assert not truncated.any()


@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_fire_on_reset_puts_breakout_ball_in_play(use_python_wrappers):
    """With NOOP only, a life is lost (the ball fell past the paddle) only if FIRE launched the ball."""
    with gym_env.create_atari_vector_env(
        "Breakout", 1, seed=0, use_python_wrappers=use_python_wrappers
    ) as env:
        env.reset()
        steps = _run(env, np.zeros((40, 1), dtype=np.int64))
    assert sum(step.life_loss[0] for step in steps) == 1
    assert not any(step.terminated[0] for step in steps)


def _record_actions(env: gym_env.VectorEnvironment, monkeypatch) -> list[np.ndarray]:
    """The actions that `env` hands to the vector env it wraps, one array per step, from now on."""
    sent = []
    inner_step = env._vector_env.step  # pylint: disable=protected-access

    def step(actions):
        sent.append(np.array(actions))
        return inner_step(actions)

    monkeypatch.setattr(env._vector_env, "step", step)  # pylint: disable=protected-access
    return sent


@pytest.mark.slow
@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_breakout_noop_policy_ends_its_game_with_fire_after_each_lost_life(use_python_wrappers, monkeypatch):
    """A policy that never fires loses Breakout's 5 balls and ends the game (~120 steps): the step after each
    lost life plays FIRE in that environment only, every other step plays what it is given."""
    steps = []
    with gym_env.create_atari_vector_env(
        "Breakout", 2, seed=0, use_python_wrappers=use_python_wrappers
    ) as env:
        env.reset()
        sent = _record_actions(env, monkeypatch)
        while not (steps and steps[-1].terminated.any()) and len(steps) < 300:
            steps.append(env.step(_constant_actions(env, NOOP)))
    life_loss = np.array([step.life_loss for step in steps])  # [T, 2]
    terminated = np.array([step.terminated for step in steps])
    assert terminated.any(), "a NOOP policy's Breakout game did not end within 300 steps"
    ended = int(np.flatnonzero(terminated.any(axis=1))[0])
    assert ended < 150
    for row in np.flatnonzero(terminated[ended]):
        assert life_loss[:, row].sum() == 4
    fired = np.array(sent) == 1  # [T, 2]; Breakout's FIRE is action 1
    np.testing.assert_array_equal(fired[1:], life_loss[:-1])
    assert not fired[0].any()
    assert env.fire_action == 1


def test_fire_after_life_loss_replaces_only_the_next_action(monkeypatch):
    """Scripted lives: FIRE (action 1) follows a lost life; not an episode's end, not a gain, not without fire_action."""
    script = [(3, False, False), (2, False, False), (2, False, False), (1, False, True), (3, False, False), (4, False, False)]

    def sent_actions(fire_action):
        env = gym_env.VectorEnvironment(_ScriptedLivesVectorEnv(3, script), seed=0, fire_action=fire_action)
        env.reset()
        sent = _record_actions(env, monkeypatch)
        steps = _run(env, np.zeros((6, 1), dtype=np.int64))
        assert [step.life_loss[0] for step in steps] == [False, True, False, False, False, False]
        return [int(actions[0]) for actions in sent]

    assert sent_actions(fire_action=1) == [0, 0, 1, 0, 0, 0]
    assert sent_actions(fire_action=None) == [0] * 6


@pytest.mark.slow
def test_pong_has_fire_but_no_lives_so_its_actions_pass_unchanged(monkeypatch):
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 6, size=(300, 1))
    with gym_env.create_atari_vector_env("Pong", 1, seed=0) as env:
        assert env.fire_action == 1
        env.reset()
        sent = _record_actions(env, monkeypatch)
        steps = _run(env, actions)
    assert not any(step.life_loss[0] for step in steps)
    np.testing.assert_array_equal(np.array(sent), actions)


@pytest.mark.slow
def test_python_and_cpp_paths_give_the_same_pixels_through_lost_lives():
    """NOOP Breakout without random no-ops: both paths fire after the first lost life the same way."""
    fast = gym_env.create_atari_vector_env("Breakout", 1, seed=0, noop_max=0)
    python = gym_env.create_atari_vector_env("Breakout", 1, seed=0, noop_max=0, use_python_wrappers=True)
    np.testing.assert_array_equal(fast.reset(), python.reset())
    life_losses = 0
    for _ in range(60):
        noop = np.zeros(1, dtype=np.int64)
        fast_step, python_step = fast.step(noop), python.step(noop)
        np.testing.assert_array_equal(fast_step.observation, python_step.observation)
        np.testing.assert_array_equal(fast_step.life_loss, python_step.life_loss)
        life_losses += int(fast_step.life_loss[0])
    assert life_losses == 2
    fast.close()
    python.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Breakout", "Pong"])
def test_python_and_cpp_paths_give_the_same_pixels(name):
    """Without random no-ops both paths run the same emulator states: the stacks must match exactly."""
    actions = np.random.default_rng(1).integers(0, 4, size=(50, 1))
    fast = gym_env.create_atari_vector_env(name, 1, seed=0, noop_max=0)
    python = gym_env.create_atari_vector_env(name, 1, seed=0, noop_max=0, use_python_wrappers=True)
    assert fast.single_observation_space == python.single_observation_space
    assert fast.single_action_space == python.single_action_space
    first_fast, first_python = fast.reset(), python.reset()
    assert first_fast.dtype == first_python.dtype == np.uint8
    np.testing.assert_array_equal(first_fast, first_python)
    for step_actions in actions:
        fast_step, python_step = fast.step(step_actions), python.step(step_actions)
        np.testing.assert_array_equal(fast_step.observation, python_step.observation)
        np.testing.assert_array_equal(fast_step.raw_reward, python_step.raw_reward)
    fast.close()
    python.close()


@pytest.mark.slow
def test_python_and_cpp_paths_start_alike_with_noops():
    """With random no-op starts the RNGs differ, but the first screens are still nearly the same."""
    fast = gym_env.create_atari_vector_env("Breakout", 1, seed=0)
    python = gym_env.create_atari_vector_env("Breakout", 1, seed=0, use_python_wrappers=True)
    difference = np.abs(fast.reset().astype(np.float32) - python.reset().astype(np.float32)).mean()
    assert difference < 1.0
    fast.close()
    python.close()


@pytest.mark.slow
@pytest.mark.parametrize("use_python_wrappers", [False, True])
def test_atari_truncation_after_max_episode_frames(use_python_wrappers):
    """400 frames are 100 steps of 4 frames (on the Python path the reset's FIRE frame counts too)."""
    with gym_env.create_atari_vector_env(
        "Breakout", 1, seed=0, noop_max=0, max_episode_frames=400, use_python_wrappers=use_python_wrappers
    ) as env:
        first = env.reset()
        steps = _run(env, np.zeros((100, 1), dtype=np.int64))
    truncated = [step.truncated[0] for step in steps]
    assert truncated == [False] * 99 + [True]
    assert not any(step.terminated[0] for step in steps)
    np.testing.assert_array_equal(steps[-1].observation, first)  # Same start again: no noops, same FIRE.
    assert not np.array_equal(steps[-1].final_observation, first)


@pytest.mark.slow
def test_atari_render_only_on_the_python_path():
    with gym_env.create_atari_vector_env("Pong", 1, seed=0, use_python_wrappers=True, render=True) as env:
        env.reset()
        frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    with gym_env.create_atari_vector_env("Pong", 1, seed=0) as env:
        assert env.render() is None
    with pytest.raises(ValueError, match="render=True needs use_python_wrappers=True"):
        gym_env.create_atari_vector_env("Pong", 1, seed=0, render=True)


# ----------------------------------------------------------------------------------------------
# Dispatch, bad input, screenshots.


@pytest.mark.parametrize(
    "kind, name, observation_shape",
    [("classic", "Acrobot-v1", (6,)), ("continuous", "Pendulum-v1", (3,)), ("atari", "Pong", (4, 84, 84))],
)
def test_create_vector_env_dispatches_on_kind(kind, name, observation_shape):
    with gym_env.create_vector_env(kind, name, num_envs=2, seed=0) as env:
        assert env.reset().shape == (2, *observation_shape)


@pytest.mark.parametrize(
    "factory, name, valid_example",
    [
        (gym_env.create_classic_vector_env, "CartPole-v0", "CartPole-v1, LunarLander-v3"),
        (gym_env.create_classic_vector_env, "Pong", "MountainCar-v0, Acrobot-v1"),
        (gym_env.create_continuous_vector_env, "Hopper-v4", "Pendulum-v1"),
        (gym_env.create_continuous_vector_env, "CartPole-v1", "Hopper-v5"),
    ],
)
def test_unknown_names_give_one_line_naming_the_flag_and_choices(factory, name, valid_example):
    with pytest.raises(ValueError) as error:
        factory(name, 1, 0)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"--environment_name={name!r} is not a")
    assert valid_example in message


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: gym_env.create_classic_vector_env("CartPole-v1", 0, 0), "num_envs"),
        (lambda: gym_env.create_continuous_vector_env("Pendulum-v1", -1, 0), "num_envs"),
        (lambda: gym_env.create_atari_vector_env("Pong", 0, 0), "num_envs"),
        (lambda: gym_env.create_classic_vector_env("CartPole-v1", 1, -1), "seed"),
        (lambda: gym_env.create_atari_vector_env("Pong", 1, 0, frame_skip=0), "frame_skip"),
        (lambda: gym_env.create_atari_vector_env("Pong", 1, 0, noop_max=-1), "noop_max"),
        (lambda: gym_env.create_atari_vector_env("Pong", 1, 0, num_threads=0), "num_threads"),
        (lambda: gym_env.create_atari_vector_env("Pong", 1, 0, repeat_action_probability=1.5), "repeat_action_probability"),
        (
            lambda: gym_env.create_classic_vector_env("CartPole-v1", 1, 0, max_episode_steps=0),
            "max_episode_steps",
        ),
        (lambda: gym_env.create_vector_env("board_game", "Go", 1, 0), "kind"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, argument):
    with pytest.raises(ValueError, match=f"^{argument} must be"):
        call()


def test_actions_of_the_wrong_shape_raise_value_error():
    with gym_env.create_classic_vector_env("CartPole-v1", num_envs=2, seed=0) as env:
        env.reset()
        with pytest.raises(ValueError, match=r"actions must have shape \(2,\), got \(3,\)"):
            env.step(np.array([0, 1, 0]))


class ScriptedMontezuma:
    """Stands in for a Montezuma VectorEnvironment: scripted rooms after each step and episode ends."""

    num_envs = 2
    single_observation_space = single_action_space = None
    frames_per_step = 4

    def __init__(self, rooms, ends):
        self.rooms, self.ends, self.t = rooms, ends, 0
        self.current = np.array([1, 1])

    def reset(self):
        return np.zeros((2, 1))

    def ram_byte(self, address):
        assert address == gym_env.MONTEZUMA_ROOM_RAM_ADDRESS
        return self.current

    def step(self, actions):
        self.current = np.array(self.rooms[self.t])
        end = np.array(self.ends[self.t])
        self.t += 1
        zeros = np.zeros(2, dtype=np.float32)
        return gym_env.VectorStep(np.zeros((2, 1)), zeros, zeros, end, np.zeros(2, bool), np.zeros(2, bool), np.zeros((2, 1)))


def test_room_counter_counts_distinct_rooms_per_episode():
    # env 0 visits rooms 1, 0, 1, 4 and its episode ends at step 4 (the room read then is the next episode's 1);
    # env 1 stays in room 1 and ends at step 2.
    rooms = [(0, 1), (1, 1), (4, 1), (1, 1), (1, 1)]
    ends = [(False, False), (False, True), (False, False), (True, False), (False, False)]
    counter = gym_env.RoomCounter(ScriptedMontezuma(rooms, ends))
    counter.reset()
    for _ in range(5):
        counter.step(np.zeros(2, dtype=np.int64))
    np.testing.assert_array_equal(counter.take_counts(), [[0, 0], [0, 1], [0, 0], [3, 0], [0, 0]])


def test_environment_kind_and_montezuma():
    assert gym_env.environment_kind('classic', 'MiniGrid-DoorKey-5x5-v0') == 'minigrid'
    assert gym_env.environment_kind('classic', 'CartPole-v1') == 'classic'
    assert gym_env.environment_kind('atari', 'Pong') == 'atari'
    assert gym_env.is_montezuma_revenge('atari', 'MontezumaRevenge') and gym_env.is_montezuma_revenge('atari', 'ALE/MontezumaRevenge-v5')
    assert not gym_env.is_montezuma_revenge('atari', 'Pong') and not gym_env.is_montezuma_revenge('classic', 'CartPole-v1')
