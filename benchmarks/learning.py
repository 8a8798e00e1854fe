"""Learning benchmark: does each agent reach the environment's threshold, how fast in env steps and seconds?

    python -m benchmarks.learning --agents dqn,ppo --environments CartPole-v1 --seeds 1,2,3
    python -m benchmarks.learning --agents ppo --environments Pendulum-v1 --max_steps 500000 --eval_every 25000
    python -m benchmarks.learning ... --reuse            # re-read the CSVs of an earlier run: tables and plots only
    python -m benchmarks.learning --replot benchmarks/results/learning_evaluations.csv   # the plots from that CSV alone

For each (agent, environment, seed) it launches the agent's own run script as a subprocess
(`deep_rl_zoo.<agent>.run_classic`, `run_atari` for Atari games such as Pong, or `deep_rl_zoo.ppo.run_continuous`
for Pendulum-v1 and MuJoCo ids) with
`--num_iterations=max_steps/eval_every --num_train_steps=eval_every`, so each iteration ends with a greedy
evaluation, and reads the run's per-iteration results CSV. Outputs:

* `<out>.md` and `<out>.csv`: one row per run (env steps and wall time until the first evaluation at or above the
  threshold, final and best evaluation return, solved?) and one summary row per (agent, environment): median env
  steps and seconds to the threshold over all seeds (an unsolved seed counts as never, so the median is "not
  reached" when half the seeds or more fail) and the count of seeds solved;
* `<out>_evaluations.csv`: every evaluation of every run (agent, environment, seed, threshold, env steps, eval
  return, wall time), all the plots are drawn from: `--replot <out>_evaluations.csv` redraws them without the runs;
* `screenshots/learning_<env>.png`: each agent's median evaluation return over its seeds against env steps, with a
  min-max band, one colour per agent (one panel per agent from 5 agents on), the threshold dashed;
* with `--training_success` (sparse-reward tasks): every training episode in each run's episodes.csv, a table of the
  share that reached the goal per `--success_window` (appended to `<out>.md`), `<out>_training_success.csv` and
  `screenshots/learning_success_<env>.png` (see benchmarks/training_success.py);
* `<dir of out>/raw/<name of out>/<agent>_<env>_seed<S>/`: each run's results.csv, timing.csv (seconds from
  process launch to each CSV row, polled), log.txt, benchmark_command.txt (the invocation that trained it: a
  `--reuse` table over runs of several invocations heads with all of them) and final checkpoint (git ignores raw/).

A run that stops short of its budget keeps its row, marked partial ("no (partial: 500,000 of 2,000,000 env steps)";
a `partial` column in `<out>.csv`): a training process that failed or was stopped (the probes' way of ending a run
early), or every unfinished run when the benchmark itself gets Ctrl-C or SIGTERM, which stops the training processes
and tabulates the rows so far. The exit status is then 1.

`--stop_after_steps N` stops each run at its first evaluation from N env steps on, its schedules still spanning
`--max_steps` (the first N steps of the run script's own run); such a run counts as complete.

Wall time is measured from the launch of the process (imports and start-up included), by polling the results CSV
for new rows; with `--reuse` the polled times saved in timing.csv are read back.

Interrupted runs resume: run the same benchmark command again and every run that an earlier invocation left
unfinished (same training command, first line of its log.txt) continues from its latest checkpoint (the run script's
`--restart_behavior=resume`), while finished runs are kept as they are; rows after a resume are timed by the run's
own cumulative training wall time. `--fresh` starts every run clean instead.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from benchmarks import training_success
from deep_rl_zoo import settings

REPO_ROOT = Path(__file__).resolve().parent.parent

# Returns that count as solved (gymnasium's reward_threshold where it has one; the usual figures elsewhere).
THRESHOLDS = {
    'CartPole-v1': 475.0,
    'LunarLander-v3': 200.0,
    'LunarLander-v2': 200.0,
    'Pendulum-v1': -300.0,
    'MountainCar-v0': -110.0,
    'Acrobot-v1': -100.0,
    'Pong': 0.0,  # better than the opponent: from -21 at the start
    # MiniGrid pays 1 - 0.9 * steps / max_steps at the goal, 0 otherwise: 0.5 is the goal reached, on average, within
    # 55% of the step limit.
    'MiniGrid-DoorKey-5x5-v0': 0.5,
    'MiniGrid-DoorKey-8x8-v0': 0.5,
    'MiniGrid-KeyCorridorS3R1-v0': 0.5,
}
# Greedy evaluation steps per iteration: room for about five episodes of the longest length.
EVAL_STEPS = {
    'CartPole-v1': 2_500,
    'LunarLander-v3': 5_000,
    'LunarLander-v2': 5_000,
    'Pendulum-v1': 1_000,
    'MountainCar-v0': 1_000,
    'Acrobot-v1': 2_500,
    'Pong': settings.PONG_BUDGET['num_eval_steps'],  # the presets': up to 10 whole games within the longest a game may last
    'MiniGrid-DoorKey-5x5-v0': 1_250,  # max_steps = 10 x 5 x 5 = 250
    'MiniGrid-DoorKey-8x8-v0': 3_200,  # max_steps 640
    'MiniGrid-KeyCorridorS3R1-v0': 1_350,  # max_steps 270
}
DEFAULT_EVAL_STEPS = 5_000  # MuJoCo tasks: five 1,000-step episodes
# Whole episodes after which an evaluation ends within its steps (--max_eval_episodes), as the Pong presets evaluate.
EVAL_EPISODES = {'Pong': settings.PONG_BUDGET['max_eval_episodes']}
# Agents whose run scripts sit in another package: name -> (package, suffix of the run script).
VARIANTS = {'a2c_grad': ('a2c', '_grad'), 'ppo_plain': ('ppo_icm', ''), 'ngu_plain': ('ngu', '')}
# Flags a variant adds. ppo_plain is PPO-ICM's run script with the curiosity reward off: PPO with the network and
# settings of the curiosity agents (the baseline of the curiosity table in docs/exploration.md; ppo's own scripts take no MiniGrid).
# ngu_plain is NGU with beta = 0 for every policy: NGU's network, policy family and Retrace learning without the
# intrinsic reward (the ablation beside R2D2 itself in the exploration benchmark).
VARIANT_FLAGS = {'ppo_plain': ('--intrinsic_reward_coef=0',), 'ngu_plain': ('--intrinsic_reward_beta=0',)}
CLASSIC_ENVIRONMENTS = ('CartPole-v1', 'LunarLander-v3', 'LunarLander-v2', 'MountainCar-v0', 'Acrobot-v1')
# Atari games (our short names; APPO also takes Sample Factory's atari_<game>) run with the agent's run_atari.
ATARI_ENVIRONMENTS = ('Pong', 'Breakout', 'Amidar', 'MontezumaRevenge', 'SpaceInvaders', 'Seaquest', 'Qbert', 'BeamRider')
POLL_SECONDS = 0.25


@dataclasses.dataclass
class Run:
    """One (agent, environment, seed) training run and where its files live."""

    agent: str
    environment: str
    seed: int
    directory: Path

    @property
    def results_csv(self) -> Path:
        return self.directory / 'results.csv'

    @property
    def timing_csv(self) -> Path:
        return self.directory / 'timing.csv'

    @property
    def log(self) -> Path:
        return self.directory / 'log.txt'

    @property
    def benchmark_command(self) -> Path:
        """The benchmark invocation that trained this run, read back by --reuse for the table's header."""
        return self.directory / 'benchmark_command.txt'

    @property
    def checkpoint_dir(self) -> Path:
        return self.directory / 'checkpoints'

    @property
    def episodes_csv(self) -> Path:
        return self.directory / 'episodes.csv'

    @property
    def label(self) -> str:
        return f'{self.agent} {self.environment} seed {self.seed}'


