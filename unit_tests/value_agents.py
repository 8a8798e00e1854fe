"""Test pieces shared by the value-based agents' packages (unit_tests/<agent>/): end-to-end runs of their scripts
as subprocesses with tiny budgets, with the checks every agent's runs must pass, and the hand-built stand-ins of
the in-process agent tests.

A run_test module names its agent and takes its runs as module fixtures (one subprocess serves several tests):

    AGENT = value_agents.Agent('QRDQN', 'deep_rl_zoo.qr_dqn')
    cartpole = value_agents.cartpole_fixture(AGENT)
    pong = value_agents.pong_fixture(AGENT)

    def test_run_classic(cartpole):
        directory = value_agents.check_cartpole_run(AGENT, cartpole)
        ...  # what is particular to this agent
"""

import csv
import dataclasses
import glob
import math
import os
import re

import imageio.v2 as imageio
import numpy as np
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn

from deep_rl_zoo import checkpoint
from deep_rl_zoo import replay as replay_lib
from deep_rl_zoo.networks.value import expected_value
from deep_rl_zoo.replay import Transition
from deep_rl_zoo.replay_agent import TransitionBatch
from deep_rl_zoo.schedule import LinearSchedule
from unit_tests.helpers import RESULT_COLUMNS, TRACEBACK, run_module, stderr_lines

# ============================================================================== end-to-end runs (subprocesses)

CARTPOLE = 'CartPole-v1'
CLASSIC_FLAGS = (
    f'--environment_name={CARTPOLE}',
    '--num_train_steps=300',
    '--num_eval_steps=100',
    '--min_replay_size=64',
    '--batch_size=32',
    '--noprogress',
    '--preset=none',  # the run scripts' own defaults, which these tests pin (DQN has a CartPole preset)
)
ATARI_FLAGS = (
    '--replay_capacity=2000',
    '--min_replay_size=64',
    '--num_train_steps=200',
    '--num_eval_steps=100',
    '--num_iterations=1',
    '--noprogress',
)
PERFORMANCE_TAGS = {
    'performance(env_steps)/episode_return',
    'performance(env_steps)/episode_steps',
    'performance(env_steps)/num_episodes',
    'performance(env_steps)/step_rate',
}
# The train scalars of an epsilon-greedy agent over uniform replay.
EPSILON_GREEDY_TAGS = PERFORMANCE_TAGS | {
    'agent_statistics(env_steps)/exploration_epsilon',
    'agent_statistics(env_steps)/replay_size',
    'learner_statistics(learner_steps)/loss',
}
UNFINISHED_NOTE = '(no episode finished: the unfinished one is reported)'


@dataclasses.dataclass(frozen=True)
class Agent:
    """One agent package under test: the name its checkpoints and printouts carry, and its Python package."""

    name: str  # 'DQN'
    package: str  # 'deep_rl_zoo.dqn'
    run_suffix: str = ''  # '_grad': a variant's run scripts (run_classic_grad, ...); eval_agent is the package's

    def module(self, script: str) -> str:
        return f'{self.package}.{script}{self.run_suffix if script.startswith("run_") else ""}'

    @property
    def return_line(self) -> re.Pattern:
        """eval_agent's score line; groups: environment, checkpoint, episodes, return mean."""
        return re.compile(rf'^{re.escape(self.name)} on (\S+), checkpoint (\S+): (\d+) episodes, return mean (-?\d+\.\d\d) std', re.MULTILINE)

    def file_name(self, environment: str, iteration) -> str:
        """`iteration` an int for a checkpoint, 'results' for the results CSV."""
        return f'{self.name}_{environment}_{iteration}.ckpt' if iteration != 'results' else f'{self.name}_{environment}_results.csv'

    def checkpoint(self, directory, environment: str, iteration: int) -> str:
        return str(directory / 'ck' / self.file_name(environment, iteration))


def assert_clean_exit(proc):
    assert proc.returncode == 0, f'exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}'
    assert TRACEBACK not in proc.stderr


def failed_cleanly(proc):
    """Asserts a non-zero exit without a traceback; returns the non-empty stderr lines."""
    assert proc.returncode != 0 and TRACEBACK not in proc.stderr, proc.stderr
    return stderr_lines(proc)


def read_csv(path):
    with open(path, newline='') as file:
        return list(csv.DictReader(file))


def events(directory):
    accumulator = EventAccumulator(str(directory), size_guidance={'scalars': 0, 'images': 0})
    accumulator.Reload()
    return accumulator


