"""DRQN end to end, as a user runs it (subprocesses, real environments, tiny budgets): run_classic with its
checkpoints, CSV and TensorBoard, run_atari on flickering Pong (single frames, obscured observations),
eval_agent videos of both, and a bad flag. The runs and the checks every value-based agent shares are in
unit_tests/value_agents.py."""

import pytest

from unit_tests import value_agents as runs
from unit_tests.helpers import run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = runs.Agent('DRQN', 'deep_rl_zoo.drqn')
cartpole = runs.cartpole_fixture(
    AGENT, flags=('--num_train_steps=300', '--num_eval_steps=100', '--min_replay_size=64', '--batch_size=8', '--noprogress')
)
# Flickering Pong, with DRQN's own budget (batches of 2 sequences, 50 evaluation steps).
pong = runs.pong_fixture(
    AGENT,
    '--obscure_probability=0.5',
    atari_flags=(
        '--replay_capacity=2000',
        '--min_replay_size=64',
        '--batch_size=2',
        '--num_train_steps=200',
        '--num_eval_steps=50',
        '--num_iterations=1',
        '--noprogress',
    ),
)


def test_run_classic_checkpoints_csv_and_tensorboard(cartpole):
    directory = runs.check_cartpole_run(AGENT, cartpole)
    loaded = [runs.cartpole_checkpoint(AGENT, directory, i) for i in (0, 1)]
    for payload in loaded:
        assert payload['flags']['unroll_length'] == 8
        assert tuple(payload['state']['network']['lstm.weight_hh_l0'].shape) == (4 * 128, 128)
    first, second = (payload['counters']['learner_steps'] for payload in loaded)
    # learn_interval 4: learning starts once replay holds 64 steps, then every 4 env steps.
    assert 0 < first < 300 // 4 and second - first == 300 // 4
    rows = runs.read_csv(directory / 'ck' / AGENT.file_name(runs.CARTPOLE, 'results'))
    assert all(int(row['eval_num_episodes']) >= 1 and float(row['eval_episode_return']) > 0 for row in rows)
    train = runs.cartpole_train_events(AGENT, directory)
    assert {'learner_statistics(learner_steps)/loss', 'agent_statistics(env_steps)/replay_size'} <= set(train.Tags()['scalars'])


def test_eval_agent_on_cartpole_checkpoint_records_video(cartpole, tmp_path):
    runs.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_flickering_pong_checkpoint(pong):
    payload = runs.check_pong_run(AGENT, pong)
    assert payload['counters']['learner_steps'] > 0
    flags = payload['flags']
    assert flags['environment_frame_stack'] == 1 and flags['obscure_probability'] == 0.5 and flags['unroll_length'] == 10
    network = payload['state']['network']
    assert tuple(network['torso.convs.0.weight'].shape) == (32, 1, 8, 8)  # single frames
    assert tuple(network['lstm.weight_ih_l0'].shape) == (4 * 512, 3136)  # conv features into a 512-unit LSTM
    assert tuple(network['head.weight'].shape) == (6, 512)
    _, directory = pong
    assert not (directory / 'runs').exists()


def test_eval_agent_on_pong_checkpoint_records_video(pong, tmp_path):
    frames = runs.check_pong_eval(AGENT, pong, tmp_path, '--environment_name=Pong')
    assert all(frame.std() > 0 for frame in frames)  # the video shows the screen, never the obscured input


def test_bad_obscure_probability_is_one_error_line(tmp_path):
    proc = run_module(AGENT.module('run_classic'), '--obscure_probability=1.5', '--nouse_tensorboard', cwd=str(tmp_path))
    runs.failed_cleanly(proc)
    assert proc.stderr.strip().splitlines()[-1].startswith('error: flag --obscure_probability=1.5')