@dataclasses.dataclass
class RunResult:
    """What one run's CSV says, judged against the threshold."""

    run: Run
    threshold: float
    env_steps: list[int]
    eval_returns: list[float]
    seconds: list[float]  # from process launch to each row (nan when unknown)
    checkpoints: list[str]
    partial: bool = False  # stopped short of its budget (interrupted or failed) without having solved under --stop_when_solved

    @property
    def solved_index(self) -> Optional[int]:
        for index, value in enumerate(self.eval_returns):
            if not math.isnan(value) and value >= self.threshold:
                return index
        return None

    @property
    def solved(self) -> bool:
        return self.solved_index is not None

    @property
    def steps_to_threshold(self) -> float:
        index = self.solved_index
        return math.inf if index is None else float(self.env_steps[index])

    @property
    def seconds_to_threshold(self) -> float:
        index = self.solved_index
        return math.inf if index is None else self.seconds[index]

    @property
    def final_eval_return(self) -> float:
        return self.eval_returns[-1] if self.eval_returns else math.nan

    @property
    def best_eval_return(self) -> float:
        finite = [value for value in self.eval_returns if not math.isnan(value)]
        return max(finite) if finite else math.nan

    @property
    def total_env_steps(self) -> int:
        return self.env_steps[-1] if self.env_steps else 0

    @property
    def final_checkpoint(self) -> Optional[str]:
        return self.checkpoints[-1] if self.checkpoints else None


def environment_kind(environment: str) -> str:
    if environment in CLASSIC_ENVIRONMENTS or environment.startswith('MiniGrid-'):  # the curiosity agents' run_classic takes MiniGrid
        return 'classic'
    if environment in ATARI_ENVIRONMENTS or environment.startswith('atari_'):
        return 'atari'
    return 'continuous'


def run_module(agent: str, environment: str) -> str:
    """The run script of `agent` for `environment`, e.g. deep_rl_zoo.ppo.run_classic (a2c_grad: run_classic_grad)."""
    package, suffix = VARIANTS.get(agent, (agent, ''))
    script = {'classic': 'run_classic', 'atari': 'run_atari', 'continuous': 'run_continuous'}[environment_kind(environment)] + suffix
    module = f'deep_rl_zoo.{package}.{script}'
    if not (REPO_ROOT / 'deep_rl_zoo' / package / f'{script}.py').exists():
        raise SystemExit(f'error: agent {agent!r} has no {script}.py for {environment} (no module {module})')
    return module


def threshold_of(environment: str, override: Optional[float]) -> float:
    if override is not None:
        return override
    if environment not in THRESHOLDS:
        raise SystemExit(f'error: no default threshold for {environment}: pass --threshold')
    return THRESHOLDS[environment]


def agent_flags(extra_flags: list[str], agent: str) -> list[str]:
    """The --extra_flags that apply to `agent`: plain ones apply to all, 'ppo:--flag=v' only to ppo."""
    selected = []
    for item in extra_flags:
        prefix, separator, rest = item.partition(':')
        if separator and not prefix.startswith('-'):
            if prefix == agent:
                selected += shlex.split(rest)
        else:
            selected += shlex.split(item)
    return selected


