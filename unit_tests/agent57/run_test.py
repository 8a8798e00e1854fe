"""Agent57 end to end as subprocesses on tiny budgets: run_atari on Pong and on Montezuma's Revenge (one actor process
of two environments, snappy-compressed replay; on Montezuma the rooms each episode visits logged to TensorBoard and the
results CSV), their checkpoints, then eval_agent's score line and mp4 (the greedy evaluation is eval_agent's here: the
runs skip their own)."""

import pytest

from unit_tests import value_agents
from unit_tests.ngu.run_test import ATARI_FLAGS

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

AGENT = value_agents.Agent('Agent57', 'deep_rl_zoo.agent57')
atari = value_agents.atari_fixture(AGENT, *ATARI_FLAGS)  # NGU's tiny Atari run


def test_run_atari_checkpoints_and_counts_montezuma_rooms(atari):
    game, run = atari
    directory = value_agents.check_run_files(AGENT, run, game, 1)
    (row,) = value_agents.check_atari_results(AGENT, game, directory, [100])
    assert int(row['learner_steps']) > 0
    loaded = value_agents.atari_checkpoint(AGENT, game, directory)
    assert loaded['flags']['compress_replay'] is True and loaded['flags']['ucb_window_size'] == 160
    network = loaded['state']['network']
    num_actions = value_agents.NUM_ACTIONS[game]
    assert network['q.extrinsic.head.advantage.2.weight'].shape == network['q.intrinsic.head.advantage.2.weight'].shape == (num_actions, 512)  # two networks
    assert network['q.extrinsic.lstm.weight_hh_l0'].shape == network['q.intrinsic.lstm.weight_hh_l0'].shape == (4 * 512, 512)
    assert network['rnd.target.0.0.weight'].shape == (32, 1, 8, 8)  # RND sees the newest frame


def test_eval_agent_plays_the_atari_checkpoint_and_records_it(atari, tmp_path):
    game, (proc, directory) = atari
    value_agents.assert_clean_exit(proc)
    value_agents.check_atari_eval(AGENT, game, directory, tmp_path)
