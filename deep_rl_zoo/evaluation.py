"""What every eval_agent does: load a checkpoint, play it greedily, print its scores, record an mp4 of the first
episode and, with --push_to_hub, publish it. An eval_agent script names only what is its agent's own: the agents
whose checkpoints it takes, its network and its evaluation actor (`most_likely_action`, `epsilon_greedy` or its own).
"""

import os
import sys
import time
from typing import Any, Callable, Optional

import numpy as np
import torch
from torch import nn

from deep_rl_zoo import checkpoint, model_card
from deep_rl_zoo.greedy_actors import EpsilonGreedyActor, PolicyGreedyActor, RecurrentPolicyGreedyActor
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.episodes import play_episodes
from deep_rl_zoo.main_loop import action_bounds, create_environment
from deep_rl_zoo.networks.policy import RecurrentActorCritic
from deep_rl_zoo.settings import Evaluation
from deep_rl_zoo.types import Actor

# make_actor(network, env, values, train_values): eval_agent's flag values and those the checkpoint was trained with.
MakeActor = Callable[[nn.Module, VectorEnvironment, dict[str, Any], dict[str, Any]], Actor]


def most_likely_action(network: nn.Module, env: VectorEnvironment, values: dict[str, Any], train_values: dict[str, Any]) -> Actor:
    """Policy agents: the most likely action, or the mean clipped to the action bounds for continuous control; a
    recurrent policy (IMPALA's --use_lstm) carries its core state from step to step."""
    if isinstance(network, RecurrentActorCritic):
        return RecurrentPolicyGreedyActor(network)
    return PolicyGreedyActor(network, torch.device('cpu'), *action_bounds(env))


def epsilon_greedy(
    network: nn.Module, env: VectorEnvironment, values: dict[str, Any], train_values: dict[str, Any], actor_class: Callable[..., Actor] = EpsilonGreedyActor
) -> Actor:
    """Q agents: the greedy action, replaced by a uniformly random one with probability --eval_exploration_epsilon;
    `actor_class(network, epsilon, seed)` is a recurrent agent's own actor (it carries its LSTM state)."""
    return actor_class(network, values['eval_exploration_epsilon'], values['seed'])


def evaluate_checkpoint(
    eval_settings: Evaluation,
    agent_name: str | tuple[str, ...],
    make_network: Callable[[VectorEnvironment, dict[str, Any]], nn.Module],
    make_actor: MakeActor,
) -> dict[str, Any]:
    """Entry point of every eval_agent: load a checkpoint (of `agent_name`, or of one of several agents whose
    networks are alike), play it with `make_actor`'s actor, print the scores, record an mp4, publish it when asked."""
    values = eval_settings.flag_values()
    torch.set_num_threads(1)
    torch.manual_seed(values['seed'])  # what the actor samples with torch: IQN's taus, Rainbow's noisy layers
    if not values['load_checkpoint_file']:
        raise checkpoint.CheckpointError('--load_checkpoint_file is empty: pass the path of a .ckpt file written by training')
    loaded = checkpoint.load_checkpoint(values['load_checkpoint_file'], agent_name=agent_name, environment_name=values['environment_name'] or None)
    train_values = loaded['flags']
    kind = train_values.get('environment_kind')
    if kind is None:
        raise checkpoint.CheckpointError(f'{values["load_checkpoint_file"]} does not record its environment kind; retrain with this version')
    record = bool(values['recording_video_dir'])
    env = create_environment(kind, train_values, 1, values['seed'], use_python_wrappers=True, render=record)
    network = make_network(env, train_values)
    checkpoint.load_state(network, loaded['state']['network'], f'checkpoint {values["load_checkpoint_file"]}')
    network.eval()
    actor = make_actor(network, env, values, train_values)
    recorder = _RecordingActor(actor, env) if record else None
    if values['push_to_hub']:
        model_card.check_repository_id(values['hf_repository'])
    played = play_episodes(recorder or actor, env, values['num_eval_steps'], values['num_eval_episodes'], max_episodes=values['max_num_episodes'])
    env.close()
    returns = np.array([episode_return for episode_return, _ in played['finished']])
    note = ' (no episode finished: the unfinished one is reported)' if played['partial'] else ''
    print(
        f'{loaded["agent_name"]} on {loaded["environment_name"]}, checkpoint {values["load_checkpoint_file"]}: '
        f'{len(returns)} episodes, return mean {returns.mean():.2f} std {returns.std():.2f} '
        f'min {returns.min():.2f} max {returns.max():.2f}{note}'
    )
    video = None
    if recorder is not None:
        video = _write_video(recorder.frames, values['recording_video_dir'], loaded['agent_name'], loaded['environment_name'])
        print(f'video of the first episode: {video}')
    if values['push_to_hub']:
        _publish(values, loaded, [] if played['partial'] else returns.tolist(), video)
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


def _publish(values: dict[str, Any], loaded: dict[str, Any], returns: list[float], video: Optional[str]) -> None:
    """eval_agent --push_to_hub: the model folder of the evaluated checkpoint (model_card.py), then its upload."""
    repository = values['hf_repository']
    folder = values['hub_folder'] or os.path.join('hub', repository.split('/')[1])
    main_spec = getattr(sys.modules['__main__'], '__spec__', None)
    package = main_spec.name.split('.')[-2] if main_spec and main_spec.name.startswith('deep_rl_zoo.') else loaded['agent_name'].lower()
    model_card.write_model_folder(
        folder, repository_id=repository, package=package, loaded=loaded, checkpoint_path=values['load_checkpoint_file'], returns=returns, video_path=video
    )
    print(f'model folder: {folder} (model card, checkpoint, config{", video" if video else ""})')
    if not values['hub_upload']:
        print(f'not uploaded (--nohub_upload); upload it with `{model_card.upload_command(repository, folder)}`')
        return
    print(f'pushed to {model_card.push_folder(folder, repository)}')


def _write_video(frames: list[np.ndarray], directory: str, agent_name: str, environment_name: str) -> str:
    """Writes RGB frames as an H.264 mp4 (30 fps) and returns its path."""
    import imageio.v2 as imageio

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f'{agent_name}_{environment_name.replace("/", "_")}_{time.strftime("%Y%m%d-%H%M%S")}.mp4')
    imageio.mimwrite(path, frames, fps=30, macro_block_size=1)
    return path