def command_line(run: Run, args: argparse.Namespace) -> list[str]:
    num_eval_steps = args.num_eval_steps or EVAL_STEPS.get(run.environment, DEFAULT_EVAL_STEPS)
    return [
        sys.executable,
        '-m',
        run_module(run.agent, run.environment),
        f'--environment_name={run.environment}',
        f'--num_iterations={num_iterations(args)}',
        f'--num_train_steps={args.eval_every}',
        f'--num_eval_steps={num_eval_steps}',
        *([f'--max_eval_episodes={EVAL_EPISODES[run.environment]}'] if run.environment in EVAL_EPISODES else []),
        f'--results_csv_path={run.results_csv}',
        f'--checkpoint_dir={run.checkpoint_dir}',
        f'--train_dir={run.directory}',  # the experiment's config.json and log go beside the run's files
        '--nouse_tensorboard',
        '--noprogress',
        f'--seed={run.seed}',
        *([f'--episodes_csv_path={run.episodes_csv}'] if args.training_success else []),
        *VARIANT_FLAGS.get(run.agent, ()),
        *agent_flags(args.extra_flags, run.agent),
    ]


def _count_rows(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, newline='', encoding='utf-8') as file:
        return max(sum(1 for _ in csv.reader(file)) - 1, 0)


def _quoted(command: list[str]) -> str:
    return ' '.join(shlex.quote(part) for part in command)


def num_iterations(args: argparse.Namespace) -> int:
    """Iterations of each run: one per --eval_every of --max_steps."""
    return max(args.max_steps // args.eval_every, 1)


def stopped_early_because(env_steps: list[int], eval_returns: list[float], threshold: Optional[float], stop_after_steps: int) -> str:
    """Why a run with these evaluations may stop before its last iteration ('' if it may not): the threshold reached
    (`threshold`: None unless --stop_when_solved), or an evaluation at or past --stop_after_steps (0: off)."""
    if threshold is not None and any(value >= threshold for value in eval_returns):  # nan (no episode) never is
        return 'reached the threshold (--stop_when_solved)'
    if stop_after_steps and env_steps and env_steps[-1] >= stop_after_steps:
        return f'evaluated at --stop_after_steps={stop_after_steps:,}'
    return ''


def _evaluations(rows: list[dict[str, str]]) -> tuple[list[int], list[float]]:
    """The env steps and greedy evaluation returns of a run's results rows."""
    return [int(row['env_steps']) for row in rows], [_float(row.get('eval_episode_return')) for row in rows]


def earlier_state(run: Run, command: list[str], iterations: int, threshold: Optional[float], stop_after_steps: int = 0) -> str:
    """What an earlier invocation left of this run: 'none' (nothing, or a different training command: start clean),
    'finished' (all its iterations, the threshold reached under --stop_when_solved, or an evaluation at or past
    --stop_after_steps: keep it) or 'interrupted' (the same command stopped part-way: resume it from its latest
    checkpoint)."""
    if not run.log.exists():
        return 'none'
    with open(run.log, encoding='utf-8', errors='replace') as file:
        if file.readline().rstrip('\n') != _quoted(command):
            return 'none'
    rows = read_rows(run.results_csv) if run.results_csv.exists() else []  # no row yet: any periodic checkpoint resumes
    done = len(rows) >= iterations or stopped_early_because(*_evaluations(rows), threshold, stop_after_steps)
    return 'finished' if done else 'interrupted'


class RunningJob:
    """A launched run: its process, and the seconds from launch at which each results row appeared.

    A resumed run (`resume=True`) keeps its directory: the run script resumes the experiment from its latest
    checkpoint and appends rows; the rows timed before the interruption keep their seconds, later rows are timed from
    the run's own cumulative `wall_time` column (see parse_run), as the relaunch's clock starts again."""

    def __init__(self, run: Run, command: list[str], resume: bool = False):
        self.run = run
        self.row_seconds: list[float] = []
        if resume:
            if run.timing_csv.exists():
                self.row_seconds = [_float(row['seconds_since_launch']) for row in read_rows(run.timing_csv)]
            self.row_seconds += [math.nan] * (_count_rows(run.results_csv) - len(self.row_seconds))
        else:
            if run.directory.exists():
                shutil.rmtree(run.directory)  # the run script appends to an existing CSV: start clean
            run.directory.mkdir(parents=True)
        self._resumed = resume
        self._size = -1
        self._evaluations: tuple[list[int], list[float]] = ([], [])  # of the rows poll_rows last read
        self._log = open(run.log, 'a' if resume else 'w', encoding='utf-8')  # pylint: disable=consider-using-with
        self._log.write((f'# resumed {time.strftime("%Y-%m-%d %H:%M:%S")}' if resume else _quoted(command)) + '\n')
        self._log.flush()
        self.start = time.monotonic()
        self.process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=self._log, stderr=subprocess.STDOUT)

    def poll_rows(self) -> None:
        """Stamps rows that appeared since the last poll and saves the stamps, so an interrupted run keeps them. The
        newest row is stamped now (at most POLL_SECONDS late); rows that appeared with it, when an iteration takes less
        than a poll, are placed before it by the run's own `wall_time` column, each after the row before it."""
        path = self.run.results_csv
        size = path.stat().st_size if path.exists() else 0
        if size == self._size:
            return
        self._size = size
        rows = read_rows(path) if path.exists() else []
        self._evaluations = _evaluations(rows)
        new_rows = rows[len(self.row_seconds) :]
        if not new_rows:
            return
        if self._resumed:
            self.row_seconds += [math.nan] * len(new_rows)  # parse_run times them from the wall_time column
        else:
            now = time.monotonic() - self.start
            newest_wall_time = _float(new_rows[-1].get('wall_time'))
            for row in new_rows:
                stamp = now - (newest_wall_time - _float(row.get('wall_time')))
                if math.isnan(stamp):
                    stamp = now
                if self.row_seconds and stamp <= self.row_seconds[-1]:  # the stamps keep the rows' order
                    stamp = self.row_seconds[-1] + 0.001
                self.row_seconds.append(round(stamp, 3))
        self.write_timing()

    def write_timing(self) -> None:
        with open(self.run.timing_csv, 'w', newline='', encoding='utf-8') as file:
            writer = csv.writer(file, lineterminator='\n')
            writer.writerow(['row', 'seconds_since_launch'])
            writer.writerows(enumerate(self.row_seconds))

    def may_stop_because(self, threshold: Optional[float], stop_after_steps: int) -> str:
        """`stopped_early_because` of the results rows so far (read by `poll_rows` only when the CSV changed)."""
        self.poll_rows()
        return stopped_early_because(*self._evaluations, threshold, stop_after_steps)

    def finished(self) -> bool:
        self.poll_rows()
        if self.process.poll() is None:
            return False
        self.poll_rows()
        self._log.close()
        self.write_timing()
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # the run scripts stop their actors cleanly on SIGTERM
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._log.closed:
            self._log.close()