def scalar_steps(accumulator, tag):
    return [event.step for event in accumulator.Scalars(tag)]


def only_run_dir(runs_dir):
    runs = sorted(os.listdir(runs_dir))
    assert len(runs) == 1, runs
    return os.path.join(runs_dir, runs[0])


def read_video(path):
    reader = imageio.get_reader(path)
    try:
        return [frame for frame in reader]
    finally:
        reader.close()


# ------------------------------------------------------------------------------------------ fixtures


def _directory_name(agent: Agent, environment: str) -> str:
    return f'{agent.package.rsplit(".", 1)[-1]}_{environment.lower().split("-")[0]}'


def cartpole_fixture(agent: Agent, flags=CLASSIC_FLAGS):
    """A module fixture `cartpole`: two iterations of 300 steps on CartPole-v1 with TensorBoard, (proc, directory)."""

    def cartpole(tmp_path_factory):
        directory = tmp_path_factory.mktemp(_directory_name(agent, CARTPOLE))
        proc = run_module(
            agent.module('run_classic'), *flags, '--num_iterations=2', '--checkpoint_dir=ck', '--runs_dir=runs', cwd=str(directory)
        )
        return proc, directory

    return pytest.fixture(scope='module', name='cartpole')(cartpole)


def pong_fixture(agent: Agent, *flags, atari_flags=ATARI_FLAGS, tensorboard=False):
    """A module fixture `pong`: one tiny iteration on Pong (ATARI_FLAGS then `flags`), (proc, directory).

    Without TensorBoard unless asked; with it, events go to runs/."""

    def pong(tmp_path_factory):
        directory = tmp_path_factory.mktemp(_directory_name(agent, 'Pong'))
        board = ('--runs_dir=runs',) if tensorboard else ('--nouse_tensorboard',)
        proc = run_module(
            agent.module('run_atari'), '--environment_name=Pong', *atari_flags, *flags, *board, '--checkpoint_dir=ck', cwd=str(directory)
        )
        return proc, directory

    return pytest.fixture(scope='module', name='pong')(pong)


# --------------------------------------------------------------------------------- checks of a run


def check_run_files(agent: Agent, run, environment: str, num_iterations: int):
    """A finished run: exit 0, no traceback, and ck/ (its --checkpoint_dir) holds exactly one checkpoint per
    iteration, the CSV and, once an evaluation scored, the best checkpoint (--save_best_metric=eval_return)."""
    proc, directory = run
    assert_clean_exit(proc)
    results = agent.file_name(environment, 'results')
    scored = any(math.isfinite(float(row['eval_episode_return'])) for row in read_csv(directory / 'ck' / results))
    best = [f'{agent.name}_{environment}_best.ckpt'] if scored else []
    expected = [agent.file_name(environment, i) for i in range(num_iterations)] + best + [results]
    assert sorted(os.listdir(directory / 'ck')) == expected
    return directory


def check_checkpoint(agent: Agent, directory, environment: str, iteration: int, env_steps: int, kind: str):
    """Loads one checkpoint (of this agent and environment) and checks its counters; returns the payload."""
    payload = checkpoint.load_checkpoint(
        agent.checkpoint(directory, environment, iteration), agent_name=agent.name, environment_name=environment
    )
    assert payload['iteration'] == iteration and payload['counters']['iteration'] == iteration
    assert payload['counters']['env_steps'] == env_steps
    assert payload['state']['env_steps'] == env_steps  # the agent's own counter agrees
    assert payload['state']['learner_steps'] == payload['counters']['learner_steps']
    assert set(payload['state']) >= {'network', 'target_network', 'optimizer'}
    assert payload['flags']['environment_kind'] == kind
    return payload


def check_results_csv(agent: Agent, directory, environment: str, env_steps):
    """The results CSV: the exact header, one row per iteration with its env steps and checkpoint; returns rows."""
    rows = read_csv(directory / 'ck' / agent.file_name(environment, 'results'))
    assert list(rows[0]) == RESULT_COLUMNS
    assert [(row['iteration'], row['env_steps']) for row in rows] == [(str(i), str(steps)) for i, steps in enumerate(env_steps)]
    assert [row['checkpoint'] for row in rows] == [f'ck/{agent.file_name(environment, i)}' for i in range(len(env_steps))]
    return rows


