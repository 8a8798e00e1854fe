"""A fork server for the tests' `python -m <entry point>` runs: torch is imported once, not once per run.

Most of the suite's time was interpreter start-up: importing torch takes about 2 s of the 2.5 s a run script
needs before its first line runs, and the suite starts a few hundred of them. The server is a fresh interpreter
(not the pytest process: that one holds Ray clients and threads) that imports numpy and torch, nothing that reads
run-specific environment variables at import time (MuJoCo, SDL, Ray), and then forks once per request.

Each forked run behaves like `python -m module flags...` started by `subprocess.run`: its own working
directory, environment, argv and sys.path[0]; stdout and stderr captured; `SystemExit` codes, uncaught
exceptions (traceback, exit 1), exit handlers and non-daemon threads handled as the interpreter's own exit
does; the exit status reported back, negative for a signal. A run is the leader of its own process group, so
a timeout kills it with every actor it started.

`unit_tests.helpers.run_module` uses it unless `DEEP_RL_ZOO_TEST_PREWARM=0`, and falls back to a plain
subprocess for a run whose import-time environment (torch/BLAS/CUDA variables) differs from the server's.
"""

import atexit
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from typing import Dict, List, Optional

# Variables that torch or its BLAS read when imported: a run that sets them differently needs its own interpreter.
IMPORT_TIME_VARIABLES = ('PYTHONPATH', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'CUDA_VISIBLE_DEVICES')


def _import_time_environment(env: Dict[str, str]) -> Dict[str, Optional[str]]:
    return {
        name: env.get(name)
        for name in list(IMPORT_TIME_VARIABLES) + [name for name in env if name.startswith(('TORCH', 'PYTORCH'))]
    }


class PrewarmedPython:
    """Client side: starts the server on first use and asks it for runs."""

    def __init__(self, python: str, env: Dict[str, str]):
        self._python = python
        self._env = dict(env)
        self._directory = tempfile.mkdtemp(prefix='prewarmed-python-')
        self._socket_path = os.path.join(self._directory, 'server.sock')
        self._server: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()

    def serves(self, env: Dict[str, str]) -> bool:
        """Whether a run with this environment may be forked from the server (same import-time variables)."""
        return _import_time_environment(env) == _import_time_environment(self._env)

    def _ensure_started(self) -> None:
        with self._lock:
            if self._server is not None and self._server.poll() is None:
                return
            self._server = subprocess.Popen(
                [self._python, '-c', 'import sys; from unit_tests.prewarmed_python import serve; serve(sys.argv[1])',
                 self._socket_path],
                env=self._env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
            )
            if self._server.stdout.readline().strip() != b'ready':
                raise RuntimeError('the prewarmed python server did not start')
            atexit.register(self.close)

    def run(self, module: str, flags: List[str], cwd: str, env: Dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """Runs `python -m module flags...` in a forked child; the same contract as `subprocess.run(..., text=True)`."""
        self._ensure_started()
        with tempfile.TemporaryDirectory(prefix='prewarmed-run-') as capture:
            stdout_path, stderr_path = os.path.join(capture, 'stdout'), os.path.join(capture, 'stderr')
            request = dict(module=module, flags=list(flags), cwd=os.path.abspath(cwd), env=env,
                           stdout=stdout_path, stderr=stderr_path)
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(self._socket_path)
            with connection, connection.makefile('rwb') as stream:
                stream.write(json.dumps(request).encode() + b'\n')
                stream.flush()
                pid = int(stream.readline())
                connection.settimeout(timeout)
                try:
                    status_line = stream.readline()
                except socket.timeout:
                    _kill_group(pid)
                    raise subprocess.TimeoutExpired([module, *flags], timeout) from None
            if not status_line:
                raise RuntimeError(f'the prewarmed python server lost the run of {module}')
            with open(stdout_path, encoding='utf-8', errors='replace') as out, \
                    open(stderr_path, encoding='utf-8', errors='replace') as err:
                return subprocess.CompletedProcess(
                    ['python', '-m', module, *flags], int(status_line), out.read(), err.read())

    def close(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.terminate()
            self._server.wait(timeout=10)
        if os.path.exists(self._socket_path):
            os.unlink(self._socket_path)
        if os.path.isdir(self._directory):
            os.rmdir(self._directory)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def serve(socket_path: str) -> None:
    """Server side: import torch, then fork a runner per request until the parent (pytest) goes away."""
    import numpy  # noqa: F401  (imported here so that every forked run starts with them)
    import torch  # noqa: F401

    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(16)
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # runners are reaped by the kernel
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    while os.getppid() == parent:
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            continue
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _runner(connection)
        connection.close()


def _runner(connection: socket.socket) -> None:
    """Forks the run, tells the client its pid, waits for it, and reports its exit status."""
    status = 1
    try:
        connection.settimeout(None)
        stream = connection.makefile('rwb')
        request = json.loads(stream.readline())
        pid = os.fork()
        if pid == 0:
            stream.close()
            connection.close()
            try:
                _run_module(request)
            finally:  # only reached when setting the run up failed: say why where the client reads stderr
                traceback.print_exc()
                os._exit(1)
        stream.write(f'{pid}\n'.encode())
        stream.flush()
        _, wait_status = os.waitpid(pid, 0)
        stream.write(f'{os.waitstatus_to_exitcode(wait_status)}\n'.encode())
        stream.flush()
        status = 0
    finally:
        os._exit(status)


def _run_module(request: dict) -> None:
    """In the forked child: become `python -m module flags...` and exit as that interpreter would."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, path in ((1, request['stdout']), (2, request['stderr'])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, 'w', closefd=False), encoding='utf-8', line_buffering=True, write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, 'w', closefd=False), encoding='utf-8', errors='backslashreplace',
                                  line_buffering=True, write_through=True)
    os.environ.clear()
    os.environ.update(request['env'])
    os.chdir(request['cwd'])
    sys.path[0] = request['cwd']  # as `python -m` sets it; the rest (PYTHONPATH, site) is the server's, the same
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the handlers a fresh interpreter starts with
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    code = 0
    try:
        import runpy
        sys.argv = [request['module'], *request['flags']]
        runpy.run_module(request['module'], run_name='__main__', alter_sys=True)
    except SystemExit as exit_request:
        code = _exit_code(exit_request.code)
    except BaseException:  # noqa: B902  (the interpreter prints any uncaught exception and exits 1)
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()  # what the interpreter does at exit: wait for non-daemon threads,
        atexit._run_exitfuncs()  # then run the exit handlers (multiprocessing joins its children there)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