def _prune_checkpoints(run: Run) -> None:
    """Keeps only the last iteration's checkpoint of a finished run (the others are 100 KB each, unused)."""
    rows = read_rows(run.results_csv)
    if not rows or not run.checkpoint_dir.is_dir():
        return
    final = Path(rows[-1]['checkpoint']).name
    for path in run.checkpoint_dir.glob('*.ckpt'):
        if path.name != final:
            path.unlink()


class BenchmarkInterrupted(Exception):
    """SIGTERM reached the benchmark: its training processes are stopped and the rows so far are tabulated."""


def _exit_on_sigterm(signum: int, _frame) -> None:
    raise BenchmarkInterrupted(f'stopped by signal {signum}')


def train(runs: list[Run], args: argparse.Namespace) -> None:
    """Runs every training process, at most `args.jobs` at a time (a finished run of an earlier invocation is kept,
    an interrupted one resumed); a failed one prints its log's last lines and the others go on. Ctrl-C
    (KeyboardInterrupt) or SIGTERM (BenchmarkInterrupted) stops the running ones too: no training process outlives
    the benchmark."""
    pending = list(runs)
    running: list[RunningJob] = []
    previous_handler = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                run = pending.pop(0)
                command = command_line(run, args)
                threshold = threshold_of(run.environment, args.threshold) if args.stop_when_solved else None
                state = 'none' if args.fresh else earlier_state(run, command, num_iterations(args), threshold, args.stop_after_steps)
                if state == 'finished':
                    print(f'[kept]  {run.label}: finished by an earlier invocation ({run.results_csv})', flush=True)
                    continue
                verb = '[resume]' if state == 'interrupted' else '[start]'
                print(f'{verb} {run.label}: {" ".join(command[2:4])} ... (log {run.log})', flush=True)
                running.append(RunningJob(run, command, resume=state == 'interrupted'))
                if state == 'none':
                    run.benchmark_command.write_text(invocation(args) + '\n', encoding='utf-8')
            time.sleep(POLL_SECONDS)
            stopped_because: dict[RunningJob, str] = {}
            if args.stop_when_solved or args.stop_after_steps:
                for job in running:
                    threshold = threshold_of(job.run.environment, args.threshold) if args.stop_when_solved else None
                    reason = job.may_stop_because(threshold, args.stop_after_steps) if job.process.poll() is None else ''
                    if reason:
                        job.stop()
                        stopped_because[job] = reason
            for job in [job for job in running if job.finished()]:
                running.remove(job)
                seconds = time.monotonic() - job.start
                if job in stopped_because:
                    _prune_checkpoints(job.run)
                    print(f'[done]  {job.run.label} {stopped_because[job]} in {seconds:.1f} s: stopped', flush=True)
                elif job.process.returncode == 0:
                    _prune_checkpoints(job.run)
                    print(f'[done]  {job.run.label} in {seconds:.1f} s', flush=True)
                else:
                    tail = job.run.log.read_text(encoding='utf-8', errors='replace').strip().splitlines()[-5:]
                    print(f'[FAIL]  {job.run.label}: exit code {job.process.returncode} after {seconds:.1f} s; last lines of {job.run.log}:', flush=True)
                    for line in tail:
                        print(f'        {line}', flush=True)
    finally:
        for job in running:
            job.stop()
            job.poll_rows()  # rows written while it stopped are timed too
        signal.signal(signal.SIGTERM, previous_handler)


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline='', encoding='utf-8') as file:
        return list(csv.DictReader(file))


def _float(text: Optional[str]) -> float:
    try:
        return float(text) if text not in (None, '') else math.nan
    except ValueError:
        return math.nan


def parse_run(run: Run, threshold: float) -> RunResult:
    """Reads a run's results.csv (and timing.csv when there is one) into a RunResult."""
    rows = read_rows(run.results_csv)
    seconds = [math.nan] * len(rows)
    if run.timing_csv.exists():
        for row in read_rows(run.timing_csv):
            index = int(row['row'])
            if index < len(seconds):
                seconds[index] = _float(row['seconds_since_launch'])
    for index, row in enumerate(rows):
        if math.isnan(seconds[index]):
            wall_time = _float(row.get('wall_time'))  # training time, cumulative over resumes, without start-ups
            if index and not math.isnan(seconds[index - 1]):  # a row after a resume: the last timed row plus training
                wall_time = seconds[index - 1] + wall_time - _float(rows[index - 1].get('wall_time'))
            seconds[index] = wall_time
    return RunResult(
        run=run,
        threshold=threshold,
        env_steps=[int(row['env_steps']) for row in rows],
        eval_returns=[_float(row['eval_episode_return']) for row in rows],
        seconds=seconds,
        checkpoints=[row['checkpoint'] for row in rows],
    )


