"""End-to-end runs of A2C's gradient variant as subprocesses on tiny budgets: run_classic_grad on CartPole-v1 with two
actor processes sending int8 gradients, eval_agent (A2C's) on its checkpoint with the mp4 read back, run_atari_grad on
Pong with the real ROM and eval_agent on that checkpoint, a bad compression flag refused.
"""

import pytest

from deep_rl_zoo import checkpoint
from unit_tests import value_agents
from unit_tests.a2c import run_test
from unit_tests.value_agents import CARTPOLE

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('A2C-grad', 'deep_rl_zoo.a2c', run_suffix='_grad')

cartpole = value_agents.cartpole_fixture(AGENT, flags=(*run_test.CLASSIC_FLAGS, '--gradient_compression=int8'))
pong = value_agents.pong_fixture(AGENT, atari_flags=run_test.ATARI_FLAGS)


def load(directory, environment, iteration):
    return checkpoint.load_checkpoint(AGENT.checkpoint(directory, environment, iteration), agent_name='A2C-grad', environment_name=environment)


def test_run_classic_grad_applies_one_averaged_actor_gradient_per_batch_of_rollouts(cartpole):
    directory = value_agents.check_run_files(AGENT, cartpole, CARTPOLE, 2)
    rows = value_agents.check_results_csv(AGENT, directory, CARTPOLE, [300, 600])
    assert [row['learner_steps'] for row in rows] == ['15', '30']  # 2 actors x 2 envs x 5 steps = 20 samples a step
    first, last = load(directory, CARTPOLE, 0), load(directory, CARTPOLE, 1)
    assert last['state']['samples_used'] == 600 and last['counters']['learner_steps'] == 30
    assert last['flags']['gradient_compression'] == 'int8' and last['flags']['num_actors'] == 2
    assert 'square_avg' in last['state']['optimizer']['state'][0]  # the learner's RMSProp, saved for resuming
    assert not (last['state']['network']['policy_head.weight'] == first['state']['network']['policy_head.weight']).all()
    train = value_agents.cartpole_train_events(AGENT, directory)
    tags = set(train.Tags()['scalars'])
    for name in ('policy_loss', 'value_loss', 'entropy', 'explained_variance', 'grad_norm', 'learning_rate'):
        assert f'learner_statistics(learner_steps)/{name}' in tags, sorted(tags)


def test_eval_agent_plays_the_gradient_variants_cartpole_checkpoint(cartpole, tmp_path):
    value_agents.check_cartpole_eval(AGENT, cartpole, tmp_path)


def test_run_atari_grad_trains_on_pong_with_bfloat16_gradients(pong):
    directory = value_agents.check_run_files(AGENT, pong, 'Pong', 1)
    rows = value_agents.check_results_csv(AGENT, directory, 'Pong', [200])
    assert rows[0]['learner_steps'] == '20'
    payload = load(directory, 'Pong', 0)
    assert payload['state']['samples_used'] == 200
    assert payload['flags']['gradient_compression'] == 'bfloat16' and payload['flags']['environment_kind'] == 'atari'
    assert payload['state']['network']['torso.convs.0.weight'].shape == (32, 4, 8, 8)


def test_eval_agent_plays_the_gradient_variants_pong_checkpoint(pong, tmp_path):
    value_agents.check_pong_eval(AGENT, pong, tmp_path)


def test_an_unknown_compression_fails_with_one_error_line_naming_the_choices(tmp_path):
    lines = value_agents.failed_cleanly(
        value_agents.run_module(AGENT.module('run_classic'), '--gradient_compression=zip', '--checkpoint_dir=ck', cwd=str(tmp_path))
    )
    assert lines[0].startswith('error: flag --gradient_compression=zip') and '<none|bfloat16|int8>' in lines[0], lines
    assert not (tmp_path / 'ck').exists()
