"""Training success on sparse-reward tasks: the share of training episodes that reached the goal, per window of env steps.

A MiniGrid episode pays more than 0 only at the goal. Exploring agents (NGU, Agent57) sample their behaviour with an
intrinsic bonus and epsilon, so their training episodes find the goal well before their greedy policy does: the
learning benchmark (`--training_success`) reports this beside the greedy evaluations. It reads each run's episodes.csv,
written by the run script's `--episodes_csv_path` (unix time, env steps when the episode ended, return, length).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
from pathlib import Path
from typing import Optional

CSV_COLUMNS = ('agent', 'environment', 'seed', 'window_end_env_steps', 'episodes', 'reached_goal')


@dataclasses.dataclass
class SuccessCurve:
    """One run's training episodes, counted per window of `window` env steps (the last window takes any overshoot)."""

    agent: str
    environment: str
    seed: int
    window_ends: list[int]
    episodes: list[int]
    successes: list[int]
    first_success_step: Optional[int]

    @property
    def total_episodes(self) -> int:
        return sum(self.episodes)

    @property
    def total_successes(self) -> int:
        return sum(self.successes)

    @property
    def share(self) -> float:
        return self.total_successes / self.total_episodes if self.total_episodes else math.nan

    @property
    def window_shares(self) -> list[float]:
        return [s / n if n else math.nan for s, n in zip(self.successes, self.episodes)]


def read_episodes(path: Path) -> list[tuple[int, float]]:
    """(env steps at the episode's end, return) of every row of an episodes CSV."""
    with open(path, newline='', encoding='utf-8') as file:
        return [(int(row['env_steps']), float(row['return'])) for row in csv.DictReader(file)]


def success_curve(agent: str, environment: str, seed: int, episodes: list[tuple[int, float]], window: int, max_steps: int) -> SuccessCurve:
    """Counts the episodes and those with a return above 0 in each window (0, window], (window, 2 window], ... up to
    `max_steps`; an episode logged after `max_steps` (the run's last step overshoots by less than one batch of actor
    steps) counts in the last window."""
    if window < 1 or max_steps < window:
        raise ValueError(f'need 1 <= window <= max_steps, got window {window} and max_steps {max_steps}')
    count = math.ceil(max_steps / window)
    totals, successes = [0] * count, [0] * count
    first_success_step = None
    for env_steps, episode_return in episodes:
        index = min(max(env_steps - 1, 0) // window, count - 1)
        totals[index] += 1
        if episode_return > 0:
            successes[index] += 1
            if first_success_step is None or env_steps < first_success_step:
                first_success_step = env_steps
    ends = [min((index + 1) * window, max_steps) for index in range(count)]
    return SuccessCurve(agent, environment, seed, ends, totals, successes, first_success_step)


def _share(value: float) -> str:
    return 'n/a' if math.isnan(value) else f'{value:.3f}'


def markdown(curves: list[SuccessCurve]) -> str:
    """The section the learning benchmark appends to its report: one row per run, one summary row per agent."""
    if not curves:
        return ''
    ends = curves[0].window_ends
    lines = [
        '## Training episodes that reached the goal (return > 0)',
        '',
        'Share of each run\'s training episodes (its sampled behaviour, exploration included) with a positive return, '
        f'overall and per window of env steps ending at {", ".join(f"{end // 1000:,}k" for end in ends)}.',
        '',
        '| agent | environment | seed | training episodes | reached goal | share | first at env step | share per window |',
        '|---|---|---:|---:|---:|---:|---:|---|',
    ]
    for c in curves:
        first = 'never' if c.first_success_step is None else f'{c.first_success_step:,}'
        per_window = ' / '.join(_share(value) for value in c.window_shares)
        lines.append(
            f'| {c.agent} | {c.environment} | {c.seed} | {c.total_episodes:,} | {c.total_successes:,} | {_share(c.share)} | {first} | {per_window} |'
        )
    lines += [
        '',
        '| agent | environment | seeds that reached the goal | median share | median first at env step |',
        '|---|---|---:|---:|---:|',
    ]
    for agent, environment in dict.fromkeys((c.agent, c.environment) for c in curves):
        group = [c for c in curves if (c.agent, c.environment) == (agent, environment)]
        shares = [c.share for c in group if not math.isnan(c.share)]
        firsts = [math.inf if c.first_success_step is None else c.first_success_step for c in group]
        first = statistics.median(firsts)
        lines.append(
            f'| {agent} | {environment} | {sum(c.total_successes > 0 for c in group)}/{len(group)} | '
            f'{_share(statistics.median(shares) if shares else math.nan)} | {"never" if math.isinf(first) else f"{first:,.0f}"} |'
        )
    return '\n'.join(lines) + '\n'


def write_csv(path: Path, curves: list[SuccessCurve]) -> None:
    """One row per (run, window): the counts the shares and plots come from."""
    with open(path, 'w', newline='', encoding='utf-8') as file:
        writer = csv.writer(file, lineterminator='\n')
        writer.writerow(CSV_COLUMNS)
        for c in curves:
            for end, total, successes in zip(c.window_ends, c.episodes, c.successes):
                writer.writerow([c.agent, c.environment, c.seed, end, total, successes])


def plot(curves: list[SuccessCurve], directory: Path) -> list[Path]:
    """One PNG per environment, `learning_success_<env>.png`: each agent's median share over its seeds per window,
    with a band from the lowest to the highest seed."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    agents = sorted({c.agent for c in curves})
    colours = {agent: plt.get_cmap('tab10')(index % 10) for index, agent in enumerate(agents)}
    paths = []
    for environment in sorted({c.environment for c in curves}):
        figure, axes = plt.subplots(figsize=(8, 5), dpi=100)
        for agent in agents:
            group = [c for c in curves if (c.agent, c.environment) == (agent, environment)]
            if not group:
                continue
            xs, medians, lows, highs = [], [], [], []
            for index, end in enumerate(group[0].window_ends):
                shares = [c.window_shares[index] for c in group if index < len(c.window_shares) and not math.isnan(c.window_shares[index])]
                if shares:
                    xs.append(end)
                    medians.append(statistics.median(shares))
                    lows.append(min(shares))
                    highs.append(max(shares))
            seeds = len(group)
            axes.plot(xs, medians, color=colours[agent], marker='o', markersize=3, linewidth=1.5, label=f'{agent.upper()} (median of {seeds} seed{"s" if seeds > 1 else ""})')
            if seeds > 1:
                axes.fill_between(xs, lows, highs, color=colours[agent], alpha=0.2, linewidth=0)
        axes.set_xlabel('env steps (end of window)')
        axes.set_ylabel('share of training episodes that reached the goal')
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(loc='best')
        axes.set_title(f'{environment}: training success per window, median over seeds, min-max band', fontsize='medium')
        figure.tight_layout()
        path = directory / f'learning_success_{environment.replace("/", "-")}.png'
        figure.savefig(path)
        plt.close(figure)
        paths.append(path)
    return paths