def _exact(value: float) -> str:
    return '' if math.isnan(value) or math.isinf(value) else f'{value:.10g}'


EVALUATION_COLUMNS = ('agent', 'environment', 'seed', 'threshold', 'env_steps', 'eval_return', 'wall_time_s')


def write_evaluations_csv(path: Path, results: list[RunResult]) -> None:
    """One row per evaluation of every run, in order (an empty return: no episode finished; an empty wall time:
    unknown)."""
    with open(path, 'w', newline='', encoding='utf-8') as file:
        writer = csv.writer(file, lineterminator='\n')
        writer.writerow(EVALUATION_COLUMNS)
        for r in results:
            for steps, value, seconds in zip(r.env_steps, r.eval_returns, r.seconds):
                writer.writerow([r.run.agent, r.run.environment, r.run.seed, f'{r.threshold:g}', steps, _exact(value), _exact(seconds)])


def read_evaluations_csv(path: Path) -> list[RunResult]:
    """The runs of an evaluations CSV (`write_evaluations_csv`), as far as plots and tables need them (no files)."""
    if not path.is_file():
        raise SystemExit(f'error: --replot {path}: no such file (the benchmark writes <out>_evaluations.csv)')
    results: dict[tuple[str, str, int], RunResult] = {}
    rows = read_rows(path)
    missing = set(EVALUATION_COLUMNS) - set(rows[0] if rows else EVALUATION_COLUMNS)
    if missing:
        raise SystemExit(f'error: {path} lacks the columns {", ".join(sorted(missing))}: pass a <out>_evaluations.csv of this benchmark')
    for row in rows:
        key = (row['agent'], row['environment'], int(row['seed']))
        if key not in results:
            results[key] = RunResult(Run(*key, path.parent), float(row['threshold']), [], [], [], [])
        result = results[key]
        result.env_steps.append(int(row['env_steps']))
        result.eval_returns.append(_float(row['eval_return']))
        result.seconds.append(_float(row['wall_time_s']))
    return list(results.values())


def _median(values: list[float]) -> float:
    """Median where an unsolved seed counts as +inf: inf when half the seeds or more did not solve."""
    return statistics.median(values)


def _format(value: float, digits: int = 0) -> str:
    if math.isnan(value):
        return 'n/a'
    if math.isinf(value):
        return 'not reached'
    return f'{value:,.{digits}f}'


def _return_digits(threshold: float) -> int:
    """Decimals of the returns in the tables: 3 where returns are fractions (MiniGrid's goal reward is below 1)."""
    return 3 if abs(threshold) < 10 else 1


@dataclasses.dataclass
class Summary:
    agent: str
    environment: str
    threshold: float
    median_steps: float
    median_seconds: float
    solved: int
    seeds: int
    median_final_return: float
    partial: int = 0


def summarise(results: list[RunResult]) -> list[Summary]:
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for result in results:
        groups.setdefault((result.run.agent, result.run.environment), []).append(result)
    summaries = []
    for (agent, environment), group in groups.items():
        finals = [r.final_eval_return for r in group if not math.isnan(r.final_eval_return)]
        summaries.append(
            Summary(
                agent=agent,
                environment=environment,
                threshold=group[0].threshold,
                median_steps=_median([r.steps_to_threshold for r in group]),
                median_seconds=_median([r.seconds_to_threshold for r in group]),
                solved=sum(r.solved for r in group),
                seeds=len(group),
                median_final_return=statistics.median(finals) if finals else math.nan,
                partial=sum(r.partial for r in group),
            )
        )
    return summaries


def invocation(args: argparse.Namespace) -> str:
    """This benchmark's command line, as a reader would type it."""
    return f'python -m benchmarks.learning {" ".join(shlex.quote(a) for a in args.argv)}'


def command_header(results: list[RunResult], args: argparse.Namespace) -> str:
    """The command of the table; with --reuse, first the commands that trained its runs (recorded in each run's
    directory), so a table assembled from several invocations names them all."""
    this_table = f'`{invocation(args)}`'
    recorded = [r.run.benchmark_command for r in results if args.reuse and r.run.benchmark_command.exists()]
    trained_by = [command for command in dict.fromkeys(path.read_text(encoding='utf-8').strip() for path in recorded) if command]
    if not trained_by:
        return this_table
    return 'Trained by ' + '; '.join(f'`{command}`' for command in trained_by) + f'. This table: {this_table}'


def verdict(result: RunResult, args: argparse.Namespace) -> str:
    """The table's "solved?" cell; a partial run says where it stopped."""
    answer = 'yes' if result.solved else 'no'
    if result.partial:
        answer += f' (partial: {result.total_env_steps:,} of {args.stop_after_steps or args.max_steps:,} env steps)'
    return answer


