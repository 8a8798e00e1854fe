"""The Ray backend (`--backend=ray`, deep_rl_zoo/ray_backend.py) on this machine only.

One Ray cluster of three nodes of one CPU each, simulated here with `ray.cluster_utils.Cluster`, is shared by the
tests of this module (Ray starts slowly on 2 cores). It lives in its own short temporary directory (Ray's socket
paths are limited to 107 characters), with token authentication disabled for it only (`RAY_AUTH_MODE=disabled`);
`RAY_TMPDIR` points there, so `--ray_address=auto` finds it. On it: a pool in this process, whose actors must return
exactly the rollouts local actors make (PPO, and A2C's gradient variant with its bfloat16 gradients), with one put
into the object store per parameter version; the users' run scripts as subprocesses: PPO learns CartPole-v1 with its
two actors on two nodes while one actor's process is killed and the node of the other is removed, both restarted by
Ray. Last, runs that started a Ray instance of their own end it, and every process of it, within 5 s of Ctrl-C
(IMPALA, asynchronous) or of a SIGTERM to their whole process group (PPO, synchronous).
"""

import contextlib
import csv
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import ray
import torch
from ray import cluster_utils
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from deep_rl_zoo import checkpoint, main_loop, ray_backend, rollouts, trackers
from deep_rl_zoo.a2c import agent as a2c_agent
from deep_rl_zoo.a2c.settings import A2cGradientSettings
from deep_rl_zoo.ppo import agent as ppo_agent
from unit_tests import helpers
from unit_tests.helpers import REPO_ROOT, TRACEBACK, python_executable, run_module, stderr_lines

QUIET = ('--nouse_tensorboard', '--noprogress', '--learner_threads=1')
PLACEMENT = re.compile(r'^Ray: (\d+) actors? on (\d+) nodes?: (.*)$', re.M)
SHUTDOWN_SECONDS = 5.0


@contextlib.contextmanager
def environment(**variables):
    """Sets environment variables for the block (inherited by the processes started in it), then restores them."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def ray_environment(temp_dir):
    """A test Ray instance's variables: its own directory, no authentication, and the repository importable by its
    workers (a run's actors unpickle the run's actor factory there)."""
    python_path = REPO_ROOT + (os.pathsep + os.environ['PYTHONPATH'] if os.environ.get('PYTHONPATH') else '')
    return {'RAY_AUTH_MODE': 'disabled', 'RAY_TMPDIR': temp_dir, 'PYTHONPATH': python_path}


@pytest.fixture(scope='module')
def cluster():
    temp_dir = tempfile.mkdtemp(prefix='ray-', dir='/tmp')
    with environment(**ray_environment(temp_dir)):
        three_nodes = cluster_utils.Cluster(initialize_head=True, head_node_args={'num_cpus': 1})
        try:
            for _ in range(2):
                three_nodes.add_node(num_cpus=1)
            three_nodes.wait_for_nodes()
            yield three_nodes
        finally:
            ray.shutdown()  # this process's connection, if a test made one
            three_nodes.shutdown()
            shutil.rmtree(temp_dir, ignore_errors=True)


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def placement(stdout):
    """{actor id: (node id prefix, pid)} and the number of nodes, from the pool's start-up line."""
    match = PLACEMENT.search(stdout)
    assert match, stdout
    actors = re.findall(r'actor (\d+) on node (\S+) \([^,]+, pid (\d+)\)', match.group(3))
    placed = {int(actor): (node, int(pid)) for actor, node, pid in actors}
    assert len(placed) == int(match.group(1))
    return placed, int(match.group(2))


# --- transport -----------------------------------------------------------------------------------------------------


def test_rollout_arrays_travel_as_numpy_and_come_back_with_their_exact_dtype():
    values = {
        'observation': torch.tensor([[0, 7, 255]], dtype=torch.uint8),
        'action': torch.tensor([1, 0], dtype=torch.int64),
        'terminal': torch.tensor([True, False]),
        'reward': torch.tensor([0.5, -1.25]),
        'gradient': torch.tensor([1.0, -3.140625, 1e-3], dtype=torch.bfloat16),  # A2C's compressed gradients
    }
    for name, tensor in values.items():
        array = ray_backend._to_numpy(tensor)
        assert array.nbytes == tensor.numel() * tensor.element_size(), name
        restored = ray_backend._to_tensor(array, tensor.dtype)
        assert restored.dtype == tensor.dtype and torch.equal(restored, tensor), name


class NoStop:
    """A stop request that never comes (the pool's `receive` polls it)."""

    def __bool__(self):
        return False


