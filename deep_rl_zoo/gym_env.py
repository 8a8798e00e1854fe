"""Vectors of environments behind one small interface.

Every factory returns a `VectorEnvironment`: `num_envs` environments stepped together with same-step
autoreset (where an episode ends, `step` already returns the first observation of the next one and keeps
the last one in `final_observation`). Two backends:

* ale_py's C++ `AtariVectorEnv`: the fast path for Atari training.
* gymnasium's `SyncVectorEnv`: classic control, continuous control, and Atari built from Python wrappers
  (evaluation and video, which need RGB frames).

Atari follows the DQN preprocessing (Mnih et al. 2015, "Human-level control through deep reinforcement
learning") on the no-sticky-action game (sticky actions, `repeat_action_probability`, are an option): random no-op starts, fire on reset where the game has FIRE, the
action repeated 4 frames with a max over the last two, 84x84 grayscale, a stack of 4 frames, rewards
sign-clipped for learning, and a 108,000-frame cap. Episodes are full games (Machado et al. 2018,
"Revisiting the Arcade Learning Environment"): a lost life is reported as `life_loss`, never as an
episode end, so a learner may treat it as terminal while trackers count whole games. On a game with FIRE,
the step after a lost life presses FIRE in place of the agent's action (see `VectorEnvironment`), so that
a policy that never fires (a greedy one in evaluation) still gets its next ball and ends the game.

The two Atari paths produce the same observations, pixel for pixel, for the same emulator state (both
resize with OpenCV's INTER_AREA and zero-pad the frame stack at reset). They differ in two details:
the no-op count at reset comes from different random generators (so one seed gives different starts on
the two paths), and the frame cap counts the FIRE and no-op frames of the reset on the Python path but
only the agent's frames on the C++ path (at most `noop_max + 1` frames in 108,000).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import ale_py
import gymnasium
import numpy as np
from ale_py.registration import rom_id_to_name
from ale_py.vector_env import AtariVectorEnv
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

gymnasium.register_envs(ale_py)

ENVIRONMENT_FLAG = "--environment_name"
CLASSIC_ENVIRONMENTS = ("CartPole-v1", "LunarLander-v3", "MountainCar-v0", "Acrobot-v1")
RENAMED_ENVIRONMENTS = {"LunarLander-v2": "LunarLander-v3"}
ATARI_EXAMPLES = "Pong, Breakout, Amidar, MontezumaRevenge"
MINIGRID_EXAMPLES = "MiniGrid-DoorKey-5x5-v0, MiniGrid-DoorKey-8x8-v0, MiniGrid-KeyCorridorS3R1-v0"
MONTEZUMA_ROOM_RAM_ADDRESS = 3  # Montezuma's Revenge keeps the number of the room on screen in RAM byte 3

_announced_renames: set[str] = set()


class VectorStep(NamedTuple):
    """What one `VectorEnvironment.step` returns; every field has the batch of environments first."""

    observation: np.ndarray  # [N, *obs_shape]; where an episode ended, the FIRST obs of the next one.
    reward: np.ndarray  # [N] float32 learning reward (sign-clipped on Atari when clip_reward=True).
    raw_reward: np.ndarray  # [N] float32 unclipped game score, for reporting.
    terminated: np.ndarray  # [N] bool: the MDP really terminated (game over on Atari, never a lost life).
    truncated: np.ndarray  # [N] bool: time limit reached.
    life_loss: np.ndarray  # [N] bool: a life was lost and the game goes on (Atari); else always False.
    final_observation: np.ndarray  # [N, *obs_shape]: the observation that followed the action within
    # its own episode: the last one where terminated | truncated, otherwise equal to `observation`.


class VectorEnvironment:
    """`num_envs` environments stepped together with same-step autoreset.

    Wraps a gymnasium `VectorEnv` created with `AutoresetMode.SAME_STEP` (ale_py's `AtariVectorEnv` or
    gymnasium's `SyncVectorEnv`) and adds reward clipping, life-loss detection, seeding and, on Atari games
    with FIRE, FIRE after a lost life.

    FIRE after a lost life (`fire_action`): games like Breakout wait for FIRE before they serve the next ball.
    The reset presses it (a frame of the reset, on both Atari paths), but a lost life is no reset: the episode
    goes on, and a policy that never fires (an argmax policy in evaluation) would stall until the frame cap.
    So where a step reports `life_loss`, that environment's next step plays `fire_action` in place of the
    action it is given. The C++ vector env cannot step one environment on its own, so the FIRE takes the next
    step rather than an extra frame; doing the same on the Python path keeps both paths alike, pixel for pixel.
    That FIRE step is an ordinary step of the episode: its `frames_per_step` frames count toward the frame cap
    and the episode's length, and its reward is kept in `reward` and `raw_reward` (the episode's return).
    The reset's FIRE frame differs: it belongs to the reset, and its reward is dropped with those of the no-op
    frames on both paths (ale_py's C++ reset drops it; `FireOnReset` does the same); at seed 0 it is 0 in every
    ALE game with FIRE but HauntedHouse (-1). The agent is not told that its action was replaced: `observe` gets the
    action it chose (one step in a life, at its start). Games without FIRE or without lives (Pong) are
    unchanged.
    """

    def __init__(
        self,
        vector_env: VectorEnv,
        seed: int,
        *,
        frames_per_step: int = 1,
        clip_reward: bool = False,
        render: bool = False,
        fire_action: int | None = None,
    ) -> None:
        """Wraps `vector_env`; env i is seeded with `seed + i` on the first `reset`.

        Args:
            vector_env: a gymnasium vector env in same-step autoreset mode.
            seed: seed of env 0 (env i gets `seed + i`) and of `single_action_space`.
            frames_per_step: emulator frames per agent step, for frames-per-second reporting.
            clip_reward: if True, `reward` is `sign(raw_reward)`.
            render: if True, `render()` returns env 0's RGB frame (env 0 must have render_mode="rgb_array").
            fire_action: the game's FIRE action, played on the step after a lost life (see the class
                docstring); None: never.
        """
        if vector_env.metadata.get("autoreset_mode") != AutoresetMode.SAME_STEP:
            raise ValueError("vector_env must use autoreset_mode=AutoresetMode.SAME_STEP")
        self.num_envs: int = vector_env.num_envs
        self.single_observation_space: gymnasium.Space = vector_env.single_observation_space
        self.single_action_space: gymnasium.Space = vector_env.single_action_space
        self.frames_per_step = frames_per_step
        self.single_action_space.seed(seed)
        self._vector_env = vector_env
        self._seed: int | None = seed
        self._clip_reward = clip_reward
        self._render = render
        self._lives = np.zeros(self.num_envs, dtype=np.int64)
        self.fire_action = fire_action
        self._fire_next = np.zeros(self.num_envs, dtype=bool)  # rows that lost a life on the last step

    def reset(self) -> np.ndarray:
        """Starts a new episode everywhere and returns the observations [N, *obs_shape].

        The first call seeds env i with `seed + i`; later calls continue the same random streams.
        """
        observation, info = self._vector_env.reset(seed=self._seed)
        self._seed = None
        self._lives = self._read_lives(info)
        self._fire_next[:] = False
        return observation

    def step(self, actions: np.ndarray) -> VectorStep:
        """Applies one action per environment: `actions` has shape [N, *action_shape]. An environment that lost a
        life on the previous step plays `fire_action` instead (when set)."""
        actions = self._check_actions(actions)
        if self._fire_next.any():
            actions = np.where(self._fire_next, self.fire_action, actions)
        observation, raw_reward, terminated, truncated, info = self._vector_env.step(actions)
        raw_reward = np.asarray(raw_reward, dtype=np.float32)
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        episode_over = terminated | truncated

        # Where an episode ended, `info["lives"]` already belongs to the next one, so only rows that go on
        # can show a lost life; a game's last life ends it and shows as `terminated`.
        lives = self._read_lives(info)
        life_loss = (lives < self._lives) & ~episode_over
        self._lives = lives
        if self.fire_action is not None:
            self._fire_next = life_loss.copy()

        final_observation = observation  # shared, not copied, on the (usual) steps where no episode ended
        if episode_over.any():
            final_observation = observation.copy()
            for row in np.flatnonzero(episode_over):
                final_observation[row] = info["final_obs"][row]

        reward = np.sign(raw_reward) if self._clip_reward else raw_reward.copy()
        return VectorStep(
            observation=observation,
            reward=reward,
            raw_reward=raw_reward,
            terminated=terminated,
            truncated=truncated,
            life_loss=life_loss,
            final_observation=final_observation,
        )

    def render(self) -> np.ndarray | None:
        """RGB frame [H, W, 3] of env 0 when created with render=True, else None."""
        if not self._render:
            return None
        return self._vector_env.envs[0].render()

    def ram_byte(self, address: int) -> np.ndarray:
        """Byte `address` of every Atari emulator's RAM [N] (e.g. `MONTEZUMA_ROOM_RAM_ADDRESS`); Atari built
        from Python wrappers only (the C++ vector env does not expose its RAM)."""
        envs = getattr(self._vector_env, "envs", None)
        if not envs or not hasattr(envs[0].unwrapped, "ale"):
            raise ValueError("ram_byte needs an Atari vector env built with use_python_wrappers=True")
        return np.array([env.unwrapped.ale.getRAM()[address] for env in envs], dtype=np.uint8)

    def close(self) -> None:
        """Releases the environments (and their emulator threads or renderers)."""
        self._vector_env.close()

    def __enter__(self) -> VectorEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _read_lives(self, info: dict[str, Any]) -> np.ndarray:
        if "lives" not in info:
            return np.zeros(self.num_envs, dtype=np.int64)
        return np.asarray(info["lives"], dtype=np.int64)

    def _check_actions(self, actions: np.ndarray) -> np.ndarray:
        actions = np.asarray(actions)
        expected_shape = (self.num_envs, *self.single_action_space.shape)
        if actions.shape != expected_shape:
            raise ValueError(f"actions must have shape {expected_shape}, got {actions.shape}")
        if isinstance(self.single_action_space, gymnasium.spaces.Discrete):
            return actions.astype(np.int64, copy=False)
        return actions.astype(self.single_action_space.dtype, copy=False)


def create_classic_vector_env(
    environment_name: str,
    num_envs: int,
    seed: int,
    render: bool = False,
    max_episode_steps: int | None = None,
) -> VectorEnvironment:
    """Classic-control vector env: CartPole-v1, LunarLander-v3 (or -v2), MountainCar-v0, Acrobot-v1.

    Args:
        environment_name: one of `CLASSIC_ENVIRONMENTS` or a name in `RENAMED_ENVIRONMENTS`.
        num_envs: number of environments, at least 1.
        seed: env i gets `seed + i`.
        render: if True, `render()` returns env 0's RGB frame.
        max_episode_steps: time limit replacing the registered one (e.g. 500 for CartPole-v1).
    """
    _check_common_arguments(num_envs, seed)
    environment_name = _follow_rename(environment_name)
    if environment_name not in CLASSIC_ENVIRONMENTS:
        raise ValueError(
            f"{ENVIRONMENT_FLAG}={environment_name!r} is not a classic-control environment; "
            f"valid choices: {', '.join(CLASSIC_ENVIRONMENTS)}"
        )
    if render:  # classic control draws with pygame; headless, it needs SDL's dummy driver (else it prints an error)
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    return _gymnasium_vector_env(environment_name, num_envs, seed, render, max_episode_steps)


def continuous_environment_names() -> tuple[str, ...]:
    """Pendulum-v1 and every registered gymnasium MuJoCo v5 task."""
    mujoco_tasks = sorted(
        name
        for name, spec in gymnasium.envs.registry.items()
        if isinstance(spec.entry_point, str)
        and spec.entry_point.startswith("gymnasium.envs.mujoco")
        and spec.version == 5
    )
    return ("Pendulum-v1", *mujoco_tasks)


def create_continuous_vector_env(
    environment_name: str,
    num_envs: int,
    seed: int,
    render: bool = False,
    max_episode_steps: int | None = None,
) -> VectorEnvironment:
    """Continuous-control vector env: Pendulum-v1 or a MuJoCo v5 task (Hopper-v5, HalfCheetah-v5, ...).

    Observations are float32. Rendering MuJoCo without a display uses EGL: `MUJOCO_GL=egl` is set
    (unless already set) when render=True, before the first MuJoCo renderer of the process is made.

    Args:
        environment_name: one of `continuous_environment_names()`.
        num_envs: number of environments, at least 1.
        seed: env i gets `seed + i`.
        render: if True, `render()` returns env 0's RGB frame.
        max_episode_steps: time limit replacing the registered one (1000 for MuJoCo, 200 for Pendulum).
    """
    _check_common_arguments(num_envs, seed)
    valid_names = continuous_environment_names()
    if environment_name not in valid_names:
        raise ValueError(
            f"{ENVIRONMENT_FLAG}={environment_name!r} is not a continuous-control environment; "
            f"valid choices: {', '.join(valid_names)}"
        )
    if render:  # MuJoCo renders with EGL headless; Pendulum draws with pygame, whose SDL needs its dummy driver
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    return _gymnasium_vector_env(environment_name, num_envs, seed, render, max_episode_steps)


def atari_rom_id(environment_name: str) -> str:
    """ALE rom id of an Atari name: `Pong`, `pong`, `ALE/Pong-v5`, `PongNoFrameskip-v4` -> `pong`.

    Case and underscores do not matter: `MontezumaRevenge` and `montezuma_revenge` both give
    `montezuma_revenge`. Raises ValueError for names that are not a single-player ALE game.
    """
    match = re.fullmatch(r"ALE/(\w+)-v5|(\w+)NoFrameskip-v4|(\w+)", environment_name)
    game = next((group for group in match.groups() if group), "") if match else ""
    rom_id = _atari_rom_ids().get(game.replace("_", "").lower())
    if rom_id is None:
        raise ValueError(
            f"{ENVIRONMENT_FLAG}={environment_name!r} is not an Atari game; valid choices: any ALE game, "
            f"e.g. {ATARI_EXAMPLES} (also written ALE/Pong-v5 or PongNoFrameskip-v4)"
        )
    return rom_id


def canonical_atari_name(environment_name: str) -> str:
    """The one name of an Atari game, whichever way it is written: `ALE/Pong-v5`, `PongNoFrameskip-v4`, `pong` ->
    `Pong`; `montezuma_revenge` -> `MontezumaRevenge` (ale-py's name of the rom)."""
    return rom_id_to_name(atari_rom_id(environment_name))


def create_atari_vector_env(
    environment_name: str,
    num_envs: int,
    seed: int,
    *,
    frame_skip: int = 4,
    frame_stack: int = 4,
    frame_size: int = 84,
    noop_max: int = 30,
    max_episode_frames: int = 108_000,
    clip_reward: bool = True,
    repeat_action_probability: float = 0.0,
    use_python_wrappers: bool = False,
    render: bool = False,
    num_threads: int | None = None,
) -> VectorEnvironment:
    """Atari vector env with DQN preprocessing; observations are uint8 [frame_stack, frame_size, frame_size].

    Args:
        environment_name: an ALE game, e.g. `Pong`, `Breakout`, `ALE/Pong-v5`, `PongNoFrameskip-v4`.
        num_envs: number of environments, at least 1.
        seed: env i gets `seed + i`.
        frame_skip: emulator frames per agent step (the action is repeated, max over the last two frames).
        frame_stack: number of most recent frames in an observation.
        frame_size: height and width of the grayscale frames.
        noop_max: at most this many random no-op frames start each episode (0: none).
        max_episode_frames: emulator frames after which an episode is truncated (108,000 = 30 minutes).
        clip_reward: if True, `reward` is `sign(raw_reward)`.
        repeat_action_probability: sticky actions (Machado et al. 2018): each emulator frame repeats the previous
            action with this probability (ALE v5's default is 0.25; 0, the default here, is the deterministic game).
        use_python_wrappers: build from gymnasium wrappers (needed for render) instead of the C++ vector env.
        render: if True, `render()` returns env 0's full RGB frame; needs use_python_wrappers=True.
        num_threads: C++ worker threads; None means min(num_envs, available CPU cores), which was the
            fastest choice measured for 8 Breakout envs on 2 cores (about 4,000 steps/s against 2,200
            with 1 thread and 3,400 with ale_py's default, num_threads=0).
    """
    _check_common_arguments(num_envs, seed)
    for name, value, minimum in (
        ("frame_skip", frame_skip, 1),
        ("frame_stack", frame_stack, 1),
        ("frame_size", frame_size, 1),
        ("noop_max", noop_max, 0),
        ("max_episode_frames", max_episode_frames, 1),
    ):
        _check_at_least(name, value, minimum)
    if not 0.0 <= repeat_action_probability <= 1.0:
        raise ValueError(f"repeat_action_probability must be in [0, 1], got {repeat_action_probability}")
    rom_id = atari_rom_id(environment_name)

    if use_python_wrappers:
        if num_threads is not None:
            raise ValueError("num_threads only applies to the C++ vector env (use_python_wrappers=False)")
        make_env_fns = [
            functools.partial(
                _make_python_atari_env,
                rom_id,
                frame_skip=frame_skip,
                frame_stack=frame_stack,
                frame_size=frame_size,
                noop_max=noop_max,
                max_episode_frames=max_episode_frames,
                repeat_action_probability=repeat_action_probability,
                render_mode="rgb_array" if render and index == 0 else None,
            )
            for index in range(num_envs)
        ]
        vector_env: VectorEnv = SyncVectorEnv(make_env_fns, autoreset_mode=AutoresetMode.SAME_STEP)
    else:
        if render:
            raise ValueError(
                "render=True needs use_python_wrappers=True (the C++ Atari vector env keeps no RGB frames)"
            )
        if num_threads is None:
            num_threads = min(num_envs, len(os.sched_getaffinity(0)))
        _check_at_least("num_threads", num_threads, 1)
        vector_env = AtariVectorEnv(
            rom_id,
            num_envs,
            num_threads=num_threads,
            max_num_frames_per_episode=max_episode_frames,
            repeat_action_probability=repeat_action_probability,
            full_action_space=False,
            autoreset_mode=AutoresetMode.SAME_STEP,
            img_height=frame_size,
            img_width=frame_size,
            grayscale=True,
            stack_num=frame_stack,
            frameskip=frame_skip,
            maxpool=True,
            noop_max=noop_max,
            episodic_life=False,
            life_loss_info=False,
            reward_clipping=False,
            use_fire_reset=True,
        )
    return VectorEnvironment(
        vector_env,
        seed,
        frames_per_step=frame_skip,
        clip_reward=clip_reward,
        render=render,
        fire_action=_fire_action(vector_env),
    )


def _fire_action(vector_env: VectorEnv) -> int | None:
    """Index of FIRE in an Atari vector env's (minimal) action set, or None where the game has no FIRE."""
    if isinstance(vector_env, AtariVectorEnv):
        meanings = [action.name for action in vector_env.ale.get_action_set()]
    else:
        meanings = vector_env.envs[0].unwrapped.get_action_meanings()
    return meanings.index("FIRE") if "FIRE" in meanings else None


def is_minigrid(environment_name: str) -> bool:
    """Whether `environment_name` names a MiniGrid task (`MiniGrid-...`)."""
    return environment_name.startswith("MiniGrid-")


def environment_kind(kind: str, environment_name: str) -> str:
    """The kind of environment a run script's `kind` means for `environment_name`: 'classic' also takes MiniGrid."""
    return "minigrid" if kind == "classic" and is_minigrid(environment_name) else kind


def is_montezuma_revenge(kind: str, environment_name: str) -> bool:
    """Whether an environment of `kind` named `environment_name` is Montezuma's Revenge (whose rooms `RoomCounter`
    counts)."""
    return kind == "atari" and atari_rom_id(environment_name) == "montezuma_revenge"


def create_minigrid_vector_env(
    environment_name: str, num_envs: int, seed: int, render: bool = False
) -> VectorEnvironment:
    """MiniGrid vector env (the `minigrid` package, Chevalier-Boisvert et al. 2023): sparse-reward grid worlds.

    An observation is the agent's partial view, uint8 [3, 7, 7]: per cell of the 7x7 square ahead of the agent
    the object, colour and state indices (the mission string is dropped). The reward is 1 - 0.9 * steps / max
    steps on reaching the goal, else 0; an episode is truncated after the task's `max_steps`. `render()` draws
    the whole grid (RGB) for videos.

    Args:
        environment_name: a registered `MiniGrid-...` id, e.g. MiniGrid-DoorKey-8x8-v0.
        num_envs: number of environments, at least 1.
        seed: env i gets `seed + i` (each reset draws a new layout from the env's seeded generator).
        render: if True, `render()` returns env 0's RGB frame.
    """
    _check_common_arguments(num_envs, seed)
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import minigrid  # registers the MiniGrid-* ids  # pylint: disable=import-outside-toplevel,unused-import

    if not is_minigrid(environment_name) or environment_name not in gymnasium.envs.registry:
        raise ValueError(
            f"{ENVIRONMENT_FLAG}={environment_name!r} is not a MiniGrid environment; e.g. {MINIGRID_EXAMPLES}"
        )
    make_env_fns = [
        functools.partial(_make_minigrid_env, environment_name, "rgb_array" if render and index == 0 else None)
        for index in range(num_envs)
    ]
    vector_env = SyncVectorEnv(make_env_fns, autoreset_mode=AutoresetMode.SAME_STEP)
    return VectorEnvironment(vector_env, seed, render=render)


def _make_minigrid_env(environment_name: str, render_mode: str | None) -> gymnasium.Env:
    """One MiniGrid env whose observation is its partial view, channels first: uint8 [3, 7, 7]."""
    from minigrid.wrappers import ImgObsWrapper  # pylint: disable=import-outside-toplevel

    env = ImgObsWrapper(gymnasium.make(environment_name, render_mode=render_mode))
    height, width, channels = env.observation_space.shape
    space = gymnasium.spaces.Box(low=0, high=255, shape=(channels, height, width), dtype=np.uint8)
    return gymnasium.wrappers.TransformObservation(env, lambda image: np.ascontiguousarray(image.transpose(2, 0, 1)), space)


def create_vector_env(
    kind: str, environment_name: str, num_envs: int, seed: int, **kwargs: Any
) -> VectorEnvironment:
    """Creates a vector env of `kind` ('classic', 'atari', 'continuous' or 'minigrid'); kwargs go to its factory."""
    factories: dict[str, Callable[..., VectorEnvironment]] = {
        "classic": create_classic_vector_env,
        "atari": create_atari_vector_env,
        "continuous": create_continuous_vector_env,
        "minigrid": create_minigrid_vector_env,
    }
    if kind not in factories:
        raise ValueError(f"kind must be one of {', '.join(factories)}, got {kind!r}")
    try:
        return factories[kind](environment_name, num_envs, seed, **kwargs)
    except ValueError as error:
        hint = _right_script_hint(kind, environment_name)
        if hint:
            raise ValueError(f"{error}. {hint}") from None
        raise


def _kind_of(environment_name: str) -> str | None:
    """The kind of environment `environment_name` names ('classic', 'continuous', 'minigrid', 'atari'), or None."""
    if _follow_rename(environment_name) in CLASSIC_ENVIRONMENTS:
        return "classic"
    if environment_name in continuous_environment_names():
        return "continuous"
    if is_minigrid(environment_name):
        return "minigrid"
    try:
        atari_rom_id(environment_name)
    except ValueError:
        return None
    return "atari"


def _right_script_hint(kind: str, environment_name: str) -> str:
    """Which run script takes `environment_name` when a script of `kind` was given it ("" when none applies)."""
    other = _kind_of(environment_name)
    if other is None or other == kind:
        return ""
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    parts = main_spec.name.split(".") if main_spec is not None else []
    agent = parts[1] if len(parts) == 3 and parts[0] == "deep_rl_zoo" else "<agent>"
    if other == "continuous":
        return f"{environment_name} has continuous actions: PPO takes them (python -m deep_rl_zoo.ppo.run_continuous --environment_name={environment_name})"
    if other == "atari":
        return f"{environment_name} is an Atari game: use python -m deep_rl_zoo.{agent}.run_atari --environment_name={environment_name}"
    if other == "minigrid":
        return f"{environment_name} is a MiniGrid task: the exploration agents' run_classic takes it (python -m deep_rl_zoo.<agent>.run_classic with ppo_icm, ppo_rnd, r2d2, ngu or agent57)"
    return f"{environment_name} is a classic-control task: use python -m deep_rl_zoo.{agent}.run_classic --environment_name={environment_name}"


class FireOnReset(gymnasium.Wrapper):
    """Presses FIRE for one step after each reset, for games that wait for it (e.g. Breakout's ball).

    Wrap the frameskip=1 emulator with it, under the frame-skip wrapper, so that it costs one emulator
    frame as in ale_py's C++ vector env; like that env's reset, it drops the FIRE frame's reward (at seed 0,
    0 in every ALE game with FIRE but HauntedHouse). FIRE after a lost life is not pressed here but by
    `VectorEnvironment`, the same way on both Atari paths.
    """

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._fire_action = env.unwrapped.get_action_meanings().index("FIRE")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self.env.reset(seed=seed, options=options)
        observation, _, _, _, info = self.env.step(self._fire_action)
        return observation, info


def _check_at_least(name: str, value: int, minimum: int) -> None:
    if not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_common_arguments(num_envs: int, seed: int) -> None:
    _check_at_least("num_envs", num_envs, 1)
    _check_at_least("seed", seed, 0)


def _follow_rename(environment_name: str) -> str:
    """Maps an old environment name to its current one, with a one-line notice the first time."""
    if environment_name not in RENAMED_ENVIRONMENTS:
        return environment_name
    current_name = RENAMED_ENVIRONMENTS[environment_name]
    if environment_name not in _announced_renames:
        _announced_renames.add(environment_name)
        print(f"Note: {environment_name} is now {current_name} in gymnasium; using it.", file=sys.stderr)
    return current_name


@functools.cache
def _atari_rom_ids() -> dict[str, str]:
    """Rom ids of the single-player ALE games (those with an `ALE/<Game>-v5` id), keyed without "_"."""
    return {
        rom_id.replace("_", ""): rom_id
        for rom_id in ale_py.roms.get_all_rom_ids()
        if f"ALE/{rom_id_to_name(rom_id)}-v5" in gymnasium.envs.registry
    }


def _make_float32_env(
    environment_name: str, render_mode: str | None, max_episode_steps: int | None
) -> gymnasium.Env:
    """One gymnasium env whose Box observations are float32."""
    env = gymnasium.make(environment_name, render_mode=render_mode, max_episode_steps=max_episode_steps)
    space = env.observation_space
    if isinstance(space, gymnasium.spaces.Box) and space.dtype != np.float32:
        float32_space = gymnasium.spaces.Box(
            low=space.low.astype(np.float32), high=space.high.astype(np.float32), dtype=np.float32
        )
        to_float32 = functools.partial(np.asarray, dtype=np.float32)
        env = gymnasium.wrappers.TransformObservation(env, to_float32, float32_space)
    return env


def _gymnasium_vector_env(
    environment_name: str, num_envs: int, seed: int, render: bool, max_episode_steps: int | None
) -> VectorEnvironment:
    if max_episode_steps is not None:
        _check_at_least("max_episode_steps", max_episode_steps, 1)
    make_env_fns = [
        functools.partial(
            _make_float32_env,
            environment_name,
            render_mode="rgb_array" if render and index == 0 else None,
            max_episode_steps=max_episode_steps,
        )
        for index in range(num_envs)
    ]
    vector_env = SyncVectorEnv(make_env_fns, autoreset_mode=AutoresetMode.SAME_STEP)
    return VectorEnvironment(vector_env, seed, render=render)


def _make_python_atari_env(
    rom_id: str,
    *,
    frame_skip: int,
    frame_stack: int,
    frame_size: int,
    noop_max: int,
    max_episode_frames: int,
    repeat_action_probability: float,
    render_mode: str | None,
) -> gymnasium.Env:
    """One Atari env from gymnasium wrappers, matching ale_py's C++ vector env preprocessing."""
    env = gymnasium.make(
        f"ALE/{rom_id_to_name(rom_id)}-v5",
        frameskip=1,
        repeat_action_probability=repeat_action_probability,
        full_action_space=False,
        max_num_frames_per_episode=max_episode_frames,
        render_mode=render_mode,
    )
    if "FIRE" in env.unwrapped.get_action_meanings():
        env = FireOnReset(env)
    env = gymnasium.wrappers.AtariPreprocessing(
        env,
        noop_max=noop_max,
        frame_skip=frame_skip,
        screen_size=frame_size,
        terminal_on_life_loss=False,
        grayscale_obs=True,
        scale_obs=False,
    )
    return gymnasium.wrappers.FrameStackObservation(env, frame_stack, padding_type="zero")


class ObscuredObservations:
    """A `VectorEnvironment` whose observations are each replaced by zeros with probability `probability`.

    The flickering Atari of DRQN (Hausknecht & Stone 2015, section 5): at every step each environment's
    screen is either fully shown or fully obscured, so a single frame no longer tells the state. Draws are
    independent per environment and step (also for the `final_observation` of an episode's end), from a
    generator seeded with `seed`. Everything else passes through.
    """

    def __init__(self, env: VectorEnvironment, probability: float, seed: int) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"--obscure_probability must be in [0, 1], got {probability}")
        self.env = env
        self.probability = probability
        self.num_envs = env.num_envs
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.frames_per_step = env.frames_per_step
        self._random = np.random.default_rng(seed)

    def _obscure(self, observation: np.ndarray) -> np.ndarray:
        hidden = self._random.random(len(observation)) < self.probability
        hidden = hidden.reshape((-1,) + (1,) * (observation.ndim - 1))
        return np.where(hidden, np.zeros_like(observation), observation)

    def reset(self) -> np.ndarray:
        return self._obscure(self.env.reset())

    def step(self, actions: np.ndarray) -> VectorStep:
        step = self.env.step(actions)
        observation = self._obscure(step.observation)
        final_observation = observation
        episode_over = step.terminated | step.truncated
        if episode_over.any():
            final_observation = observation.copy()
            final_observation[episode_over] = self._obscure(step.final_observation[episode_over])
        return step._replace(observation=observation, final_observation=final_observation)

    def render(self) -> np.ndarray | None:
        """The unobscured RGB frame of env 0 (see `VectorEnvironment.render`)."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> ObscuredObservations:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class RoomCounter:
    """A Montezuma's Revenge `VectorEnvironment` (Python wrappers) that counts the distinct rooms (RAM byte
    `MONTEZUMA_ROOM_RAM_ADDRESS`) of each episode; `take_counts()` returns, per step since the last call, the room
    count of the episodes that ended at it (0 elsewhere). The room read after a step that ends an episode belongs to
    the next one."""

    def __init__(self, env: VectorEnvironment):
        self.env = env
        self.num_envs = env.num_envs
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.frames_per_step = env.frames_per_step
        self._rooms: list[set[int]] = [set() for _ in range(env.num_envs)]
        self._counts: list[np.ndarray] = []

    def reset(self) -> np.ndarray:
        observation = self.env.reset()
        self._rooms = [{int(room)} for room in self.env.ram_byte(MONTEZUMA_ROOM_RAM_ADDRESS)]
        return observation

    def step(self, actions: np.ndarray) -> VectorStep:
        step = self.env.step(actions)
        rooms = self.env.ram_byte(MONTEZUMA_ROOM_RAM_ADDRESS)
        counts = np.zeros(self.num_envs, dtype=np.float32)
        for index in np.flatnonzero(step.terminated | step.truncated):
            counts[index] = len(self._rooms[index])
            self._rooms[index] = set()
        for index, room in enumerate(rooms):
            self._rooms[index].add(int(room))
        self._counts.append(counts)
        return step

    def take_counts(self) -> np.ndarray:
        counts, self._counts = np.stack(self._counts), []
        return counts

    def close(self) -> None:
        self.env.close()