def markdown(results: list[RunResult], summaries: list[Summary], args: argparse.Namespace) -> str:
    lines = [
        '# Learning benchmark',
        '',
        command_header(results, args),
        '',
        f'Budget {args.max_steps:,} env steps per run, greedy evaluation every {args.eval_every:,} env steps. '
        + (f'Each run is stopped at its first evaluation from {args.stop_after_steps:,} env steps on (--stop_after_steps: '
           f'its schedules still span the budget). ' if args.stop_after_steps else '')
        + '"To threshold" is the first evaluation whose mean return reaches the threshold; wall time is from process '
        'launch (start-up included). A partial run stopped before its budget (interrupted or failed): its row '
        'holds the evaluations it reached.',
        '',
        '| agent | environment | seed | threshold | env steps to threshold | wall time to threshold (s) | final eval return | best eval return | solved? |',
        '|---|---|---:|---:|---:|---:|---:|---:|---|',
    ]
    for r in results:
        lines.append(
            f'| {r.run.agent} | {r.run.environment} | {r.run.seed} | {r.threshold:g} | {_format(r.steps_to_threshold)} | '
            f'{_format(r.seconds_to_threshold, 1)} | {_format(r.final_eval_return, _return_digits(r.threshold))} | '
            f'{_format(r.best_eval_return, _return_digits(r.threshold))} | {verdict(r, args)} |'
        )
    lines += [
        '',
        '## Summary (medians over seeds; an unsolved seed counts as never)',
        '',
        '| agent | environment | threshold | median env steps to threshold | median wall time to threshold (s) | median final eval return | seeds solved |',
        '|---|---|---:|---:|---:|---:|---:|',
    ]
    for s in summaries:
        lines.append(
            f'| {s.agent} | {s.environment} | {s.threshold:g} | {_format(s.median_steps)} | {_format(s.median_seconds, 1)} | '
            f'{_format(s.median_final_return, _return_digits(s.threshold))} | {s.solved}/{s.seeds}{f" ({s.partial} partial)" if s.partial else ""} |'
        )
    return '\n'.join(lines) + '\n'


def _csv_number(value: float) -> str:
    return '' if math.isnan(value) or math.isinf(value) else f'{value:g}'


def write_csv(path: Path, results: list[RunResult], summaries: list[Summary]) -> None:
    """One row per run (kind=run) and one per (agent, environment) (kind=summary, seed=median); empty = never/unknown."""
    columns = [
        'kind', 'agent', 'environment', 'seed', 'threshold', 'env_steps_to_threshold', 'wall_time_to_threshold_s',
        'final_eval_return', 'best_eval_return', 'solved', 'total_env_steps', 'partial',
    ]
    with open(path, 'w', newline='', encoding='utf-8') as file:
        writer = csv.writer(file, lineterminator='\n')
        writer.writerow(columns)
        for r in results:
            writer.writerow([
                'run', r.run.agent, r.run.environment, r.run.seed, f'{r.threshold:g}', _csv_number(r.steps_to_threshold),
                _csv_number(r.seconds_to_threshold), _csv_number(r.final_eval_return), _csv_number(r.best_eval_return),
                int(r.solved), r.total_env_steps, int(r.partial),
            ])
        for s in summaries:
            writer.writerow([
                'summary', s.agent, s.environment, 'median', f'{s.threshold:g}', _csv_number(s.median_steps),
                _csv_number(s.median_seconds), _csv_number(s.median_final_return), '', f'{s.solved}/{s.seeds}', '', s.partial,
            ])


SMALL_MULTIPLES_FROM = 5  # agents in one environment from which each gets its own panel


def seed_band(group: list[RunResult]) -> tuple[list[float], list[float], list[float], list[float]]:
    """One agent's curve over its seeds: for each evaluation index i (the i-th evaluation of every seed), the median
    env steps, and the median, min and max of the seeds' returns there. A run that ended at or above the threshold
    (stopped when solved) keeps its last return for the evaluations it did not make; a run cut short below it drops
    out. Evaluations without a finished episode (nan) are left out."""
    length = max((len(r.eval_returns) for r in group), default=0)
    xs, medians, lows, highs = [], [], [], []
    for index in range(length):
        steps, returns = [], []
        for r in group:
            if index < len(r.eval_returns):
                if not math.isnan(r.eval_returns[index]):
                    steps.append(r.env_steps[index])
                    returns.append(r.eval_returns[index])
            elif r.eval_returns and r.eval_returns[-1] >= r.threshold:
                returns.append(r.eval_returns[-1])
        if not steps:
            continue
        xs.append(statistics.median(steps))
        medians.append(statistics.median(returns))
        lows.append(min(returns))
        highs.append(max(returns))
    return xs, medians, lows, highs