def check_cartpole_run(agent: Agent, run):
    """The `cartpole` fixture's run: two checkpoints (300 and 600 env steps) and the CSV; returns its directory."""
    directory = check_run_files(agent, run, CARTPOLE, 2)
    for iteration in (0, 1):
        check_checkpoint(agent, directory, CARTPOLE, iteration, 300 * (iteration + 1), 'classic')
    check_results_csv(agent, directory, CARTPOLE, [300, 600])
    return directory


def cartpole_checkpoint(agent: Agent, directory, iteration: int = 1):
    return checkpoint.load_checkpoint(agent.checkpoint(directory, CARTPOLE, iteration), agent_name=agent.name, environment_name=CARTPOLE)


def check_pong_run(agent: Agent, run):
    """The `pong` fixture's run: one checkpoint of 200 env steps and the CSV; returns the checkpoint's payload."""
    directory = check_run_files(agent, run, 'Pong', 1)
    check_results_csv(agent, directory, 'Pong', [200])
    return check_checkpoint(agent, directory, 'Pong', 0, 200, 'atari')


def cartpole_train_events(agent: Agent, directory):
    """The run's TensorBoard folder, runs/<AGENT>_CartPole-v1/{train,eval} (the experiment's name), with performance
    scalars at the end of each iteration; returns the train events."""
    run_dir = only_run_dir(directory / 'runs')
    assert os.path.basename(run_dir) == f'{agent.name}_{CARTPOLE}'
    assert sorted(os.listdir(run_dir)) == ['eval', 'train']
    train = events(os.path.join(run_dir, 'train'))
    assert scalar_steps(train, 'performance(env_steps)/episode_return') == [300, 600]
    return train


# ------------------------------------------------------------------------------------------ eval_agent


def _eval_agent(agent: Agent, ckpt: str, environment: str, tmp_path, *flags):
    """Runs eval_agent with a video; returns its stdout, the score line's match and the video's frames."""
    result = run_module(
        agent.module('eval_agent'), f'--load_checkpoint_file={ckpt}', *flags, f'--recording_video_dir={tmp_path / "rec"}', cwd=str(tmp_path)
    )
    assert_clean_exit(result)
    match = agent.return_line.search(result.stdout)
    assert match, result.stdout
    assert match.group(1) == environment and match.group(2) == ckpt
    videos = glob.glob(str(tmp_path / 'rec' / f'{agent.name}_{environment}_*.mp4'))
    assert len(videos) == 1
    assert f'video of the first episode: {videos[0]}' in result.stdout
    return result.stdout, match, read_video(videos[0])


def check_cartpole_eval(agent: Agent, run, tmp_path):
    """eval_agent on the second CartPole checkpoint: two episodes scored, the first one's video; returns frames."""
    proc, directory = run
    assert_clean_exit(proc)
    _, match, frames = _eval_agent(agent, agent.checkpoint(directory, CARTPOLE, 1), CARTPOLE, tmp_path, '--num_eval_episodes=2')
    assert match.group(3) == '2'
    assert float(match.group(4)) >= 8  # CartPole lasts at least 8 steps
    assert len(frames) > 1
    assert all(frame.shape == (400, 600, 3) for frame in frames)  # CartPole renders 600x400 RGB
    assert frames[0].std() > 0  # not a blank picture
    return frames


def check_pong_eval(agent: Agent, run, tmp_path, *flags):
    """eval_agent for 50 steps on the Pong checkpoint (`flags` added): the unfinished game is scored and says so,
    and the video holds the reset frame and one per step of the full-size screen; returns frames."""
    proc, directory = run
    assert_clean_exit(proc)
    stdout, match, frames = _eval_agent(agent, agent.checkpoint(directory, 'Pong', 0), 'Pong', tmp_path, *flags, '--num_eval_steps=50')
    assert match.group(3) == '1'
    # A Pong game lasts far longer than 50 steps: the unfinished one is reported, and says so.
    assert UNFINISHED_NOTE in stdout
    assert len(frames) == 51  # the reset frame and one per step
    assert all(frame.shape == (210, 160, 3) for frame in frames)  # the full-size RGB screen, not the 84x84 input
    return frames


def refused_checkpoint(other: Agent, ckpt, tmp_path, *flags):
    """Another agent's eval_agent on this checkpoint: a clean failure; returns the stderr lines."""
    return failed_cleanly(run_module(other.module('eval_agent'), f'--load_checkpoint_file={ckpt}', *flags, cwd=str(tmp_path)))


