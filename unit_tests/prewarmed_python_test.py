"""The tests' fork server (`unit_tests.prewarmed_python`) runs a module exactly as a fresh `python -m` does."""

import os
import subprocess
import textwrap
import time

import pytest

from unit_tests.helpers import process_table, run_environment, run_module
from unit_tests.prewarmed_python import PrewarmedPython

SCRIPT = '''
import atexit, os, sys, threading, time
print('argv', sys.argv[1:], 'cwd', os.getcwd() == sys.argv[1], 'path0', sys.path[0] == sys.argv[1])
print('variable', os.environ.get('PREWARM_TEST_VARIABLE'), 'main', __name__)
print('to stderr', file=sys.stderr)
atexit.register(lambda: print('exit handler ran'))
threading.Thread(target=lambda: (time.sleep(0.2), print('thread finished'))).start()
mode = sys.argv[2]
if mode == 'raise':
    raise ValueError('boom')
if mode == 'kill':
    os.kill(os.getpid(), 9)
if mode == 'message':
    sys.exit('fatal: a message')
sys.exit(int(mode))
'''


@pytest.fixture
def module_directory(tmp_path, monkeypatch):
    (tmp_path / 'prewarm_probe.py').write_text(textwrap.dedent(SCRIPT))
    monkeypatch.setenv('PREWARM_TEST_VARIABLE', 'seen')
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize('mode', ['0', '3', 'raise', 'kill', 'message'])
def test_a_forked_run_matches_a_fresh_interpreter(module_directory, monkeypatch, mode):
    prewarmed = run_module('prewarm_probe', str(module_directory), mode, cwd=str(module_directory))
    monkeypatch.setenv('DEEP_RL_ZOO_TEST_PREWARM', '0')
    fresh = run_module('prewarm_probe', str(module_directory), mode, cwd=str(module_directory))
    assert fresh.returncode == {'0': 0, '3': 3, 'raise': 1, 'kill': -9, 'message': 1}[mode]
    assert prewarmed.returncode == fresh.returncode
    assert prewarmed.stdout == fresh.stdout
    assert f"argv ['{module_directory}', '{mode}'] cwd True path0 True" in fresh.stdout
    assert 'variable seen main __main__' in fresh.stdout
    if mode != 'kill':
        assert fresh.stdout.endswith('thread finished\nexit handler ran\n')
    # Tracebacks name the runner's frames differently; the last lines (the error itself) must match.
    assert prewarmed.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]
    assert prewarmed.stderr.startswith('to stderr\n')


@pytest.mark.slow
def test_a_run_past_its_timeout_is_killed_with_its_children(tmp_path):
    """The run starts a child, says so in a file, then sleeps; its timeout must kill both. A timeout that came
    before the child was started proves nothing, so the run is tried again with twice the timeout."""
    sleep = f'import time; time.sleep(60)  # {tmp_path}'  # this test's sleepers, not another session's
    (tmp_path / 'prewarm_sleeper.py').write_text(
        f'import pathlib, subprocess, sys\nsubprocess.Popen([sys.executable, "-c", {sleep!r}])\n'
        'pathlib.Path("child_started").touch()\nimport time\ntime.sleep(60)\n'
    )
    timeout = 1.5
    while not (tmp_path / 'child_started').exists():
        assert timeout < 60, 'the run never started its child'
        with pytest.raises(subprocess.TimeoutExpired):
            run_module('prewarm_sleeper', cwd=str(tmp_path), timeout=timeout)
        timeout *= 2
    deadline = time.monotonic() + 30  # the sleepers would end by themselves only after 60 s
    while [pid for pid in process_table() if _command_line(pid).endswith(sleep)]:
        assert time.monotonic() < deadline, 'the run\'s child outlived its timeout'
        time.sleep(0.05)


def test_a_run_with_other_torch_import_variables_gets_a_fresh_interpreter():
    server = PrewarmedPython('python', run_environment())
    assert server.serves(run_environment())
    assert not server.serves({**run_environment(), 'OMP_NUM_THREADS': '2'})
    assert not server.serves({**run_environment(), 'CUDA_VISIBLE_DEVICES': ''})


def _command_line(pid: int) -> str:
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as file:
            return file.read().replace(b'\0', b' ').decode().strip()
    except OSError:
        return ''