def plot(results: list[RunResult], directory: Path, ymin: Optional[float] = None) -> list[Path]:
    """One PNG per environment: each agent's median greedy return over its seeds against env steps, with a band from
    the lowest to the highest seed, one colour per agent, the threshold dashed; from SMALL_MULTIPLES_FROM agents on,
    one panel per agent (same axes). The y axis starts at `ymin` when given (early returns far below it are cut off).
    The per-seed numbers stay in the CSV."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    agents = sorted({r.run.agent for r in results})
    colours = {agent: plt.get_cmap('tab10')(index % 10) for index, agent in enumerate(agents)}
    paths = []
    for environment in sorted({r.run.environment for r in results}):
        group = [r for r in results if r.run.environment == environment]
        present = sorted({r.run.agent for r in group})
        panels = len(present) if len(present) >= SMALL_MULTIPLES_FROM else 1
        columns = min(panels, 3)
        rows = math.ceil(panels / columns)
        figure, grid = plt.subplots(rows, columns, figsize=(8 if panels == 1 else 4.2 * columns, 5 if panels == 1 else 3.2 * rows), dpi=100, sharex=True, sharey=True, squeeze=False)
        axes_list = list(grid.flat)
        for index, agent in enumerate(present):
            axes = axes_list[index if panels > 1 else 0]
            runs = [r for r in group if r.run.agent == agent]
            xs, medians, lows, highs = seed_band(runs)
            if not xs:
                continue
            seeds = len(runs)
            label = f'{agent.upper()} (median of {seeds} seed{"s" if seeds > 1 else ""}, min-max band)' if seeds > 1 else agent.upper()
            axes.plot(xs, medians, color=colours[agent], marker='o', markersize=3, linewidth=1.5, label=label)
            if seeds > 1:
                axes.fill_between(xs, lows, highs, color=colours[agent], alpha=0.2, linewidth=0)
        for index, axes in enumerate(axes_list):
            if index >= (len(present) if panels > 1 else 1):  # the grid's spare cells
                axes.set_visible(False)
                continue
            axes.axhline(group[0].threshold, color='black', linestyle='--', linewidth=1, label=f'threshold {group[0].threshold:g}')
            if ymin is not None:
                axes.set_ylim(bottom=ymin)
            axes.grid(alpha=0.3)
            axes.legend(loc='best', fontsize='small' if panels > 1 else None)
        for axes in grid[-1]:
            axes.set_xlabel('env steps')
        for axes in grid[:, 0]:
            axes.set_ylabel('greedy evaluation return' + (f' (axis cut at {ymin:g})' if ymin is not None else ''))
        figure.suptitle(f'{environment}: median greedy return over seeds, min-max band\n(a seed stopped when solved keeps its last return)', fontsize='medium')
        figure.tight_layout()
        path = directory / f'learning_{environment.replace("/", "-")}.png'
        figure.savefig(path)
        plt.close(figure)
        paths.append(path)
    return paths


def keep_best_checkpoints(results: list[RunResult], directory: Path) -> list[Path]:
    """Copies the final checkpoint of each (agent, environment)'s best seed (highest final evaluation, then best
    evaluation, then fewest steps to threshold) to `directory/<AGENT>_<env>.ckpt`."""
    directory.mkdir(parents=True, exist_ok=True)
    copied = []
    for agent, environment in sorted({(r.run.agent, r.run.environment) for r in results}):
        candidates = [
            r for r in results
            if (r.run.agent, r.run.environment) == (agent, environment) and r.final_checkpoint and os.path.exists(r.final_checkpoint)
        ]
        if not candidates:
            print(f'no final checkpoint of {agent} on {environment} to keep', flush=True)
            continue

        def rank(r: RunResult) -> tuple[float, float, float]:
            final = -math.inf if math.isnan(r.final_eval_return) else r.final_eval_return
            best = -math.inf if math.isnan(r.best_eval_return) else r.best_eval_return
            return (final, best, -r.steps_to_threshold)

        best = max(candidates, key=rank)
        target = directory / f'{agent.upper()}_{environment.replace("/", "-")}.ckpt'
        shutil.copyfile(best.final_checkpoint, target)
        print(
            f'kept {target} (seed {best.run.seed}, final eval return {_format(best.final_eval_return, 1)}); try it with: '
            f'python -m deep_rl_zoo.{agent}.eval_agent --environment_name={environment} --load_checkpoint_file={target}',
            flush=True,
        )
        copied.append(target)
    return copied


def _list(text: str) -> list[str]:
    return [item.strip() for item in text.split(',') if item.strip()]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--agents', default='dqn,ppo', help='comma-separated agent packages (deep_rl_zoo.<agent>)')
    parser.add_argument('--environments', default='CartPole-v1', help='comma-separated environment ids')
    parser.add_argument('--seeds', default='1,2,3', help='comma-separated seeds')
    parser.add_argument('--max_steps', type=int, default=200_000, help='env steps per run')
    parser.add_argument('--eval_every', type=int, default=10_000, help='env steps between greedy evaluations')
    parser.add_argument('--threshold', type=float, default=None, help='return that counts as solved (default: per environment)')
    parser.add_argument('--num_eval_steps', type=int, default=0, help='greedy evaluation steps (default: about 5 episodes)')
    parser.add_argument('--jobs', type=int, default=1, help='runs at once (each PPO run uses 2 processes)')
    parser.add_argument('--out', default='benchmarks/results/learning', help='writes <out>.md and <out>.csv')
    parser.add_argument('--screenshots_dir', default='screenshots', help='directory of the learning_<env>.png plots')
    parser.add_argument('--runs_dir', default='', help='directory of the runs (default: <dir of out>/raw/<name of out>)')
    parser.add_argument(
        '--extra_flags', action='append', default=[],
        help="flags passed to every run script, in the = form: --extra_flags='--learning_rate=5e-4'; "
        "--extra_flags='ppo:--num_epochs=10' only to ppo (repeatable)",
    )
    parser.add_argument('--keep_best_checkpoint', default='', metavar='DIR', help="copy the best seed's final checkpoint of each (agent, env) here")
    parser.add_argument(
        '--stop_when_solved',
        action='store_true',
        help='stop each run at its first evaluation at or above the threshold (steps and time to threshold only; '
        'final return is then that evaluation)',
    )
    parser.add_argument('--plot_ymin', type=float, default=None, help='start the plots\' y axis here (cuts off very low early returns)')
    parser.add_argument(
        '--training_success',
        action='store_true',
        help='record every training episode (episodes.csv) and report the share that reached the goal (return > 0, '
        'for sparse-reward tasks such as MiniGrid) per --eval_every window',
    )
    parser.add_argument('--success_window', type=int, default=0, help='env steps per window of --training_success (default: --eval_every)')
    parser.add_argument(
        '--stop_after_steps',
        type=int,
        default=0,
        help='stop each run at its first evaluation at or past this many env steps, its schedules (learning rate, '
        'exploration) still spanning --max_steps: the first part of a run as the run script would train it',
    )
    parser.add_argument('--reuse', action='store_true', help='parse the CSVs of an earlier run instead of training')
    parser.add_argument(
        '--fresh',
        action='store_true',
        help='start every run clean; by default a run that an earlier invocation of the same training command left '
        'unfinished resumes from its latest checkpoint, and a finished one is kept',
    )
    parser.add_argument('--replot', default='', metavar='CSV', help='only redraw the plots (--screenshots_dir, --plot_ymin) from an <out>_evaluations.csv')
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.max_steps < 1 or args.eval_every < 1 or args.eval_every > args.max_steps:
        parser.error('need 1 <= --eval_every <= --max_steps')
    if args.jobs < 1:
        parser.error('--jobs must be >= 1')
    if args.stop_after_steps and not args.eval_every <= args.stop_after_steps <= args.max_steps:
        parser.error('need --eval_every <= --stop_after_steps <= --max_steps (0: off)')
    if args.success_window and not 1 <= args.success_window <= args.max_steps:
        parser.error('need 1 <= --success_window <= --max_steps')
    return args


def mark_partial(results: list[RunResult], args: argparse.Namespace) -> None:
    """Marks the runs that stopped short of their iterations (a failed or interrupted process, or a benchmark stopped
    part-way) without a reason to stop early (`stopped_early_because`): their rows stay in the tables, as partial."""
    for r in results:
        threshold = r.threshold if args.stop_when_solved else None
        r.partial = len(r.env_steps) < num_iterations(args) and not stopped_early_because(r.env_steps, r.eval_returns, threshold, args.stop_after_steps)


def main(argv: Optional[list[str]] = None) -> int:
    """Trains (or re-reads) every run and writes the tables and plots, partial runs marked; returns 1 when a run
    failed, is missing or partial, or the benchmark was stopped (Ctrl-C, SIGTERM: the rows so far are tabulated)."""
    args = parse_args(argv)
    if args.replot:
        for path in plot(read_evaluations_csv(Path(args.replot)), Path(args.screenshots_dir), args.plot_ymin):
            print(f'wrote {path}')
        return 0
    out = Path(args.out)
    if not out.is_absolute():
        out = Path.cwd() / out
    runs_dir = Path(args.runs_dir) if args.runs_dir else out.parent / 'raw' / out.name
    runs_dir = runs_dir.resolve()
    agents, environments = _list(args.agents), _list(args.environments)
    seeds = [int(seed) for seed in _list(args.seeds)]
    thresholds = {environment: threshold_of(environment, args.threshold) for environment in environments}
    runs = [
        Run(agent, environment, seed, runs_dir / f'{agent}_{environment.replace("/", "-")}_seed{seed}')
        for environment in environments
        for agent in agents
        for seed in seeds
    ]
    for run in runs:
        run_module(run.agent, run.environment)  # unknown agent / script: fail before training anything

    stopped = None
    if not args.reuse:
        try:
            train(runs, args)
        except (KeyboardInterrupt, BenchmarkInterrupted) as interruption:
            stopped = str(interruption) or 'stopped by Ctrl-C'
            print(f'benchmarks.learning: {stopped}; the training processes were stopped too: tabulating the rows so far', file=sys.stderr, flush=True)
    with_rows = [run for run in runs if run.results_csv.exists()]
    for run in runs:
        if run not in with_rows:
            print(f'no {run.results_csv}: {run.label} left out of the tables', flush=True)
    results = [parse_run(run, thresholds[run.environment]) for run in with_rows]
    results = [r for r in results if r.env_steps]
    if not results:
        raise SystemExit(f'error: no run produced a results row{f" ({stopped})" if stopped else ""}; see the logs above')
    mark_partial(results, args)

    summaries = summarise(results)
    report = markdown(results, summaries, args)
    curves = []
    if args.training_success:
        window = args.success_window or args.eval_every
        for r in results:
            if r.run.episodes_csv.exists():
                episodes = training_success.read_episodes(r.run.episodes_csv)
                curves.append(training_success.success_curve(r.run.agent, r.run.environment, r.run.seed, episodes, window, args.max_steps))
            else:
                print(f'--training_success: no {r.run.episodes_csv}; {r.run.label} left out of the success table', flush=True)
        report += '\n' + training_success.markdown(curves)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix('.md').write_text(report, encoding='utf-8')
    write_csv(out.with_suffix('.csv'), results, summaries)
    evaluations = out.with_name(f'{out.name}_evaluations.csv')
    write_evaluations_csv(evaluations, results)
    print()
    print(report)
    print(f'wrote {out.with_suffix(".md")}, {out.with_suffix(".csv")} and {evaluations}')
    for path in plot(results, Path(args.screenshots_dir), args.plot_ymin):
        print(f'wrote {path}')
    if curves:
        successes = out.with_name(f'{out.name}_training_success.csv')
        training_success.write_csv(successes, curves)
        print(f'wrote {successes}')
        for path in training_success.plot(curves, Path(args.screenshots_dir)):
            print(f'wrote {path}')
    if args.keep_best_checkpoint:
        keep_best_checkpoints(results, Path(args.keep_best_checkpoint))
    partial = sum(r.partial for r in results)
    if len(results) < len(runs) or partial or stopped:
        print(f'warning: of {len(runs)} runs, {len(runs) - len(results)} have no row and {partial} are partial', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
