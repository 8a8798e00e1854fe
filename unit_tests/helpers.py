"""Shared test helpers: run an entry point of the library as a subprocess.

    proc = run_module('deep_rl_zoo.dqn.run_classic', '--num_iterations=1', f'--checkpoint_dir={tmp_path}')
    assert proc.returncode == 0, proc.stderr
"""

import os
import subprocess
import sys
import time
from typing import List, Optional

from unit_tests.prewarmed_python import PrewarmedPython

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TRACEBACK = 'Traceback (most recent call last)'


def python_executable() -> str:
    """The repo's virtualenv python when there is one, else the interpreter running the tests."""
    venv_python = os.path.join(REPO_ROOT, '.venv', 'bin', 'python')
    return venv_python if os.path.exists(venv_python) else sys.executable


def run_module(module: str, *flags: str, cwd: str = REPO_ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `python -m <module> <flags...>` and returns the finished process (text stdout/stderr captured).

    One torch/BLAS thread in the child (2-core test machines); the repo root is on PYTHONPATH so `cwd` may be a
    temporary directory. On timeout the child is killed and `subprocess.TimeoutExpired` propagates, which fails
    the calling test with the command line in its message. The timeout guards against a hang, it does not measure
    speed: a busy 2-core machine can take minutes for what takes seconds alone.

    The run is forked from a server that has imported torch already (`unit_tests.prewarmed_python`), which saves
    about 2 s per run; `DEEP_RL_ZOO_TEST_PREWARM=0` starts each run as a fresh interpreter instead.
    """
    env = run_environment()
    server = _prewarmed_server(env)
    if server is not None:
        return server.run(module, list(flags), cwd=cwd, env=env, timeout=timeout)
    cmd: List[str] = [python_executable(), '-m', module, *flags]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def run_environment() -> dict:
    """The environment of a test run: this process's, one torch/BLAS thread, unbuffered, the repo importable."""
    env = dict(os.environ)
    env['PYTHONPATH'] = REPO_ROOT + (os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
    env.setdefault('OMP_NUM_THREADS', '1')
    env.setdefault('MKL_NUM_THREADS', '1')
    env['PYTHONUNBUFFERED'] = '1'
    return env


_PREWARMED: Optional[PrewarmedPython] = None


def _prewarmed_server(env: dict) -> Optional[PrewarmedPython]:
    """The shared fork server, when it may serve a run with this environment."""
    global _PREWARMED
    if os.environ.get('DEEP_RL_ZOO_TEST_PREWARM', '1') == '0':
        return None
    if _PREWARMED is None:
        _PREWARMED = PrewarmedPython(python_executable(), env)
    return _PREWARMED if _PREWARMED.serves(env) else None


def snapshot(directory: str) -> dict:
    """Every file under `directory` with its bytes, and every folder."""
    found = {}
    for root, folders, names in os.walk(directory):
        found.update({os.path.join(root, folder): 'folder' for folder in folders})
        for name in names:
            with open(os.path.join(root, name), 'rb') as file:
                found[os.path.join(root, name)] = file.read()
    return found


def stderr_lines(proc: subprocess.CompletedProcess) -> List[str]:
    """Non-empty lines of a finished process's stderr, stripped."""
    return [line.strip() for line in proc.stderr.splitlines() if line.strip()]

# The exact header of the per-iteration results CSV (main_loop.Experiment.end_iteration).
RESULT_COLUMNS = [
    'iteration',
    'env_steps',
    'learner_steps',
    'wall_time',
    'train_episode_return',
    'train_num_episodes',
    'train_step_rate',
    'eval_episode_return',
    'eval_num_episodes',
    'checkpoint',
]


def wait_until_asleep(pid: int, kernel_function: str = 'futex', seconds: float = 60.0) -> None:
    """Waits until process `pid` sleeps in the kernel function named `kernel_function` (its /proc wchan: 'futex' for
    a semaphore or lock, 'hrtimer_nanosleep' for time.sleep), as seen twice in a row; fails after `seconds` (a guard
    against a hang, not a measure of speed). A kernel that hides wchan ('0') leaves only the state S to go by."""
    deadline, seen = time.monotonic() + seconds, 0
    while seen < 2:
        assert time.monotonic() < deadline, f'process {pid} never slept in {kernel_function} within {seconds} s'
        try:
            with open(f'/proc/{pid}/stat') as stat, open(f'/proc/{pid}/wchan') as wchan:
                state, where = stat.read().rsplit(')', 1)[1].split()[0], wchan.read().strip()
        except FileNotFoundError:
            raise AssertionError(f'process {pid} ended while it was expected to sleep in {kernel_function}') from None
        seen = seen + 1 if state == 'S' and (where.startswith(kernel_function) or where == '0') else 0
        time.sleep(0.01)


def process_table() -> dict:
    """{pid: (state, ppid, process group, session)} of every process, read from /proc (for shutdown tests)."""
    table = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as stat:
                fields = stat.read().rsplit(')', 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        table[int(entry)] = (fields[0], int(fields[1]), int(fields[2]), int(fields[3]))
    return table
