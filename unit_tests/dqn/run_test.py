"""DQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic, resume,
run_atari on Pong and Breakout, eval_agent videos, TensorBoard event files and the results CSV. The runs and the
checks every value-based agent shares are in unit_tests/value_agents.py."""

import os
import re

import pytest

from deep_rl_zoo import checkpoint
from unit_tests import value_agents as runs
from unit_tests.helpers import run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('DQN', 'deep_rl_zoo.dqn')
cartpole = runs.cartpole_fixture(AGENT)
# One tiny iteration on Pong with TensorBoard and debug screenshots every 50 steps.
pong = runs.pong_fixture(AGENT, '--debug_screenshots_interval=50', tensorboard=True)


# ------------------------------------------------------------------------------------------ CartPole


def test_run_classic_writes_two_loadable_checkpoints(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    proc, _ = cartpole
    assert re.search(r'^iteration 0: env steps 300, ', proc.stdout, re.MULTILINE)
    assert re.search(r'^iteration 1: env steps 600, ', proc.stdout, re.MULTILINE)
    loaded = [runs.cartpole_checkpoint(AGENT, directory, i) for i in (0, 1)]
    for payload in loaded:
        assert payload['flags']['num_train_steps'] == 300 and payload['flags']['min_replay_size'] == 64
    first, second = (payload['counters']['learner_steps'] for payload in loaded)
    # learn_interval 1: learning starts once replay holds 64 transitions (step 64 or 65), then every step.
    assert 300 - 65 <= first <= 300 - 64
    assert second - first == 300


def test_run_classic_results_csv(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    rows = runs.check_results_csv(AGENT, directory, runs.CARTPOLE, [300, 600])
    for row in rows:
        assert int(row['train_num_episodes']) >= 1 and float(row['train_episode_return']) >= 8  # CartPole lasts >= 8 steps
        assert int(row['eval_num_episodes']) >= 1 and float(row['eval_episode_return']) > 0
        assert float(row['train_step_rate']) > 0


def test_run_classic_tensorboard_events(cartpole):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    train = runs.cartpole_train_events(AGENT, directory)
    evaluation = runs.events(os.path.join(runs.only_run_dir(directory / 'runs'), 'eval'))
    assert set(train.Tags()['scalars']) == runs.EPSILON_GREEDY_TAGS
    assert set(evaluation.Tags()['scalars']) == runs.PERFORMANCE_TAGS
    for accumulator in (train, evaluation):
        for tag in runs.PERFORMANCE_TAGS:
            assert runs.scalar_steps(accumulator, tag) == [300, 600], tag
    # Epsilon decays 1 -> 0.01 over 20,000 env steps (run_classic's defaults).
    epsilon = [event.value for event in train.Scalars('agent_statistics(env_steps)/exploration_epsilon')]
    assert epsilon == pytest.approx([1 - 0.99 * 300 / 20_000, 1 - 0.99 * 600 / 20_000], abs=1e-6)
    learner_steps = [runs.cartpole_checkpoint(AGENT, directory, i)['counters']['learner_steps'] for i in (0, 1)]
    assert runs.scalar_steps(train, 'learner_statistics(learner_steps)/loss') == learner_steps
    assert train.Tags()['images'] == []  # no screenshots unless asked


def test_resume_runs_only_the_remaining_iteration(cartpole, tmp_path):
    directory = runs.check_run_files(AGENT, cartpole, runs.CARTPOLE, 2)
    resumed = run_module(
        AGENT.module('run_classic'),
        *runs.CLASSIC_FLAGS,
        '--num_iterations=2',
        f'--load_checkpoint_file={AGENT.checkpoint(directory, runs.CARTPOLE, 0)}',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(tmp_path),
    )
    runs.assert_clean_exit(resumed)
    assert 'iteration 1, 300 env steps' in resumed.stdout
    assert not re.search(r'^iteration 0:', resumed.stdout, re.MULTILINE)
    assert re.search(r'^iteration 1: env steps 600, ', resumed.stdout, re.MULTILINE)
    assert sorted(os.listdir(tmp_path / 'ck')) == ['DQN_CartPole-v1_1.ckpt', 'DQN_CartPole-v1_best.ckpt', 'DQN_CartPole-v1_results.csv']  # best: --checkpoint_dir
    payload = checkpoint.load_checkpoint(str(tmp_path / 'ck' / 'DQN_CartPole-v1_1.ckpt'), agent_name='DQN')
    assert payload['iteration'] == 1
    assert payload['counters']['env_steps'] == 600 and payload['state']['env_steps'] == 600
    before = runs.cartpole_checkpoint(AGENT, directory, 0)['counters']['learner_steps']
    # Learner steps continue from the checkpoint (replay is not saved, so it warms up again for 64 steps).
    assert before < payload['counters']['learner_steps'] <= before + 300
    rows = runs.read_csv(tmp_path / 'ck' / 'DQN_CartPole-v1_results.csv')
    assert [(row['iteration'], row['env_steps']) for row in rows] == [('1', '600')]
    train = runs.events(os.path.join(runs.only_run_dir(tmp_path / 'runs'), 'train'))
    assert runs.scalar_steps(train, 'performance(env_steps)/episode_return') == [600]
    epsilon = train.Scalars('agent_statistics(env_steps)/exploration_epsilon')[0].value
    assert epsilon == pytest.approx(1 - 0.99 * 600 / 20_000, abs=1e-6)  # the schedule continues from 300


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


# --------------------------------------------------------------------------------------------- Atari


def test_run_atari_pong_checkpoint_and_screenshots(pong):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] == 11  # Pong preset: 10 envs, an update per 10 env steps once replay holds 64 3-step transitions (env steps 100-200)
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 4, 8, 8)
    assert tuple(network['head.weight'].shape) == (6, 512)  # Pong's minimal action set

    _, directory = pong
    train = runs.events(os.path.join(runs.only_run_dir(directory / 'runs'), 'train'))
    assert train.Tags()['images'] == ['screenshot']
    screenshots = train.Images('screenshot')
    assert [image.step for image in screenshots] == [50, 100, 150, 200]
    assert all((image.width, image.height) == (84, 84) for image in screenshots)
    # One Atari env step is 4 frames; the step rate stays in env steps.
    assert 'performance(env_steps)/step_rate' in train.Tags()['scalars']


def test_run_atari_breakout_without_tensorboard(tmp_path):
    proc = run_module(
        AGENT.module('run_atari'),
        '--environment_name=Breakout',
        *runs.ATARI_FLAGS,
        '--nouse_tensorboard',
        '--checkpoint_dir=ck',
        '--runs_dir=runs',
        cwd=str(tmp_path),
    )
    runs.check_run_files(AGENT, (proc, tmp_path), 'Breakout', 1)
    payload = runs.check_checkpoint(AGENT, tmp_path, 'Breakout', 0, 200, 'atari')
    assert tuple(payload['state']['network']['head.weight'].shape) == (4, 512)  # NOOP, FIRE, RIGHT, LEFT
    assert payload['flags']['terminal_on_life_loss'] is True
    assert not (tmp_path / 'runs').exists()  # --nouse_tensorboard writes no event files
    assert re.search(r'^iteration 0: env steps 200, ', proc.stdout, re.MULTILINE)


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    runs.check_pong_eval(AGENT, pong, tmp_path, '--environment_name=Pong')
