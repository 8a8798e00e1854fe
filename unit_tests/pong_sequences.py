"""Learners of R2D2's family (R2D2, NGU, Agent57) on Pong-shaped sequences without the game: the agent's own
`make_network` and `build_learner` for Atari (Nature CNN torsos, 512-unit LSTMs), given a stand-in environment with
Pong's spaces, fed one rollout of Pong-like frames (a dark field, two paddles and a ball that move from step to step,
stacked 4 deep) as an actor's buffer holds it. Used by the --bf16_learning tests."""

import copy

import gymnasium as gym
import numpy as np
import torch

from deep_rl_zoo.agent57.settings import Agent57Settings
from deep_rl_zoo.ngu import replay as ngu_replay

NUM_ACTIONS = 6
NUM_ENVS = 4
NUM_STEPS = 24

# The learner settings of the tests: batches of 8 sequences of 4 burn-in + 8 learned steps, so every torso call of an
# update holds at least 32 frames (the burn-in's 8 x 4) and takes the channels-last path; nothing learned while fed.
# Agent57's settings class has every field of R2D2's and NGU's, so the three agents' builders take these settings.
SETTINGS = Agent57Settings(
    environment_kind='atari', environment_name='Pong', seed=3, num_actors=1, num_envs_per_actor=NUM_ENVS, actor_update_interval=NUM_STEPS,
    replay_capacity=100, min_replay_size=100, priority_exponent=0.9, priority_eps=1e-6, unroll_length=8, burn_in=4,
    compress_replay=True, learning_rate=1e-4, adam_eps=1e-3, batch_size=8, learn_interval=10**6, target_network_update_interval=100,
    n_step=5, discount=0.997, priority_eta=0.9, value_rescaling_eps=1e-3, importance_sampling_exponent_begin_value=0.6,
    importance_sampling_exponent_end_value=0.6, importance_sampling_exponent_decay_step=1, max_grad_norm=40.0,
    # NGU and Agent57
    num_policies=4, intrinsic_reward_beta=0.3, gamma_max=0.997, gamma_min=0.99, retrace_lambda=0.95, intrinsic_learning_rate=5e-4,
    intrinsic_train_steps=5, ucb_window_size=10,
)  # fmt: skip


class PongSpaces:
    """The environment `make_network`, `build_learner` and `rollout_spec` are given: Pong's spaces, never stepped."""

    single_observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    single_action_space = gym.spaces.Discrete(NUM_ACTIONS)
    num_envs = 1


def pong_like_frames(num_steps: int, num_envs: int, seed: int) -> np.ndarray:
    """Frame stacks [T + 1, N, 4, 84, 84] uint8: Pong's grey field (87) between white walls, a paddle on each side and
    a ball bouncing, each environment from its own random start."""
    random = np.random.default_rng(seed)
    frames = np.full((num_steps + 4, num_envs, 84, 84), 87, np.uint8)
    frames[:, :, 12:14], frames[:, :, 78:80] = 236, 236
    position = random.uniform([20, 10], [70, 70], (num_envs, 2))
    velocity = random.choice([-2.0, 2.0], (num_envs, 2))
    paddles = random.uniform(20, 60, (num_envs, 2))
    for t in range(num_steps + 4):
        for env in range(num_envs):
            row, column = position[env].astype(int)
            frames[t, env, row : row + 2, column] = 236
            left, right = paddles[env].astype(int)
            frames[t, env, left : left + 8, 8:10], frames[t, env, right : right + 8, 74:76] = 213, 92
        position += velocity
        velocity[(position < [14, 10]) | (position > [76, 72])] *= -1
        paddles = np.clip(paddles + random.normal(0, 2, paddles.shape), 14, 70)
    return np.stack([frames[t : t + 4].transpose(1, 0, 2, 3) for t in range(num_steps + 1)])


def pong_like_rollout(agent_module, seed: int = 0) -> dict[str, torch.Tensor]:
    """One rollout of NUM_STEPS steps of NUM_ENVS environments in `agent_module`'s actor buffer (`rollout_spec`):
    Pong-like frames, random actions, rare rewards of +-1, no episode end, stored LSTM states in [-0.5, 0.5]; NGU's and
    Agent57's extras with policy j = environment mod N and intrinsic rewards in [0, 1]."""
    random = np.random.default_rng(seed)
    spec = agent_module.rollout_spec(NUM_STEPS, 'atari')(PongSpaces(), NUM_ENVS, 0)
    buffer = {name: torch.zeros(shape, dtype=dtype) for name, (shape, dtype) in spec.items()}
    frames = torch.from_numpy(pong_like_frames(NUM_STEPS, NUM_ENVS, seed))
    action = random.integers(NUM_ACTIONS, size=(NUM_STEPS, NUM_ENVS))
    reward = random.choice(np.array([-1.0, 0.0, 1.0], np.float32), (NUM_STEPS, NUM_ENVS), p=[0.05, 0.9, 0.05])
    buffer['observation'].copy_(frames[:-1])
    buffer['final_observation'].copy_(frames[1:])
    buffer['action'].copy_(torch.from_numpy(action))
    buffer['reward'].copy_(torch.from_numpy(reward))
    state = buffer['recurrent_state']
    state.copy_(torch.from_numpy(random.uniform(-0.5, 0.5, state.shape).astype(np.float32)))
    if 'extras' in buffer:  # NGU, Agent57: the previous action and rewards, the policy, the step's intrinsic reward
        extras = buffer['extras']
        extras[1:, :, ngu_replay.PREVIOUS_ACTION] = torch.from_numpy(action[:-1]).float()
        extras[1:, :, ngu_replay.PREVIOUS_REWARD] = torch.from_numpy(reward[:-1])
        extras[:, :, ngu_replay.INTRINSIC_REWARD] = torch.from_numpy(random.uniform(0, 1, (NUM_STEPS, NUM_ENVS)).astype(np.float32))
        extras[1:, :, ngu_replay.PREVIOUS_INTRINSIC_REWARD] = extras[:-1, :, ngu_replay.INTRINSIC_REWARD]
        extras[:, :, ngu_replay.POLICY] = torch.arange(NUM_ENVS).float() % SETTINGS.num_policies
    else:  # R2D2: the carried state ends with the previous action and reward
        state[1:, :, -2] = torch.from_numpy(action[:-1]).float()
        state[1:, :, -1] = torch.from_numpy(reward[:-1])
        state[0, :, -2:] = 0.0
    return buffer


def pong_learners(agent_module, *bf16_learning: bool, seed: int = 0) -> list:
    """One learner of `agent_module` (r2d2, ngu or agent57 `agent`) per `bf16_learning` value, each from the same
    initial network (seed 0) and fed the same rollout, so each draws the same batches."""
    torch.manual_seed(0)
    network = agent_module.make_network(PongSpaces(), SETTINGS)
    rollout = pong_like_rollout(agent_module, seed)
    learners = []
    for bf16 in bf16_learning:
        learner = agent_module.build_learner(copy.deepcopy(network), PongSpaces(), SETTINGS.replace(bf16_learning=bf16), 0, torch.device('cpu'))
        learner.update([rollout])
        assert learner.learner_steps == 0 and learner.replay.num_sequences >= SETTINGS.batch_size
        learners.append(learner)
    return learners


def gradient(module: torch.nn.Module) -> torch.Tensor:
    """The gradients of `module`'s parameters (zeros where none reached) as one vector."""
    return torch.cat([(parameter.grad if parameter.grad is not None else torch.zeros_like(parameter)).flatten() for parameter in module.parameters()])
