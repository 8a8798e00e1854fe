"""What every eval_agent does: load a checkpoint, play it greedily, print its scores, record an mp4 of the first
episode and, with --push_to_hub, publish it. An eval_agent script names only what is its agent's own: the agents
whose checkpoints it takes, its network and its evaluation actor (`most_likely_action`, `epsilon_greedy` or its own).
"""

import importlib.util
import os
import sys
import time
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import checkpoint, distributed, model_card
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor, PolicyGreedyActor, RecurrentPolicyGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.episodes import play_episodes
from deep_rl_zoo.main_loop import action_bounds, create_environment
from deep_rl_zoo.networks.policy import RecurrentActorCritic
from deep_rl_zoo.settings import Common, EpsilonGreedyEvaluation, Evaluation, Settings
from deep_rl_zoo.types import Actor

# make_actor(network, env, eval_settings, train_settings): eval_agent's settings and those the checkpoint was trained with.
MakeActor = Callable[[nn.Module, VectorEnvironment, Any, Any], Actor]


def most_likely_action(network: nn.Module, env: VectorEnvironment, eval_settings: Evaluation, train_settings: Settings) -> Actor:
    """Policy agents: the most likely action, or the mean clipped to the action bounds for continuous control; a
    recurrent policy (IMPALA's --use_lstm) carries its core state from step to step."""
    if isinstance(network, RecurrentActorCritic):
        return RecurrentPolicyGreedyActor(network)
    return PolicyGreedyActor(network, torch.device('cpu'), *action_bounds(env))


def epsilon_greedy(
    network: nn.Module,
    env: VectorEnvironment,
    eval_settings: EpsilonGreedyEvaluation,
    train_settings: Settings,
    actor_class: Callable[..., Actor] = EpsilonGreedyActor,
) -> Actor:
    """Q agents: the greedy action, replaced by a uniformly random one with probability --eval_exploration_epsilon;
    `actor_class(network, epsilon, seed)` is a recurrent agent's own actor (it carries its LSTM state)."""
    return actor_class(network, eval_settings.eval_exploration_epsilon, eval_settings.seed)


def evaluate_checkpoint(
    eval_settings: Evaluation,
    agent_name: str | tuple[str, ...],
    settings_class: type[Common],
    make_network: Callable[[VectorEnvironment, Any], nn.Module],
    make_actor: MakeActor,
) -> dict[str, Any]:
    """Entry point of every eval_agent: load a checkpoint (of `agent_name`, or of one of several agents whose
    networks are alike), play it with `make_actor`'s actor, print the scores, record an mp4, publish it when asked.
    The checkpoint's saved flags are made the settings it was trained with, an instance of the agent's
    `settings_class` (settings it predates keep their defaults), from which its environment and network are made."""
    distributed.set_up_torch(1)
    torch.manual_seed(eval_settings.seed)  # what the actor samples with torch: IQN's taus, Rainbow's noisy layers
    if eval_settings.recording_video_dir:
        _check_video_writer(eval_settings.recording_video_dir)
    checkpoint_file = eval_settings.load_checkpoint_file
    if not checkpoint_file:
        raise checkpoint.CheckpointError('--load_checkpoint_file is empty: pass the path of a .ckpt file written by training')
    loaded = checkpoint.load_checkpoint(checkpoint_file, agent_name=agent_name, environment_name=eval_settings.environment_name or None)
    if 'environment_kind' not in loaded['flags']:
        raise checkpoint.CheckpointError(f'{checkpoint_file} does not record its environment kind; retrain with this version')
    train_settings = settings_class().with_values(loaded['flags'])
    record = bool(eval_settings.recording_video_dir)
    env = create_environment(train_settings, 1, eval_settings.seed, use_python_wrappers=True, render=record)
    network = make_network(env, train_settings)
    checkpoint.load_state(network, loaded['state']['network'], f'checkpoint {checkpoint_file}')
    network.eval()
    actor = make_actor(network, env, eval_settings, train_settings)
    recorder = _RecordingActor(actor, env) if record else None
    if eval_settings.push_to_hub:
        model_card.check_repository_id(eval_settings.hf_repository)
    played = play_episodes(
        recorder or actor, env, eval_settings.num_eval_steps, eval_settings.num_eval_episodes, max_episodes=eval_settings.max_num_episodes
    )
    env.close()
    returns = np.array([episode_return for episode_return, _ in played['finished']])
    note = ' (no episode finished: the unfinished one is reported)' if played['partial'] else ''
    print(
        f'{loaded["agent_name"]} on {loaded["environment_name"]}, checkpoint {checkpoint_file}: '
        f'{len(returns)} episodes, return mean {returns.mean():.2f} std {returns.std():.2f} '
        f'min {returns.min():.2f} max {returns.max():.2f}{note}'
    )
    video = None
    if recorder is not None:
        video = _write_video(recorder.frames, eval_settings.recording_video_dir, loaded['agent_name'], loaded['environment_name'])
        print(f'video of the first episode: {video}')
    if eval_settings.push_to_hub:
        _publish(eval_settings, loaded, [] if played['partial'] else returns.tolist(), video)
    return {'returns': returns, 'partial': played['partial']}