def check_pong_checkpoint_refused(agent: Agent, other: Agent, run, tmp_path):
    """`other`'s eval_agent on this agent's Pong checkpoint ends with one line, an error naming this agent."""
    directory = check_run_files(agent, run, 'Pong', 1)
    lines = refused_checkpoint(other, agent.checkpoint(directory, 'Pong', 0), tmp_path, '--num_eval_steps=10')
    assert len(lines) == 1 and lines[0].startswith('error: ') and agent.name in lines[0], lines


def check_bad_flag_and_wrong_checkpoint(agent: Agent, bad_flag: str, other: Agent, run, tmp_path):
    """run_classic with `bad_flag` (--name=value) fails cleanly, first saying `error: flag <bad_flag>`, before
    writing anything; `other`'s eval_agent refuses the first CartPole checkpoint naming both agents."""
    lines = failed_cleanly(run_module(agent.module('run_classic'), bad_flag, '--checkpoint_dir=ck', cwd=str(tmp_path)))
    assert lines[0].startswith(f'error: flag {bad_flag}')
    assert not (tmp_path / 'ck').exists()
    _, directory = run
    lines = refused_checkpoint(other, agent.checkpoint(directory, CARTPOLE, 0), tmp_path)
    assert agent.name in lines[-1] and other.name in lines[-1], lines


# --------------------------------------------------------------------- Pong and Montezuma's Revenge end to end

MONTEZUMA = 'MontezumaRevenge'
ATARI_GAMES = ('Pong', MONTEZUMA)
NUM_ACTIONS = {'Pong': 6, MONTEZUMA: 18}  # the minimal action sets
# Montezuma's episodes capped at 200 frames (at most 50 agent steps), so a tiny run finishes some and counts their rooms.
MONTEZUMA_FLAGS = ('--max_episode_frames=200',)
ROOMS_TAG = 'agent_statistics(env_steps)/visited_rooms_mean'
ROOM_COLUMNS = ['visited_rooms_mean', 'visited_rooms_max']


def run_atari(agent: Agent, game: str, directory, *flags):
    """One run_atari on `game` with `flags` (and MONTEZUMA_FLAGS there) in `directory`: checkpoints and CSV under ck/,
    TensorBoard under runs/; returns the finished process."""
    game_flags = MONTEZUMA_FLAGS if game == MONTEZUMA else ()
    return run_module(
        agent.module('run_atari'), f'--environment_name={game}', *flags, *game_flags, '--runs_dir=runs', '--checkpoint_dir=ck', cwd=str(directory)
    )


def atari_fixture(agent: Agent, *flags):
    """A module fixture `atari` parametrized by game (ATARI_GAMES): one `run_atari` with `flags`; (game, (proc, directory))."""

    def atari(request, tmp_path_factory):
        directory = tmp_path_factory.mktemp(_directory_name(agent, request.param))
        return request.param, (run_atari(agent, request.param, directory, *flags), directory)

    return pytest.fixture(scope='module', name='atari', params=ATARI_GAMES)(atari)


def check_atari_results(agent: Agent, game: str, directory, env_steps):
    """The results CSV and TensorBoard of a `run_atari` on `game`: one row per iteration with its env steps and
    checkpoint; on Montezuma's Revenge the mean rooms of the episodes that ended (>= 1: every game starts in a room)
    in TensorBoard and, with their max, as the CSV's last columns; on Pong no rooms anywhere. Returns the rows."""
    rows = read_csv(directory / 'ck' / agent.file_name(game, 'results'))
    counts_rooms = game == MONTEZUMA
    assert list(rows[0]) == RESULT_COLUMNS + (ROOM_COLUMNS if counts_rooms else [])
    assert [(row['iteration'], row['env_steps']) for row in rows] == [(str(i), str(steps)) for i, steps in enumerate(env_steps)]
    assert [row['checkpoint'] for row in rows] == [f'ck/{agent.file_name(game, i)}' for i in range(len(env_steps))]
    train = events(os.path.join(only_run_dir(directory / 'runs'), 'train'))
    if not counts_rooms:
        assert not [tag for tag in train.Tags()['scalars'] if 'visited_rooms' in tag]
        return rows
    rooms = [event.value for event in train.Scalars(ROOMS_TAG)]
    assert len(rooms) == len(env_steps) and min(rooms) >= 1.0, rooms
    assert [float(row['visited_rooms_mean']) for row in rows] == pytest.approx(rooms)
    assert all(float(row['visited_rooms_max']) >= float(row['visited_rooms_mean']) for row in rows)
    return rows


