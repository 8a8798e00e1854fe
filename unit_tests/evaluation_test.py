"""evaluation: the evaluation actors an eval_agent names (the whole command runs in each agent's run_test)."""

import importlib.util
import types

import gymnasium
import numpy as np
import pytest
from torch import nn

from deep_rl_zoo import evaluation, settings
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor, PolicyGreedyActor, RecurrentEpsilonGreedyActor, RecurrentPolicyGreedyActor
from deep_rl_zoo.networks.common import MlpTorso
from deep_rl_zoo.networks.policy import RecurrentActorCritic

EVAL_SETTINGS = settings.EPSILON_GREEDY_EVALUATION.replace(eval_exploration_epsilon=0.25, seed=3)
TRAIN_SETTINGS = settings.Common()


def env_with(action_space: gymnasium.Space) -> types.SimpleNamespace:
    return types.SimpleNamespace(single_action_space=action_space)


def test_most_likely_action_clips_to_the_bounds_of_continuous_actions_only():
    box = gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)
    continuous = evaluation.most_likely_action(nn.Identity(), env_with(box), EVAL_SETTINGS, TRAIN_SETTINGS)
    discrete = evaluation.most_likely_action(nn.Identity(), env_with(gymnasium.spaces.Discrete(2)), EVAL_SETTINGS, TRAIN_SETTINGS)
    assert type(continuous) is PolicyGreedyActor and continuous.action_low.tolist() == [-2.0] and continuous.action_high.tolist() == [2.0]
    assert type(discrete) is PolicyGreedyActor and discrete.action_low is None and discrete.action_high is None


def test_most_likely_action_carries_the_core_of_a_recurrent_policy():
    network = RecurrentActorCritic(MlpTorso(4, (8,), nn.Tanh), 2, core_size=4)
    assert type(evaluation.most_likely_action(network, env_with(gymnasium.spaces.Discrete(2)), EVAL_SETTINGS, TRAIN_SETTINGS)) is RecurrentPolicyGreedyActor


def test_epsilon_greedy_takes_the_flags_epsilon_and_seed_and_a_recurrent_agents_actor():
    env = env_with(gymnasium.spaces.Discrete(2))
    actor = evaluation.epsilon_greedy(nn.Identity(), env, EVAL_SETTINGS, TRAIN_SETTINGS)
    recurrent = evaluation.epsilon_greedy(nn.Identity(), env, EVAL_SETTINGS, TRAIN_SETTINGS, actor_class=RecurrentEpsilonGreedyActor)
    assert type(actor) is EpsilonGreedyActor and actor.epsilon == 0.25
    assert type(recurrent) is RecurrentEpsilonGreedyActor and recurrent.epsilon == 0.25
    assert actor._random.random() == np.random.default_rng(3).random()


def test_without_the_mp4_writer_eval_agent_stops_before_playing_with_one_line_naming_the_flag(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *args: None if name == 'imageio_ffmpeg' else real_find_spec(name, *args))
    monkeypatch.setattr(evaluation.checkpoint, 'load_checkpoint', lambda *args, **kwargs: pytest.fail('the checkpoint was loaded'))
    recording = settings.EVALUATION.replace(recording_video_dir='videos', load_checkpoint_file='checkpoints/PPO_CartPole-v1.ckpt')
    with pytest.raises(ValueError) as error:
        evaluation.evaluate_checkpoint(recording, 'PPO', settings.Common, lambda *args: pytest.fail('played'), evaluation.most_likely_action)
    assert str(error.value).startswith('--recording_video_dir=videos: writing the mp4 needs the imageio-ffmpeg package, which is not installed')
    assert str(error.value).endswith('pass --recording_video_dir= to play without a video')
    silent = recording.replace(recording_video_dir='')  # no video: no writer needed, the checkpoint loads
    with pytest.raises(pytest.fail.Exception, match='the checkpoint was loaded'):
        evaluation.evaluate_checkpoint(silent, 'PPO', settings.Common, lambda *args: pytest.fail('played'), evaluation.most_likely_action)