class _RecordingActor:
    """Passes through to `actor` and keeps env 0's RGB frames until its first episode ends."""

    def __init__(self, actor: Actor, env: VectorEnvironment):
        self.actor = actor
        self.env = env
        self.frames: list[np.ndarray] = []
        self.recording = True

    def act(self, observation: np.ndarray) -> np.ndarray:
        if not self.frames:  # the environment has just been reset
            self.frames.append(self.env.render())
        return self.actor.act(observation)

    def observe(self, action: np.ndarray, step: VectorStep) -> None:
        self.actor.observe(action, step)  # a recurrent actor learns of episode ends here
        if self.recording:
            self.recording = not (step.terminated[0] or step.truncated[0])
            if self.recording:
                self.frames.append(self.env.render())


def _publish(eval_settings: Evaluation, loaded: dict[str, Any], returns: list[float], video: Optional[str]) -> None:
    """eval_agent --push_to_hub: the model folder of the evaluated checkpoint (model_card.py), then its upload."""
    repository = eval_settings.hf_repository
    folder = eval_settings.hub_folder or os.path.join('hub', repository.split('/')[1])
    main_spec = getattr(sys.modules['__main__'], '__spec__', None)
    package = main_spec.name.split('.')[-2] if main_spec and main_spec.name.startswith('deep_rl_zoo.') else loaded['agent_name'].lower()
    model_card.write_model_folder(
        folder, repository_id=repository, package=package, loaded=loaded, checkpoint_path=eval_settings.load_checkpoint_file, returns=returns, video_path=video
    )
    print(f'model folder: {folder} (model card, checkpoint, config{", video" if video else ""})')
    if not eval_settings.hub_upload:
        print(f'not uploaded (--nohub_upload); upload it with `{model_card.upload_command(repository, folder)}`')
        return
    print(f'pushed to {model_card.push_folder(folder, repository)}')


def _check_video_writer(directory: str) -> None:
    """Before any episode is played: the mp4 writer (imageio's FFMPEG plugin, from the imageio-ffmpeg package) is
    installed. Without it imageio would pick another plugin by the file name and fail only after the evaluation."""
    if importlib.util.find_spec('imageio_ffmpeg') is None:
        raise ValueError(
            f'--recording_video_dir={directory}: writing the mp4 needs the imageio-ffmpeg package, which is not installed '
            '(requirements.txt pins it: pip install -r requirements.txt); pass --recording_video_dir= to play without a video'
        )


def _write_video(frames: list[np.ndarray], directory: str, agent_name: str, environment_name: str) -> str:
    """Writes RGB frames as an H.264 mp4 (30 fps) and returns its path."""
    import imageio.v2 as imageio

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f'{agent_name}_{environment_name.replace("/", "_")}_{time.strftime("%Y%m%d-%H%M%S")}.mp4')
    imageio.mimwrite(path, frames, format='FFMPEG', fps=30, macro_block_size=1)
    return path