def atari_checkpoint(agent: Agent, game: str, directory, iteration: int = 0):
    """The checkpoint of `iteration`, loaded as this agent's on `game` (the names checked on loading); its payload."""
    payload = checkpoint.load_checkpoint(agent.checkpoint(directory, game, iteration), agent_name=agent.name, environment_name=game)
    assert payload['flags']['environment_kind'] == 'atari'
    return payload


def check_atari_eval(agent: Agent, game: str, directory, tmp_path, num_steps: int = 20):
    """eval_agent for `num_steps` steps on the first checkpoint of a `run_atari` on `game` (shorter than a capped
    Montezuma episode): the unfinished game is scored and says so; the video holds the reset frame and one per step
    of the full-size screen."""
    stdout, match, frames = _eval_agent(agent, agent.checkpoint(directory, game, 0), game, tmp_path, f'--num_eval_steps={num_steps}')
    assert match.group(3) == '1' and UNFINISHED_NOTE in stdout
    assert len(frames) == num_steps + 1
    assert all(frame.shape == (210, 160, 3) for frame in frames)


# ============================================================================== in-process agent tests

# Settings that build an agent for a few quick steps on a vector of CartPoles (changes to an agent's CLASSIC settings).
CARTPOLE_VALUES = {
    'replay_capacity': 300,
    'n_step': 1,
    'discount': 0.99,
    'compress_replay': False,
    'seed': 0,
    'learning_rate': 1e-3,
    'adam_eps': 1e-8,
    'exploration_epsilon_begin_value': 1.0,
    'exploration_epsilon_end_value': 0.0,
    'exploration_epsilon_decay_step': 30,
    'min_replay_size': 16,
    'learn_interval': 2,
    'target_network_update_interval': 5,
    'batch_size': 8,
    'max_grad_norm': 10.0,
}


class FixedBatchReplay:
    """Uniform replay stand-in that returns one hand-built batch (of the size asked for, when `strict`)."""

    def __init__(self, batch, strict=True):
        self.batch = batch
        self.size = len(batch.r_t)
        self.strict = strict

    def sample(self, batch_size):
        if self.strict:
            assert batch_size == self.size
        return self.batch


# Double Q-learning by hand. Linear Q(s) = W s, no bias. Online W = [[0.5, 0.2], [0.1, 0.3]], target
# W- = [[1, 2], [3, -1]].
ONLINE_WEIGHT = [[0.5, 0.2], [0.1, 0.3]]
TARGET_WEIGHT = [[1.0, 2.0], [3.0, -1.0]]
HAND_BATCH = Transition(
    s_tm1=np.array([[1, 0], [0, 1]], np.float32),
    a_tm1=np.array([0, 1], np.int64),
    r_t=np.array([1, -1], np.float32),
    discount_t=np.array([0.9, 0.5], np.float32),
    s_t=np.array([[0, 1], [1, 1]], np.float32),
)
# sample 0: Q(s, 0) = 0.5. At s' = [0, 1] the online net gives [0.2, 0.3] -> action 1, which the target net
#   values at -1 (its values are [2, -1]): target 1 + 0.9 * -1 = 0.1 (DQN's max would give 2.8). td -0.4.
# sample 1: Q(s, 1) = 0.3. At s' = [1, 1] the online net gives [0.7, 0.4] -> action 0, valued 3 by the target
#   net: target -1 + 0.5 * 3 = 0.5. td 0.2.
# Huber (delta 1) of -0.4 and 0.2: 0.08 and 0.02.
HAND_TD_ERRORS = [-0.4, 0.2]
HAND_LOSSES = [0.08, 0.02]


def linear_agent(agent_class, replay, optimizer_lr=0.1, **kwargs):
    """An agent over the hand-built linear networks, learning with plain SGD."""
    network = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        network.weight.copy_(torch.tensor(ONLINE_WEIGHT))
    agent = agent_class(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=optimizer_lr),
        replay=replay,
        exploration_epsilon=LinearSchedule(1.0, 0.1, 10),
        min_replay_size=2,
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=2,
        max_grad_norm=0.0,
        terminal_on_life_loss=False,
        seed=0,
        **kwargs,
    )
    with torch.no_grad():
        agent.target_network.weight.copy_(torch.tensor(TARGET_WEIGHT))
    return agent


def as_batch(transition):
    return TransitionBatch(*(torch.from_numpy(field) for field in transition))


# Quantile agents (QR-DQN, IQN).


