"""Acceptance tests of clean shutdown for actor + learner training with 4 actor processes, in both modes of the loop:
synchronous (ppo.run_classic) and asynchronous (impala.run_classic).

Ctrl-C (SIGINT to the whole process group, as a terminal sends it), a closed terminal (SIGHUP to the group),
SIGTERM to the learner alone or to the group, an actor killed with SIGKILL, and the learner killed with SIGKILL must
all end every process of the run within seconds, with the documented exit status and message, and leave a last
checkpoint that loads.
"""

import os
import re
import signal
import subprocess
import textwrap
import time

import pytest

from deep_rl_zoo import checkpoint
from unit_tests import helpers
from unit_tests.helpers import REPO_ROOT, TRACEBACK, python_executable, run_environment

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

NUM_ACTORS = 4
# 4 actors x 1 env x 16 steps = 64 env steps per update: 4 updates, then a checkpoint. 40 epochs per update keep
# the learner busy far longer than an actor's rollout, so actors spend most of their time waiting for
# parameters, the state in which a killed actor used to hang the learner's next publish.
STEPS_PER_ITERATION = 256
SHUTDOWN_SECONDS = 5.0
# agent name, module, its own flags. IMPALA's actors never wait for the learner: with 2 buffers each they spend the
# learner's updates waiting for a free buffer instead, and the lag bound never drops a rollout.
RUNS = {
    'synchronous': ('PPO', 'deep_rl_zoo.ppo.run_classic', ('--num_epochs=40',)),
    'asynchronous': ('IMPALA', 'deep_rl_zoo.impala.run_classic', ('--batch_rollouts=4', '--max_policy_lag=1000')),
}


def process_table():
    """{pid: (state, ppid, pgid)} of every process."""
    return {pid: (state, ppid, group) for pid, (state, ppid, group, _) in helpers.process_table().items()}


def running(pids):
    """The pids of `pids` that still exist and are not zombies."""
    table = process_table()
    return [pid for pid in pids if pid in table and table[pid][0] != 'Z']


def group_members(pgid):
    return sorted(pid for pid, (state, _, group) in process_table().items() if group == pgid and state != 'Z')