# The settings of both agents' actors (A2C's gradient variant has every setting PPO's actor reads).
SETTINGS = A2cGradientSettings(
    environment_name='CartPole-v1', seed=4, num_envs_per_actor=2, unroll_length=5, discount=0.99, scale_rewards=False, value_coef=0.5,
    entropy_coef=0.01, gae_lambda=1.0, gradient_compression='bfloat16', ray_num_cpus_per_actor=1.0, ray_num_gpus_per_actor=0.0,
)  # fmt: skip
# agent: (its network, its actor, its rollout spec); A2C's gradient variant adds a bfloat16 gradient to each rollout.
AGENTS = {
    'PPO': (ppo_agent.make_network, ppo_agent.build_actor, rollouts.rollout_spec),
    'A2C-grad': (a2c_agent.make_network, a2c_agent.build_gradient_actor, a2c_agent.gradient_rollout_spec(SETTINGS)),
}


@pytest.mark.slow
@pytest.mark.parametrize('agent', list(AGENTS))
def test_each_version_is_put_once_for_all_actors_and_their_rollouts_are_those_of_local_actors(cluster, monkeypatch, agent):
    """A synchronous pool of 2 actors in this process: 3 parameter versions are 3 puts into the object store, and every
    rollout is exactly what the same actor built here collects with the same parameters."""
    if not ray.is_initialized():
        ray.init(address=cluster.address)
    make_network, build_actor, rollout_spec = AGENTS[agent]
    settings = SETTINGS.replace(ray_address=cluster.address)
    make_actor = main_loop._ActorFactory(settings, make_network, build_actor)
    local_actors, generator_states = [], []  # each actor seeds torch's global generator: one state each, as in processes
    for actor_id in range(2):
        local_actors.append(make_actor(actor_id, torch.device('cpu')))
        generator_states.append(torch.get_rng_state())
    env = getattr(local_actors[0], 'rollout_actor', local_actors[0]).env  # a gradient actor wraps a rollout actor
    spec = rollout_spec(env, 2, 5)
    learner_network = make_network(env, settings)
    puts = []
    put = ray.put
    monkeypatch.setattr(ray, 'put', lambda value: puts.append(type(value).__name__) or put(value))
    pool = ray_backend.RayActorPool(make_actor, spec, 1, settings, log_statistics=lambda statistics: None)
    try:
        pool.start()
        for version in (1, 2, 3):
            with torch.no_grad():
                for parameter in learner_network.parameters():
                    parameter.add_(0.1 * version)
            assert pool.parameters.publish(learner_network) == version
            received = [pool.receive(NoStop()) for _ in range(2)]
            assert sorted((rollout.actor_id, rollout.version) for rollout in received) == [(0, version), (1, version)]
            for rollout in received:
                local = local_actors[rollout.actor_id]
                # As a local actor process loads them (distributed.SharedParameters.copy_to): views of one vector.
                vector_to_parameters(parameters_to_vector(learner_network.parameters()).detach().clone(), local.network.parameters())
                buffer = {name: torch.empty(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
                torch.set_rng_state(generator_states[rollout.actor_id])
                assert rollout.finished == local.collect(buffer)
                generator_states[rollout.actor_id] = torch.get_rng_state()
                for name, tensor in buffer.items():
                    assert pool.buffer(rollout)[name].dtype == tensor.dtype and torch.equal(pool.buffer(rollout)[name], tensor), name
    finally:
        pool.stop()
    assert puts == ['ndarray'] * 3


# --- flags ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'flags, message',
    [
        (('--backend=ray', '--ray_address=head-node'), 'error: flag --ray_address=head-node: must be "" (start a Ray instance), "auto" or HOST:PORT'),
        (('--ray_address=auto',), '--ray_address needs --backend=ray'),
    ],
)
@pytest.mark.slow
def test_bad_ray_flags_end_with_one_line_naming_the_flag(flags, message):
    proc = run_module('deep_rl_zoo.ppo.run_classic', *QUIET, *flags)
    assert proc.returncode == 1
    assert TRACEBACK not in proc.stderr
    assert message in stderr_lines(proc)[-1]


@pytest.mark.slow
def test_without_ray_one_line_tells_how_to_install_it(tmp_path, monkeypatch):
    # A site customisation on the child's path hides the installed Ray from it, as if it were not installed.
    (tmp_path / 'sitecustomize.py').write_text("import sys\nsys.modules['ray'] = None\n")
    monkeypatch.setenv('PYTHONPATH', str(tmp_path))
    proc = run_module(
        'deep_rl_zoo.ppo.run_classic', *QUIET, '--backend=ray', '--num_iterations=1', '--num_train_steps=64', '--num_eval_steps=0',
        f'--checkpoint_dir={tmp_path}', cwd=str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 1
    assert stderr_lines(proc) == ['error: flag --backend=ray: Ray is not installed; install it with: pip install -r requirements-ray.txt']
    assert set(os.listdir(tmp_path)) <= {'sitecustomize.py', '__pycache__'}  # nothing started, nothing written


@pytest.mark.slow
def test_more_actors_than_the_cluster_can_place_end_with_one_line(cluster, tmp_path):
    proc = run_module(
        'deep_rl_zoo.ppo.run_classic', *QUIET, '--backend=ray', f'--ray_address={cluster.address}', '--num_actors=4', f'--checkpoint_dir={tmp_path}',
        cwd=str(tmp_path),
    )
    assert proc.returncode == 1
    assert TRACEBACK not in proc.stderr
    assert stderr_lines(proc)[-1] == (
        'error: --num_actors=4 x --ray_num_cpus_per_actor=1 needs 4 CPUs but the Ray cluster has 3: '
        'use fewer actors, lower --ray_num_cpus_per_actor, or add nodes (`ray start --address=...`)'
    )


# --- runs on the three-node cluster --------------------------------------------------------------------------------


def process_table():
    """{pid: (state, ppid, session id)} of every process."""
    return {pid: (state, ppid, session) for pid, (state, ppid, _, session) in helpers.process_table().items()}


def descendants(pid):
    table = process_table()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, (state, parent, _) in table.items() if parent in frontier and state != 'Z'} - found
        found |= frontier
    return found


def alive(pids):
    table = process_table()
    return sorted(pid for pid in pids if pid in table and table[pid][0] != 'Z')


def wait_for(condition, process, stderr_path, seconds):
    """Polls `condition` until it holds; fails if `process` ends or `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, stderr_path.read_text()[-3000:]
        assert time.monotonic() < deadline, stderr_path.read_text()[-3000:]
        time.sleep(0.05)


@pytest.mark.slow
def test_ppo_learns_cartpole_while_ray_restarts_a_killed_actor_and_one_from_a_lost_node(cluster, tmp_path):
    """Synchronous PPO, one actor on each of two nodes, 2 iterations of 25,000 steps. After the first, while the
    learner waits (`unit_tests.paused_after_iteration`: the point does not depend on the machine's speed), one actor's
    process is killed and the node of the other is removed from the cluster: the learner needs both actors' next
    rollouts, so the run goes on only if Ray restarts both (where a CPU is free: the lost node's actor elsewhere) and
    runs their lost calls again. It learns all the same, counts the two restarts, and ends normally."""
    ray.shutdown()  # this process's connection, made by the pool tests: a node it is attached to cannot be removed
    checkpoint_dir, runs_dir = tmp_path / 'checkpoints', tmp_path / 'runs'
    stdout_path, stderr_path, go_file = tmp_path / 'stdout.txt', tmp_path / 'stderr.txt', tmp_path / 'go'
    command = [
        python_executable(), '-m', 'unit_tests.paused_after_iteration', str(go_file), 'deep_rl_zoo.ppo.run_classic', '--noprogress', '--learner_threads=1', '--backend=ray',
        f'--ray_address={cluster.address}', '--restart_actors', '--environment_name=CartPole-v1', '--num_actors=2',
        '--num_envs_per_actor=4', '--num_iterations=2', '--num_train_steps=25000', '--num_eval_steps=2500', '--seed=1',
        # run_classic's robust variant (40 of 40 seeds solve): its defaults solve seed 1 here at 25k, then fall to a
        # greedy 109-119 at 50k on CPUs with AVX-512 BF16 (different float kernels), with or without Ray.
        '--num_epochs=6', '--learning_rate=3e-3',
        f'--checkpoint_dir={checkpoint_dir}', f'--runs_dir={runs_dir}',
    ]  # fmt: skip
    environment_variables = dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    with open(stdout_path, 'w') as stdout, open(stderr_path, 'w') as stderr:
        process = subprocess.Popen(command, cwd=tmp_path, env=environment_variables, stdout=stdout, stderr=stderr)
    try:
        wait_for((checkpoint_dir / 'PPO_CartPole-v1_0.ckpt').exists, process, stderr_path, 600)  # hang guards: 70 s and 50 s on a busy 2-core machine
        placed, num_nodes = placement(stdout_path.read_text())
        assert num_nodes == 2
        # The node to lose: a worker node (the head holds the cluster's services) with an actor; the other actor is killed.
        lost = next(actor for actor, (node, _) in placed.items() if not cluster.head_node.node_id.startswith(node))
        (killed,) = set(placed) - {lost}
        os.kill(placed[killed][1], signal.SIGKILL)
        cluster.remove_node(next(node for node in cluster.worker_nodes if node.node_id.startswith(placed[lost][0])))
        go_file.touch()
        assert process.wait(timeout=600) == 0, stderr_path.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert alive([placed[killed][1], placed[lost][1]]) == []
    stderr = stderr_path.read_text()
    for actor in (killed, lost):
        assert f'actor {actor} was restarted by Ray after its process or node died (restart 1 of at most 10); the run goes on' in stderr, stderr[-3000:]
    assert '(restart 2 of' not in stderr
    rows = read_csv(checkpoint_dir / 'PPO_CartPole-v1_results.csv')
    assert [int(row['env_steps']) for row in rows] == [25088, 50176]  # 98 updates of 2 actors x 4 envs x 32 steps, twice
    assert float(rows[-1]['eval_episode_return']) >= 475, rows
    (train_dir,) = [os.path.join(runs_dir, run, 'train') for run in os.listdir(runs_dir)]
    accumulator = EventAccumulator(train_dir, size_guidance={'scalars': 0})
    accumulator.Reload()
    restarts = [event.value for event in accumulator.Scalars(f'{trackers.LEARNER_STATISTICS_PREFIX}/actor_restarts')]
    assert restarts == [1.0, 2.0]


# --- runs that start their own Ray instance ------------------------------------------------------------------------


# signal to a run's process group: (the agent it stops, its run script's extra flags)
STOPS = {
    'SIGINT': ('IMPALA', ('--batch_rollouts=2',)),  # Ctrl-C, as a terminal sends it
    'SIGTERM': ('PPO', ()),  # a service manager or `timeout` stopping a process group
}


@pytest.mark.slow
def test_ctrl_c_or_a_sigterm_to_the_process_group_ends_the_run_its_actors_and_its_ray_instance_within_5_s(tmp_path):
    """Two runs, each with a Ray instance of its own, started together (Ray starts slowly on 2 cores) and stopped one
    after the other: after the signal to its whole process group, each exits within 5 s with its checkpoint at the
    stop, and no process of it (its Ray instance's included) is left."""
    runs, temp_dirs = {}, []
    try:
        for signal_name, (agent, extra_flags) in STOPS.items():
            temp_dirs.append(tempfile.mkdtemp(prefix='ray-', dir='/tmp'))
            run_dir = tmp_path / signal_name
            run_dir.mkdir()
            command = [
                python_executable(), '-m', f'deep_rl_zoo.{agent.lower()}.run_classic', *QUIET, '--backend=ray', '--environment_name=CartPole-v1',
                '--num_actors=2', '--num_envs_per_actor=1', '--unroll_length=16', *extra_flags, '--num_train_steps=256',
                '--num_iterations=100000', '--num_eval_steps=10', f'--checkpoint_dir={run_dir / "checkpoints"}',
            ]  # fmt: skip
            variables = dict(os.environ, **ray_environment(temp_dirs[-1]), OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
            with open(run_dir / 'stdout.txt', 'w') as stdout, open(run_dir / 'stderr.txt', 'w') as stderr:
                runs[signal_name] = subprocess.Popen(command, cwd=run_dir, env=variables, stdout=stdout, stderr=stderr, start_new_session=True)
        for signal_name, process in runs.items():
            agent, _ = STOPS[signal_name]
            wait_for((tmp_path / signal_name / 'checkpoints' / f'{agent}_CartPole-v1_0.ckpt').exists, process, tmp_path / signal_name / 'stderr.txt', 600)
        for signal_name, process in runs.items():
            stderr_path = tmp_path / signal_name / 'stderr.txt'
            placed, _ = placement((tmp_path / signal_name / 'stdout.txt').read_text())
            run_processes = descendants(process.pid)
            assert {pid for _, pid in placed.values()} <= run_processes  # the actors are processes of the run's Ray instance
            start = time.monotonic()
            os.killpg(process.pid, getattr(signal, signal_name))
            assert process.wait(timeout=SHUTDOWN_SECONDS) == 130, stderr_path.read_text()
            while alive(run_processes) and time.monotonic() - start < SHUTDOWN_SECONDS:
                time.sleep(0.05)
            assert alive(run_processes) == [], f'left running {time.monotonic() - start:.1f} s after {signal_name}: {alive(run_processes)}'
            assert [pid for pid, (state, _, session) in process_table().items() if session == process.pid and state != 'Z'] == []
    finally:
        for process in runs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for temp_dir in temp_dirs:
            shutil.rmtree(temp_dir, ignore_errors=True)
    for signal_name, (agent, _) in STOPS.items():
        stderr = (tmp_path / signal_name / 'stderr.txt').read_text()
        assert f'Interrupted ({signal_name}): stopping 2 actors' in stderr and TRACEBACK not in stderr, stderr[-3000:]
        newest = max((tmp_path / signal_name / 'checkpoints').glob('*.ckpt'), key=os.path.getmtime)
        loaded = checkpoint.load_checkpoint(str(newest), agent_name=agent, environment_name='CartPole-v1')
        assert loaded['counters']['env_steps'] >= 256