def numpy_quantile_q_learning(q_tm1, taus, a_tm1, r_t, discount_t, q_t_selector, q_t, kappa):
    """Loops over samples, source and target quantiles: an independent statement of the papers' loss."""
    losses = []
    for b in range(len(r_t)):
        best = np.argmax(q_t_selector[b].mean(axis=0))
        targets = r_t[b] + discount_t[b] * q_t[b, :, best]
        total = 0.0
        for i, tau in enumerate(taus[b]):
            for target in targets:
                u = target - q_tm1[b, i, a_tm1[b]]
                huber = 0.5 * u**2 if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
                penalty = huber / kappa if kappa > 0 else abs(u)
                total += abs(tau - (u < 0)) * penalty / len(targets)
        losses.append(total)
    return np.array(losses)


def quantile_agent(agent_class, network, *, huber_param=1.0, replay=None, optimizer=None, batch_size=4, **kwargs):
    """A QR-DQN or IQN agent learning with Adam (lr 0.01) from small uniform replay unless given other ones."""
    return agent_class(
        network=network,
        optimizer=optimizer or torch.optim.Adam(network.parameters(), lr=1e-2),
        replay=replay or replay_lib.UniformReplay(100, (3,), np.float32, discount=0.9, seed=0),
        exploration_epsilon=LinearSchedule(1.0, 0.1, 10),
        min_replay_size=batch_size,
        learn_interval=1,
        target_network_update_interval=1000,
        batch_size=batch_size,
        max_grad_norm=10.0,
        terminal_on_life_loss=False,
        seed=0,
        huber_param=huber_param,
        **kwargs,
    )


def random_batch(batch_size=6, observation_size=3, num_actions=2, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return TransitionBatch(
        s_tm1=torch.randn(batch_size, observation_size, generator=generator),
        a_tm1=torch.randint(num_actions, (batch_size,), generator=generator),
        r_t=torch.randn(batch_size, generator=generator),
        discount_t=torch.tensor([0.9, 0.0, 0.9, 0.9, 0.5, 0.9])[:batch_size],
        s_t=torch.randn(batch_size, observation_size, generator=generator),
    )


# C51 and Rainbow by hand: a table of logits per (state, action) on the support [0, 1, 2].
SUPPORT = torch.tensor([0.0, 1.0, 2.0])


class TableNetwork(nn.Module):
    """Logits [state, action, atom] looked up by the index held in a one-element observation."""

    def __init__(self, probs):
        super().__init__()
        self.table = nn.Parameter(torch.tensor(probs).log())
        self.register_buffer('support', SUPPORT.clone())

    def logits(self, observation):
        return self.table[observation[:, 0].long()]

    def forward(self, observation):
        return expected_value(self.logits(observation), self.support)


# States 0 and 1 are s_tm1 of the two transitions, states 2 and 3 their s_t.
ONLINE_PROBS = [
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]],
    [[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]],
    [[0.2, 0.2, 0.6], [0.6, 0.2, 0.2]],  # the online network prefers action 0 at state 2, the target action 1
    [[0.25, 0.25, 0.5], [0.5, 0.25, 0.25]],
]
TARGET_PROBS = [
    [[1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]],
    [[1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]],
    [[0.6, 0.2, 0.2], [0.2, 0.2, 0.6]],  # Q = [0.6, 1.4]
    [[0.25, 0.25, 0.5], [0.5, 0.25, 0.25]],
]
BATCH = TransitionBatch(
    s_tm1=torch.tensor([[0.0], [1.0]]),
    a_tm1=torch.tensor([0, 1]),
    r_t=torch.tensor([0.5, 3.0]),
    discount_t=torch.tensor([0.5, 0.0]),
    s_t=torch.tensor([[2.0], [3.0]]),
)


def table_agent(agent_class, seed=0):
    network = TableNetwork(ONLINE_PROBS)
    agent = agent_class(
        network=network,
        optimizer=torch.optim.SGD(network.parameters(), lr=0.1),
        replay=None,
        exploration_epsilon=LinearSchedule(0.0, 0.0, 1),
        min_replay_size=2,
        learn_interval=1,
        target_network_update_interval=100,
        batch_size=2,
        max_grad_norm=0.0,
        terminal_on_life_loss=False,
        seed=seed,
    )
    agent.target_network.load_state_dict(TableNetwork(TARGET_PROBS).state_dict())
    return agent


C51_CARTPOLE_VALUES = {
    **CARTPOLE_VALUES,
    'adam_eps': 0.01 / 32,
    'learn_interval': 1,
    'num_atoms': 11,
    'v_min': 0.0,
    'v_max': 100.0,
}