class Training:
    """A run of 4 actors with a budget it never finishes, in its own session and process group."""

    def __init__(self, directory, mode='synchronous', extra_flags=()):
        self.agent_name, module, own_flags = RUNS[mode]
        self.mode = mode
        self.checkpoint_dir = os.path.join(directory, 'checkpoints')
        self.stdout_path, self.stderr_path = os.path.join(directory, 'stdout.txt'), os.path.join(directory, 'stderr.txt')
        env = dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONUNBUFFERED='1')
        command = [
            python_executable(), '-m', module, *own_flags, *extra_flags,
            '--environment_name=CartPole-v1', f'--num_actors={NUM_ACTORS}', '--num_envs_per_actor=1', '--unroll_length=16',
            f'--num_train_steps={STEPS_PER_ITERATION}', '--num_iterations=100000', '--num_eval_steps=10',
            '--nouse_tensorboard', '--noprogress', f'--checkpoint_dir={self.checkpoint_dir}',
        ]  # fmt: skip
        with open(self.stdout_path, 'w') as stdout, open(self.stderr_path, 'w') as stderr:  # files: no pipe to fill
            self.process = subprocess.Popen(command, cwd=directory, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
        self.pgid = self.process.pid  # a new session leader leads its own process group

    def wait_for_checkpoint(self, iteration=0, timeout=90.0):
        first = os.path.join(self.checkpoint_dir, f'{self.agent_name}_CartPole-v1_{iteration}.ckpt')
        deadline = time.monotonic() + timeout
        while not os.path.exists(first):
            assert self.process.poll() is None, f'training ended early ({self.process.returncode}): {self.stderr()}'
            assert time.monotonic() < deadline, f'no checkpoint after {timeout} s: {self.stderr()}'
            time.sleep(0.05)

    def wait_for_iteration(self, iteration, timeout=90.0):
        """Waits until iteration `iteration` is under way: the results row of the one before it is written (its
        checkpoint and evaluation are done). `timeout` guards against a hang, it does not measure speed."""
        results = os.path.join(self.checkpoint_dir, f'{self.agent_name}_CartPole-v1_results.csv')
        deadline = time.monotonic() + timeout
        while not os.path.exists(results) or len(open(results).read().splitlines()) < 1 + iteration:
            assert self.process.poll() is None, f'training ended early ({self.process.returncode}): {self.stderr()}'
            assert time.monotonic() < deadline, f'iteration {iteration} not under way after {timeout} s: {self.stderr()}'
            time.sleep(0.05)

    def actors(self):
        table = process_table()
        return sorted(pid for pid, (state, ppid, _) in table.items() if ppid == self.process.pid and state != 'Z')

    def wait_for_exit(self, pids):
        """Waits up to SHUTDOWN_SECONDS for the learner and every pid in `pids` to end; returns seconds taken."""
        start = time.monotonic()
        try:
            self.process.wait(timeout=SHUTDOWN_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f'the learner is still running {SHUTDOWN_SECONDS} s after the signal: {self.stderr()}')
        while running(pids) and time.monotonic() - start < SHUTDOWN_SECONDS:
            time.sleep(0.05)
        assert running(pids) == [], f'processes left running: {running(pids)}'
        assert group_members(self.pgid) == []
        return time.monotonic() - start

    def stderr(self):
        with open(self.stderr_path) as file:
            return file.read()

    def stdout(self):
        with open(self.stdout_path) as file:
            return file.read()

    def kill_all(self):
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def check_latest_checkpoint_loads(self, killed=False):
        """The newest checkpoint loads with exact counters. A clean stop removes a checkpoint it was writing; a
        SIGKILL cannot, but its temporary file never takes a checkpoint's name."""
        names = os.listdir(self.checkpoint_dir)
        if not killed:
            assert [name for name in names if '.tmp' in name] == [], 'a partial checkpoint was left behind'
        latest = checkpoint.latest_checkpoint(self.checkpoint_dir, self.agent_name, 'CartPole-v1')
        loaded = checkpoint.load_checkpoint(latest, agent_name=self.agent_name, environment_name='CartPole-v1')
        iteration = loaded['iteration']
        assert latest.endswith(f'{self.agent_name}_CartPole-v1_{iteration}.ckpt')
        # Synchronous: one update per 4 rollouts of 16 steps. Asynchronous: as many, give or take a batch that
        # straddles the iteration's end.
        learner_steps = 4 * (iteration + 1)
        if self.mode == 'asynchronous':
            assert abs(loaded['counters']['learner_steps'] - learner_steps) <= 1
            learner_steps = loaded['counters']['learner_steps']
        assert loaded['counters'] == {'env_steps': STEPS_PER_ITERATION * (iteration + 1), 'learner_steps': learner_steps, 'iteration': iteration}
        assert set(loaded['state']['network']) >= {'policy_head.weight', 'value_head.weight'}


@pytest.fixture(params=list(RUNS))
def training(tmp_path, request):
    run = Training(str(tmp_path), request.param)
    try:
        run.wait_for_iteration(1)
        actors = run.actors()
        assert len(actors) == NUM_ACTORS, f'expected {NUM_ACTORS} actor processes, found {actors}: {run.stderr()}'
        for actor in actors:  # each waits for parameters (or a free buffer) while the learner updates
            helpers.wait_until_asleep(actor)
        assert group_members(run.pgid) == sorted([run.process.pid, *actors])
        yield run, actors
    finally:
        run.kill_all()  # only matters when a test failed: never leave processes behind


def check_stop(run, actors, signum, to_the_group):
    """Sends `signum` to the learner or its whole process group: every process ends within SHUTDOWN_SECONDS with exit
    status 130, one line naming the signal, no actor reported dead, and a whole last checkpoint."""
    if to_the_group:
        os.killpg(run.pgid, signum)
    else:
        os.kill(run.process.pid, signum)
    run.wait_for_exit(actors)
    assert run.process.returncode == 130
    stderr = run.stderr()
    assert f'Interrupted ({signal.Signals(signum).name}): stopping {NUM_ACTORS} actors; the last checkpoint is in {run.checkpoint_dir}' in stderr, stderr
    assert 'died' not in stderr and TRACEBACK not in stderr
    run.check_latest_checkpoint_loads()


def test_ctrl_c_to_the_process_group_stops_every_process_and_keeps_the_checkpoint(training):
    check_stop(*training, signal.SIGINT, to_the_group=True)


def test_sigterm_to_the_learner_alone_stops_every_process_and_keeps_the_checkpoint(training):
    check_stop(*training, signal.SIGTERM, to_the_group=False)


def test_sigterm_to_the_process_group_reads_as_a_stop_not_as_crashed_actors(training):
    """A service manager or `timeout` sends SIGTERM to every process: the actors die at once, the learner stops."""
    check_stop(*training, signal.SIGTERM, to_the_group=True)


@pytest.mark.parametrize('training', ['synchronous'], indirect=True)
def test_a_closed_terminal_stops_the_run_as_ctrl_c_does(training):
    """Closing the terminal sends SIGHUP to the whole process group: the actors ignore it, the learner stops them."""
    check_stop(*training, signal.SIGHUP, to_the_group=True)


def test_a_killed_actor_stops_the_run_with_a_message_naming_it(training):
    run, actors = training
    victim = actors[1]
    os.kill(victim, signal.SIGKILL)
    run.wait_for_exit(actors)
    assert run.process.returncode not in (0, None) and run.process.returncode > 0  # an error exit, not a signal
    stderr = run.stderr()
    assert re.search(rf'^error: actor [0-3] \(pid {victim}\) died with exit code -9', stderr, re.M), stderr
    assert TRACEBACK not in stderr  # one clear line, not a traceback from deep inside
    run.check_latest_checkpoint_loads()


def test_actors_exit_by_themselves_when_the_learner_is_killed(training):
    run, actors = training
    os.kill(run.process.pid, signal.SIGKILL)  # no handler runs: the actors must notice their parent is gone
    run.process.wait(timeout=SHUTDOWN_SECONDS)
    deadline = time.monotonic() + SHUTDOWN_SECONDS
    while running(actors) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running(actors) == [], 'orphaned actors kept running after the learner died'
    run.check_latest_checkpoint_loads(killed=True)


def test_restart_actors_replaces_a_killed_actor_and_the_run_goes_on(tmp_path):
    run = Training(str(tmp_path), 'asynchronous', ('--restart_actors',))
    try:
        run.wait_for_checkpoint()
        actors = run.actors()
        assert len(actors) == NUM_ACTORS
        victim = actors[1]
        os.kill(victim, signal.SIGKILL)
        iteration = checkpoint.load_checkpoint(
            checkpoint.latest_checkpoint(run.checkpoint_dir, 'IMPALA', 'CartPole-v1'), agent_name='IMPALA', environment_name='CartPole-v1'
        )['iteration']
        run.wait_for_checkpoint(iteration + 2)  # training goes on with a fresh actor in place of the dead one
        replacements = sorted(set(run.actors()) - set(actors))
        assert len(run.actors()) == NUM_ACTORS and len(replacements) == 1 and victim not in run.actors()
        assert re.search(rf'^actor [0-3] \(pid {victim}\) died with exit code -9; restarting it \(restart 1 of at most 10\)$', run.stderr(), re.M), run.stderr()
        survivors = run.actors()
        os.killpg(run.pgid, signal.SIGINT)
        run.wait_for_exit(survivors)
        assert run.process.returncode == 130
        assert TRACEBACK not in run.stderr()
        run.check_latest_checkpoint_loads()
    finally:
        run.kill_all()


ENDING = """
import atexit, os, sys, threading, time
from deep_rl_zoo import flags, settings

class Teardown:
    def __del__(self):
        print('teardown ran', flush=True)

kept = Teardown()  # freed only by the interpreter's teardown
atexit.register(lambda: print('exit handler ran', flush=True))

def main(run_settings):
    threading.Thread(target=lambda: (time.sleep(0.2), print('thread finished', flush=True))).start()
    ending = os.environ['ENDING']
    sys.exit(int(ending) if ending.isdigit() else None if ending == 'none' else ending)

flags.define_settings(settings.EVALUATION)  # the lightest settings: no experiment to resolve
flags.run(main)
"""


@pytest.mark.parametrize('ending, status', [('none', 0), ('130', 130), ('error: boom', 1)])
def test_a_run_ends_as_the_interpreter_would_without_its_teardown(tmp_path, ending, status):
    """The teardown of an interpreter that imported torch (every module and object freed) costs about 1.5 s of CPU,
    which made a stopped run end more than SHUTDOWN_SECONDS after its signal on a busy machine. A run script ends
    without it: its exit status and message, non-daemon threads and exit handlers are those of sys.exit."""
    (tmp_path / 'ending.py').write_text(textwrap.dedent(ENDING))
    proc = subprocess.run(
        [python_executable(), str(tmp_path / 'ending.py')], env=dict(run_environment(), ENDING=ending),
        capture_output=True, text=True, timeout=600, check=False,  # a hang guard: up to 30 s on a busy 2-core machine
    )  # fmt: skip
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == 'thread finished\nexit handler ran\n'
    assert proc.stderr == ('error: boom\n' if status == 1 else '')
