"""Save, load and find training checkpoints.

A checkpoint is one file holding everything needed to resume a run or evaluate an agent: the agent's
state (network and optimizer state dicts, ...), its counters (env steps, learner steps, iteration), the
run's flags, the library versions that wrote it and, optionally, `extra` state of the run (the experiment's
bookkeeping, a replay memory).

An experiment's checkpoints are named after the agent and the environment (see `experiment.py`):
  <AGENT>_<env>_<iteration>.ckpt               a milestone: written when an iteration ends
  <AGENT>_<env>_<iteration>_at<env_steps>.ckpt  a periodic one: written during iteration <iteration>
  <AGENT>_<env>_best.ckpt                       the best one so far by the run's metric

Writes are atomic: the file is written to a temporary file in the same directory, synced to disk and
then renamed over the target, so a crash leaves either the old checkpoint or the new one, never a
partial file. Loads never execute pickled code: `torch.load(..., weights_only=True)` accepts only
tensors and plain Python values, and every failure becomes a one-line `CheckpointError`.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import pickle
import platform
import re
import tempfile
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import torch

import deep_rl_zoo

FORMAT_NAME = "deep_rl_zoo_checkpoint"
FORMAT_VERSION = 1
CHECKPOINT_SUFFIX = ".ckpt"

# Old environment names users know, mapped to the name of the same environment today.
_ENVIRONMENT_ALIASES = {"LunarLander-v2": "LunarLander-v3"}

_REQUIRED_KEYS = (
    "format",
    "format_version",
    "agent_name",
    "environment_name",
    "iteration",
    "state",
    "counters",
    "flags",
    "versions",
    "created_at",
)
_VERSIONED_PACKAGES = ("torch", "numpy", "gymnasium", "ale-py", "deep_rl_zoo")
_FLAG_SCALAR_TYPES = (str, int, float, bool, type(None))
_STATE_LEAF_TYPES = (torch.Tensor, str, int, float, bool, type(None), torch.Size, torch.dtype)


class CheckpointError(Exception):
    """A checkpoint could not be used; the message is one line naming the file and the fix."""


def _file_safe(name: str) -> str:
    """Replaces path separators (as in 'ALE/Pong-v5') so a name can be part of a file name."""
    return name.replace("/", "-").replace("\\", "-")


def _check_identity(agent_name: str, environment_name: str, iteration: int) -> None:
    """The checks shared by file names and saved checkpoints: what identifies a checkpoint is well formed."""
    if not agent_name:
        raise ValueError("agent_name must be a non-empty string")
    if not environment_name:
        raise ValueError("environment_name must be a non-empty string")
    if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0:
        raise ValueError(f"iteration must be an integer >= 0, got {iteration!r}")


def checkpoint_file_name(agent_name: str, environment_name: str, iteration: int) -> str:
    """Returns the checkpoint file name of one iteration, e.g. 'PPO_Breakout_0.ckpt'."""
    _check_identity(agent_name, environment_name, iteration)
    return f"{_file_safe(agent_name)}_{_file_safe(environment_name)}_{iteration}{CHECKPOINT_SUFFIX}"


def periodic_file_name(agent_name: str, environment_name: str, iteration: int, env_steps: int) -> str:
    """Returns the name of a checkpoint written during an iteration, e.g. 'PPO_Breakout_3_at140000.ckpt'."""
    _check_identity(agent_name, environment_name, iteration)
    return f"{_file_safe(agent_name)}_{_file_safe(environment_name)}_{iteration}_at{int(env_steps)}{CHECKPOINT_SUFFIX}"


def best_file_name(agent_name: str, environment_name: str) -> str:
    """Returns the name of the best checkpoint of a run, e.g. 'PPO_Breakout_best.ckpt'."""
    _check_identity(agent_name, environment_name, 0)
    return f"{_file_safe(agent_name)}_{_file_safe(environment_name)}_best{CHECKPOINT_SUFFIX}"


class CheckpointFile(NamedTuple):
    """A milestone or periodic checkpoint found in a directory; `order` sorts them by the time they were written."""

    path: str
    periodic: bool
    iteration: int
    env_steps: int  # -1 for a milestone (its name does not say)

    @property
    def order(self) -> tuple[int, int, int]:
        # Every periodic checkpoint of iteration i comes before the milestone that ends iteration i.
        return (self.iteration, 0 if self.periodic else 1, self.env_steps)


def list_checkpoints(checkpoint_dir: str, agent_name: str, environment_name: str) -> list[CheckpointFile]:
    """The milestone and periodic checkpoints of this agent and environment in `checkpoint_dir`, oldest first."""
    if not os.path.isdir(checkpoint_dir):
        return []
    pattern = re.compile(
        re.escape(f"{_file_safe(agent_name)}_{_file_safe(environment_name)}_")
        + r"(\d+)(?:_at(\d+))?"
        + re.escape(CHECKPOINT_SUFFIX)
    )
    found = []
    for name in os.listdir(checkpoint_dir):
        match = pattern.fullmatch(name)
        if match:
            periodic = match.group(2) is not None
            found.append(
                CheckpointFile(os.path.join(checkpoint_dir, name), periodic, int(match.group(1)), int(match.group(2)) if periodic else -1)
            )
    return sorted(found, key=lambda file: file.order)


def _validate_flags(flags: Mapping[str, Any]) -> None:
    """Checks flags hold only str/int/float/bool/None or lists of those, so they load without pickling code."""
    if not isinstance(flags, Mapping):
        raise ValueError(f"flags must be a dict of flag name to value, got {type(flags).__name__}")
    for name, value in flags.items():
        if not isinstance(name, str):
            raise ValueError(f"flags keys must be flag names (str), got {name!r}")
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, _FLAG_SCALAR_TYPES):
                raise ValueError(
                    f"flags[{name!r}] must be str, int, float, bool, None or a list of those, "
                    f"got {type(item).__name__}"
                )


def _validate_counters(counters: Mapping[str, Any]) -> None:
    """Checks counters map names to int or float values."""
    if not isinstance(counters, Mapping):
        raise ValueError(f"counters must be a dict of counter name to number, got {type(counters).__name__}")
    for name, value in counters.items():
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"counters must map str names to int or float values, got {name!r}: {value!r}")


def _validate_state(value: Any, where: str = "state") -> None:
    """Checks state is nested dicts/lists/tuples of tensors and plain values, which weights_only loading accepts."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise ValueError(f"{where} keys must be str or int, got {key!r}")
            _validate_state(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        for index, item in enumerate(value):
            _validate_state(item, f"{where}[{index}]")
    elif not isinstance(value, _STATE_LEAF_TYPES):
        raise ValueError(
            f"{where} must hold only tensors, str, int, float, bool, None and dicts/lists/tuples of those, "
            f"got {type(value).__name__} (convert numpy arrays with torch.as_tensor)"
        )


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that shape a checkpoint; None for any that is not installed."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in _VERSIONED_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    if versions["deep_rl_zoo"] is None:
        versions["deep_rl_zoo"] = getattr(deep_rl_zoo, "__version__", None)
    return versions


def _fsync_directory(directory: str) -> None:
    """Makes a rename inside `directory` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        directory_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory_fd)
    except OSError:
        pass
    finally:
        os.close(directory_fd)


def save_checkpoint(
    path: str,
    *,
    agent_name: str,
    environment_name: str,
    iteration: int,
    state: dict,
    counters: dict,
    flags: dict,
    extra: dict | None = None,
) -> str:
    """Atomically writes a checkpoint to `path` (creating its directory) and returns `path`.

    Args:
      path: the checkpoint file to write, usually `checkpoint_dir/checkpoint_file_name(...)`.
      agent_name: the agent that wrote it, e.g. 'PPO'.
      environment_name: the environment it was trained on, e.g. 'Breakout'.
      iteration: the training iteration just finished.
      state: e.g. {"network": net.state_dict(), "optimizer": optimizer.state_dict()}; nested dicts, lists
        and tuples of tensors and plain values.
      counters: e.g. {"env_steps": 4000, "learner_steps": 100, "iteration": 0}.
      flags: the run's flag values: str, int, float, bool, None or lists of those.
      extra: optional state of the run besides the agent's, e.g. {"experiment": {...}, "replay": {...}}; the
        same types as `state`. Loading returns it under "extra" ({} for checkpoints written without it).
    """
    path = os.fspath(path)
    if not path:
        raise ValueError("path must be the checkpoint file to write, got an empty string")
    _check_identity(agent_name, environment_name, iteration)
    if not isinstance(state, Mapping):
        raise ValueError(f"state must be a dict such as {{'network': state_dict}}, got {type(state).__name__}")
    _validate_state(state)
    _validate_counters(counters)
    _validate_flags(flags)
    if extra is not None:
        _validate_state(extra, "extra")

    payload = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "agent_name": agent_name,
        "environment_name": environment_name,
        "iteration": iteration,
        "state": dict(state),
        "counters": dict(counters),
        "flags": dict(flags),
        "versions": library_versions(),
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "extra": dict(extra or {}),
    }

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # The temporary name ends in '.ckpt.tmp<random>' so it never looks like a finished checkpoint.
    temp_fd, temp_path = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".tmp")
    try:
        with os.fdopen(temp_fd, "wb") as temp_file:
            torch.save(payload, temp_file)
            temp_file.flush()
            os.fsync(temp_file.fileno())
        os.chmod(temp_path, 0o644)
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise
    _fsync_directory(directory)
    return path


def _same_environment(left: str, right: str) -> bool:
    """Compares environment names after mapping old aliases (LunarLander-v2) to today's names; the ways of writing
    one Atari game (`Pong`, `ALE/Pong-v5`, `PongNoFrameskip-v4`) are one environment."""
    if _ENVIRONMENT_ALIASES.get(left, left) == _ENVIRONMENT_ALIASES.get(right, right):
        return True
    from deep_rl_zoo import gym_env  # only for names that differ: gym_env loads the emulator

    try:
        return gym_env.canonical_atari_name(left) == gym_env.canonical_atari_name(right)
    except ValueError:  # not Atari games
        return False


def _read_payload(path: str, map_location: Any) -> Any:
    """Loads the file with the weights-only unpickler, turning every failure into a CheckpointError."""
    try:
        with warnings.catch_warnings():
            # Plain pickle files make torch warn about their protocol before they are refused or checked.
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        unsafe_global = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        if unsafe_global:
            raise CheckpointError(
                f"checkpoint {path} holds Python objects, not only tensors and plain values "
                f"({unsafe_global.group(1)}); it was refused because loading it could run code: "
                f"use a .ckpt file written by Deep RL Zoo training"
            ) from None
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a checkpoint (cannot be unpickled): "
            f"use a .ckpt file written by Deep RL Zoo training"
        ) from None
    except PermissionError:
        raise CheckpointError(f"checkpoint {path} cannot be read (permission denied): fix its permissions") from None
    except Exception as error:  # pylint: disable=broad-except
        # A damaged file can fail anywhere in torch's zip reader or legacy unpickler; any failure means corrupt.
        reason = "file is empty" if isinstance(error, EOFError) else type(error).__name__
        raise CheckpointError(
            f"checkpoint {path} is truncated or corrupt ({reason}): use an older checkpoint or train again"
        ) from None


def _check_payload(path: str, payload: Any) -> None:
    """Checks the loaded object is a Deep RL Zoo checkpoint of the format this version reads."""
    not_ours = f"{path} is not a Deep RL Zoo checkpoint"
    if not isinstance(payload, dict) or payload.get("format") != FORMAT_NAME:
        raise CheckpointError(f"{not_ours}: pass a .ckpt file written by Deep RL Zoo training")
    if payload.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {payload.get('format_version')!r} but this Deep RL Zoo "
            f"reads version {FORMAT_VERSION}: use the Deep RL Zoo version that wrote it"
        )
    missing = [key for key in _REQUIRED_KEYS if key not in payload]
    if missing:
        raise CheckpointError(f"{not_ours} (missing {', '.join(missing)}): pass a complete .ckpt file")
    payload.setdefault("extra", {})  # checkpoints written before `extra` existed
    for key in ("state", "counters", "flags", "versions", "extra"):
        if not isinstance(payload[key], dict):
            raise CheckpointError(f"{not_ours} ({key} is not a dict): pass a .ckpt file written by training")


def load_checkpoint(
    path: str | None,
    *,
    agent_name: str | tuple[str, ...] | None = None,
    environment_name: str | None = None,
    map_location: Any = "cpu",
) -> dict:
    """Safely loads a checkpoint written by `save_checkpoint`.

    Args:
      path: the .ckpt file (usually the --load_checkpoint_file flag).
      agent_name: when given, the checkpoint must have been written by this agent (or one of these agents).
      environment_name: when given, the checkpoint must be for this environment ('LunarLander-v2' and
        'LunarLander-v3' count as the same).
      map_location: passed to `torch.load`, e.g. 'cpu' or 'cuda:0'.

    Returns:
      A dict with keys agent_name, environment_name, iteration, state, counters, flags, versions,
      created_at, extra, format and format_version.

    Raises:
      CheckpointError: with one line naming the file and the fix, for an empty or missing path, a
        directory, a truncated or corrupt file, a file holding arbitrary Python objects, a file that is
        not a Deep RL Zoo checkpoint, or an agent or environment that differs from the one asked for.
    """
    if path is None or not os.fspath(path).strip():
        raise CheckpointError("--load_checkpoint_file is empty: pass the path of a .ckpt file written by training")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path} is a directory: pass the path of a .ckpt file inside it")
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint {path} does not exist: check the path of the .ckpt file")

    payload = _read_payload(path, map_location)
    _check_payload(path, payload)

    agent_names = (agent_name,) if isinstance(agent_name, str) else agent_name
    if agent_names is not None and payload["agent_name"] not in agent_names:
        expected = " or ".join(agent_names)
        raise CheckpointError(
            f"checkpoint {path} was written by agent {payload['agent_name']}, not {expected}: "
            f"pass a checkpoint written by {expected}"
        )
    if environment_name is not None and not _same_environment(payload["environment_name"], environment_name):
        raise CheckpointError(
            f"checkpoint {path} was written for environment {payload['environment_name']}, not "
            f"{environment_name}: pass a checkpoint trained on {environment_name}"
        )
    return payload


def load_state(target: Any, state: Mapping[str, Any], checkpoint_name: str) -> None:
    """`target.load_state_dict(state)` (a network, or an agent that loads its networks), refusing in one line a state
    whose networks have another layout than this version of the agent builds (a checkpoint of an earlier version), or
    that lacks a part this version's agent loads (a KeyError naming a key the state does not hold; one naming a key it
    holds is a fault of the loader, raised as it is)."""
    try:
        target.load_state_dict(state)
    except KeyError as error:
        if error.args and error.args[0] in state:
            raise
        raise CheckpointError(
            f"{checkpoint_name} holds no {error} that this version of the agent loads (it holds {', '.join(map(str, state)) or 'nothing'}): "
            "retrain with this version, or use the version that wrote it"
        ) from None
    except RuntimeError as error:
        message = str(error)
        if "Error(s) in loading state_dict" not in message:
            raise
        detail = " ".join(line.strip() for line in message.splitlines()[1:])
        detail = detail if len(detail) <= 200 else detail[:200] + "..."
        raise CheckpointError(
            f"{checkpoint_name} holds networks of another layout than this version of the agent builds ({detail}): "
            "retrain with this version, or use the version that wrote it"
        ) from None


def latest_checkpoint(checkpoint_dir: str, agent_name: str, environment_name: str) -> str | None:
    """Returns the path of the highest-iteration milestone checkpoint of this agent and environment, or None
    (`list_checkpoints` also lists the periodic ones)."""
    if not os.path.isdir(checkpoint_dir):
        return None
    pattern = re.compile(
        re.escape(f"{_file_safe(agent_name)}_{_file_safe(environment_name)}_") + r"(\d+)" + re.escape(CHECKPOINT_SUFFIX)
    )
    best_iteration, best_name = -1, None
    for name in os.listdir(checkpoint_dir):
        match = pattern.fullmatch(name)
        if match and int(match.group(1)) > best_iteration:
            best_iteration, best_name = int(match.group(1)), name
    return None if best_name is None else os.path.join(checkpoint_dir, best_name)
