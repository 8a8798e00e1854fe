"""R2D2's run with 3 asynchronous actor processes, stopped by Ctrl-C to its process group while the learner is busy
learning from replay: every process ends within seconds, exit status 130, no traceback, and the last checkpoint loads
with the learner's own counters. (The transport's other failure cases are tested once for all agents in
unit_tests/shutdown_test.py.)"""

import pytest
import os
import signal
import subprocess
import time

from deep_rl_zoo import checkpoint
from unit_tests.helpers import REPO_ROOT, TRACEBACK, python_executable
from unit_tests.shutdown_test import group_members, running

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

NUM_ACTORS = 3
SHUTDOWN_SECONDS = 5.0


def test_ctrl_c_stops_the_learner_and_every_actor_and_keeps_the_checkpoint(tmp_path):
    checkpoint_dir = str(tmp_path / 'checkpoints')
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    command = [
        python_executable(), '-m', 'deep_rl_zoo.r2d2.run_classic', '--environment_name=CartPole-v1', f'--num_actors={NUM_ACTORS}',
        '--num_envs_per_actor=1', '--actor_update_interval=10', '--unroll_length=4', '--burn_in=2', '--min_replay_size=4', '--batch_size=4',
        '--learn_interval=2', '--num_train_steps=60', '--num_iterations=100000', '--num_eval_steps=10', '--nouse_tensorboard', '--noprogress',
        f'--checkpoint_dir={checkpoint_dir}',
    ]  # fmt: skip
    with open(tmp_path / 'stderr.txt', 'w') as stderr:
        process = subprocess.Popen(command, cwd=str(tmp_path), env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        results = os.path.join(checkpoint_dir, 'R2D2_CartPole-v1_results.csv')
        deadline = time.monotonic() + 90.0  # a guard against a hang, not a measure of speed
        while not os.path.exists(results) or len(open(results).read().splitlines()) < 2:  # iteration 1 under way
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / 'stderr.txt').read_text()
            time.sleep(0.05)
        members = group_members(process.pid)
        assert len(members) == NUM_ACTORS + 1, members  # the learner and its actors
        os.killpg(process.pid, signal.SIGINT)
        start = time.monotonic()
        try:
            process.wait(timeout=SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:  # slow or hung? wait longer to tell, then fail with the time it took
            try:
                process.wait(timeout=30.0)
                outcome = f'it ended after {time.monotonic() - start:.1f} s'
            except subprocess.TimeoutExpired:
                outcome = 'it still ran after 35 s (a hang)'
            raise AssertionError(f'the learner did not end within {SHUTDOWN_SECONDS} s of Ctrl-C: {outcome}\n' + (tmp_path / 'stderr.txt').read_text())
        while running(members) and time.monotonic() - start < SHUTDOWN_SECONDS:
            time.sleep(0.05)
        assert running(members) == [] and group_members(process.pid) == []
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # only matters when the test failed: never leave processes behind
        except ProcessLookupError:
            pass
        process.wait()
    stderr = (tmp_path / 'stderr.txt').read_text()
    assert process.returncode == 130, stderr
    assert TRACEBACK not in stderr and 'Interrupted (SIGINT)' in stderr
    latest = checkpoint.latest_checkpoint(checkpoint_dir, 'R2D2', 'CartPole-v1')
    loaded = checkpoint.load_checkpoint(latest, agent_name='R2D2', environment_name='CartPole-v1')
    assert loaded['counters']['learner_steps'] == loaded['state']['learner_steps'] > 0
    assert loaded['state']['env_steps'] == loaded['counters']['env_steps']
