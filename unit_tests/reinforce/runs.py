"""End-to-end runs of the REINFORCE packages (reinforce, reinforce_baseline) as a user runs them: subprocesses, real
CartPole and Pong, tiny budgets. Each package's run_test takes these fixtures and checks; the generic ones come
from unit_tests/value_agents.py."""

import os

from deep_rl_zoo import checkpoint
from unit_tests import value_agents as runs
from unit_tests.helpers import run_module

CLASSIC_FLAGS = ('--environment_name=CartPole-v1', '--num_train_steps=300', '--num_eval_steps=100', '--noprogress')
# Two environments, an update per two episodes, and games cut at 80 steps (320 frames): a 200-step run updates, and a
# 50-step evaluation of its checkpoint still ends unfinished.
ATARI_FLAGS = (
    '--num_envs=2',
    '--num_episodes_per_update=2',
    '--max_episode_frames=320',
    '--num_train_steps=200',
    '--num_eval_steps=100',
    '--num_iterations=1',
    '--noprogress',
)


def cartpole_fixture(agent: runs.Agent):
    return runs.cartpole_fixture(agent, flags=CLASSIC_FLAGS)


def pong_fixture(agent: runs.Agent):
    return runs.pong_fixture(agent, atari_flags=ATARI_FLAGS)


def check_checkpoint(agent: runs.Agent, directory, environment: str, iteration: int, env_steps: int, kind: str):
    """One checkpoint: counters, the agent's own state (no target network: REINFORCE has none); returns it."""
    payload = checkpoint.load_checkpoint(
        agent.checkpoint(directory, environment, iteration), agent_name=agent.name, environment_name=environment
    )
    assert payload['iteration'] == iteration and payload['counters']['env_steps'] == env_steps
    state = payload['state']
    assert set(state) == {'network', 'optimizer', 'env_steps', 'learner_steps', 'discarded_steps'}
    assert state['env_steps'] == env_steps and state['learner_steps'] == payload['counters']['learner_steps']
    assert payload['flags']['environment_kind'] == kind
    return payload


def check_cartpole_run(agent: runs.Agent, run, learner_tags):
    """Two iterations of 300 steps: checkpoints, CSV, TensorBoard scalars; returns both checkpoints."""
    directory = runs.check_run_files(agent, run, runs.CARTPOLE, 2)
    payloads = [check_checkpoint(agent, directory, runs.CARTPOLE, i, 300 * (i + 1), 'classic') for i in (0, 1)]
    rows = runs.check_results_csv(agent, directory, runs.CARTPOLE, [300, 600])
    for row in rows:
        assert int(row['train_num_episodes']) >= 1 and float(row['eval_episode_return']) >= 8
    first, second = (payload['counters']['learner_steps'] for payload in payloads)
    # One environment, one update per episode: as many updates as finished episodes (an episode lasts >= 8 steps).
    assert first == int(rows[0]['train_num_episodes']) and 1 <= second - first <= 300 // 8
    assert all(payload['state']['discarded_steps'] == 0 for payload in payloads)  # one environment discards nothing
    train = runs.cartpole_train_events(agent, directory)
    expected = runs.PERFORMANCE_TAGS | {'agent_statistics(env_steps)/discarded_steps'}
    expected |= {f'learner_statistics(learner_steps)/{tag}' for tag in learner_tags}
    assert set(train.Tags()['scalars']) == expected
    assert runs.scalar_steps(train, 'learner_statistics(learner_steps)/loss') == [first, second]
    return payloads


def check_pong_run(agent: runs.Agent, run):
    """One iteration of 200 steps on two Pongs cut at 80 steps: at least one update; returns the checkpoint."""
    directory = runs.check_run_files(agent, run, 'Pong', 1)
    runs.check_results_csv(agent, directory, 'Pong', [200])
    payload = check_checkpoint(agent, directory, 'Pong', 0, 200, 'atari')
    assert payload['counters']['learner_steps'] >= 1
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['policy_head.weight'].shape) == (6, 512)  # Pong's minimal action set
    return payload


def check_bad_flags(agent: runs.Agent, tmp_path):
    """A bad value and a bad combination of flags each end with one `error:` line before anything is written."""
    lines = runs.failed_cleanly(run_module(agent.module('run_classic'), '--num_episodes_per_update=0', '--checkpoint_dir=ck', cwd=str(tmp_path)))
    assert len(lines) == 1 and lines[0].startswith('error: flag --num_episodes_per_update=0'), lines
    lines = runs.failed_cleanly(
        run_module(agent.module('run_classic'), '--num_envs=2', '--num_episodes_per_update=3', '--checkpoint_dir=ck', cwd=str(tmp_path))
    )
    assert lines == [
        'error: --num_episodes_per_update (3) must be a multiple of --num_envs (2): every environment gives the same '
        'number of episodes to an update'
    ]
    assert not os.path.exists(tmp_path / 'ck')
