"""Atari results across agents: one table of milestones per run and one of steps to a score over seeds (issue 22).

    python -m benchmarks.atari_results --environment Pong --out benchmarks/results/pong \
        --screenshots_dir screenshots/pong --every_agent --notes benchmarks/results/pong_notes.md \
        benchmarks/results/learning_pong_*_evaluations.csv

Reads the `<out>_evaluations.csv` files that `benchmarks.learning` writes (one per agent's Pong run, or one for
several seeds) and writes `<out>.md` with:

* per run: agent steps and wall time to the first greedy evaluation whose mean is above 0 (better than the
  opponent) and to each `--milestones` score (18 by default), the first, best and final evaluation, the agent steps
  the run reached, and whether it meets the goal set for its agent: a mean above 0 within `--budget` agent steps for
  the agents of `ABOVE_ZERO`, or for the others (`GAIN`) a best evaluation at least `--gain` points above the
  game's lowest score (-21 -> -11 on Pong) within the budget and still rising (the last three evaluations' mean at
  or above the three before); a run that stopped short of the budget without meeting it is "not yet: partial run";
* per agent with more than one seed: each seed's agent steps to the last milestone and their interquartile mean
  (the mean of the middle half after cutting a quarter of the seeds off each end, as Agarwal et al. 2021 recommend
  for few seeds) with a 95% percentile bootstrap interval over seeds; a seed that never got there within
  `--seeds_budget` (issue 22 asks 5 seeds of APPO and PPO for 1M agent steps; `--budget` by default) counts as that
  budget (a censored value, so that IQM is a lower bound);
* with `--every_agent`, a row for each of the zoo's 21 agents that has no run in the files ("no run yet"), so the
  table is the whole zoo's;
* with `--notes`, a hand-written markdown file of what each agent's runs tried and found (the settings and their
  results, the cause where one was found, each run's own curve) appended after the tables;
* `screenshots_dir/learning_<env>.png`: every agent's curve (`benchmarks.learning`'s plot: one panel per agent).

Wall times are those the runs recorded (from process launch); the load they ran under is in the notebook.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Optional, Sequence

from benchmarks import learning

# Issue 22's goals within 2M agent steps: a mean above 0 for these agents, a gain of 10 points and rising for the rest.
ABOVE_ZERO = ('dqn', 'double_dqn', 'prioritized_dqn', 'c51_dqn', 'rainbow', 'qr_dqn', 'iqn', 'ppo', 'a2c', 'impala', 'appo', 'ppo_icm', 'ppo_rnd')
# The agents issue 22 asks less of on Pong: 10 points above the lowest score within 2M agent steps, and rising.
GAIN = ('drqn', 'r2d2', 'ngu', 'agent57', 'reinforce', 'reinforce_baseline', 'actor_critic', 'sac')
LOWEST_SCORE = {'Pong': -21.0}
BOOTSTRAP_RESAMPLES = 10_000


def first_above(result: learning.RunResult, score: float, strictly: bool) -> Optional[int]:
    """Index of the first evaluation above `score` (at or above unless `strictly`), None if there is none."""
    for index, value in enumerate(result.eval_returns):
        if not math.isnan(value) and (value > score if strictly else value >= score):
            return index
    return None


def rising(returns: Sequence[float]) -> bool:
    """The last three evaluations' mean is at or above the mean of the three before (fewer than six: the last half
    against the first)."""
    finite = [value for value in returns if not math.isnan(value)]
    if len(finite) < 2:
        return False
    window = min(3, len(finite) // 2)
    return statistics.fmean(finite[-window:]) >= statistics.fmean(finite[-2 * window : -window])


def meets_goal(result: learning.RunResult, budget: int, lowest: float, gain: float) -> tuple[bool, str]:
    """Whether the run meets its agent's goal within `budget` agent steps, and the goal in words."""
    within = learning.RunResult(result.run, result.threshold, *_within(result, budget), [])
    if result.run.agent in ABOVE_ZERO:
        return first_above(within, 0.0, strictly=True) is not None, 'mean > 0'
    best_ok = within.best_eval_return >= lowest + gain
    return best_ok and (within.solved or rising(within.eval_returns)), f'>= {lowest + gain:g} and rising'


def _within(result: learning.RunResult, budget: int) -> tuple[list[int], list[float], list[float]]:
    keep = [index for index, steps in enumerate(result.env_steps) if steps <= budget]
    return [result.env_steps[i] for i in keep], [result.eval_returns[i] for i in keep], [result.seconds[i] for i in keep]


def interquartile_mean(values: Sequence[float]) -> float:
    """Mean of the values left after cutting floor(n / 4) of them off each end of the sorted list."""
    ordered = sorted(values)
    cut = len(ordered) // 4
    return statistics.fmean(ordered[cut : len(ordered) - cut])


def bootstrap_interval(values: Sequence[float], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """95% percentile bootstrap interval of the interquartile mean, resampling the seeds with replacement."""
    generator = random.Random(seed)
    estimates = sorted(interquartile_mean(generator.choices(values, k=len(values))) for _ in range(resamples))
    return estimates[int(0.025 * resamples)], estimates[min(resamples - 1, int(0.975 * resamples))]


def _steps(index: Optional[int], result: learning.RunResult) -> str:
    return 'not reached' if index is None else f'{result.env_steps[index]:,}'


def _seconds(index: Optional[int], result: learning.RunResult) -> str:
    if index is None or math.isnan(result.seconds[index]):
        return 'not reached' if index is None else '?'
    return f'{result.seconds[index] / 60:,.0f} min'


def run_table(
    results: list[learning.RunResult], milestones: Sequence[float], budget: int, lowest: float, gain: float, every_agent: bool = False
) -> list[str]:
    """One row per run; with `every_agent`, also one per agent of `ABOVE_ZERO` and `GAIN` without a run."""
    header = ['agent', 'seed', 'agent steps to > 0', 'wall time to > 0']
    for score in milestones:
        header += [f'agent steps to {score:g}', f'wall time to {score:g}']
    header += ['first eval', 'best eval', 'final eval', 'agent steps run', 'goal', 'met?']
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for result in sorted(results, key=lambda r: (r.run.agent, r.run.seed)):
        above = first_above(result, 0.0, strictly=True)
        cells = [result.run.agent, str(result.run.seed), _steps(above, result), _seconds(above, result)]
        for score in milestones:
            index = first_above(result, score, strictly=False)
            cells += [_steps(index, result), _seconds(index, result)]
        met, goal = meets_goal(result, budget, lowest, gain)
        first = result.eval_returns[0] if result.eval_returns else math.nan
        verdict = 'yes' if met else 'not yet: partial run' if result.total_env_steps < budget else 'no'
        cells += [f'{first:.1f}', f'{result.best_eval_return:.1f}', f'{result.final_eval_return:.1f}', f'{result.total_env_steps:,}', goal, verdict]
        lines.append('| ' + ' | '.join(cells) + ' |')
    if every_agent:
        run_agents = {result.run.agent for result in results}
        for agent in sorted(set(ABOVE_ZERO + GAIN) - run_agents):
            goal = 'mean > 0' if agent in ABOVE_ZERO else f'>= {lowest + gain:g} and rising'
            lines.append('| ' + ' | '.join([agent] + ['-'] * (len(header) - 3) + [goal, 'no run yet']) + ' |')
    return lines


def seeds_table(results: list[learning.RunResult], score: float, budget: int) -> list[str]:
    """Per agent with 2+ seeds: agent steps to `score` per seed, their IQM and its 95% bootstrap interval. A seed
    that did not get there within `budget` counts as `budget`; one that stopped short of both (an interrupted run) is
    listed but left out of the statistics."""
    lines = []
    for agent in sorted({r.run.agent for r in results}):
        runs = sorted((r for r in results if r.run.agent == agent), key=lambda r: r.run.seed)
        if len(runs) < 2:
            continue
        steps, per_seed = [], []
        for result in runs:
            index = first_above(result, score, strictly=False)
            if index is not None and result.env_steps[index] <= budget:
                steps.append(float(result.env_steps[index]))
                per_seed.append(f'{result.run.seed}: {steps[-1]:,.0f}')
            elif result.total_env_steps >= budget:
                steps.append(float(budget))
                per_seed.append(f'{result.run.seed}: not reached')
            else:
                per_seed.append(f'{result.run.seed}: stopped at {result.total_env_steps:,} (left out)')
        if len(steps) < 2:
            continue
        low, high = bootstrap_interval(steps)
        if not lines:
            lines = [f'| agent | seeds | agent steps to {score:g} per seed | IQM | 95% bootstrap interval |', '|---|---:|---|---:|---|']
        lines.append(f'| {agent} | {len(steps)} | {"; ".join(per_seed)} | {interquartile_mean(steps):,.0f} | {low:,.0f} - {high:,.0f} |')
    return lines


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('evaluations', nargs='+', help='<out>_evaluations.csv files of benchmarks.learning')
    parser.add_argument('--environment', default='Pong', help='the game whose runs to tabulate')
    parser.add_argument('--milestones', default='18', help='comma-separated scores to time besides > 0')
    parser.add_argument('--budget', type=int, default=2_000_000, help='agent steps within which the goals count')
    parser.add_argument('--seeds_budget', type=int, default=0, help='agent steps within which the seeds table counts the last milestone (default: --budget)')
    parser.add_argument('--gain', type=float, default=10.0, help='points above the lowest score for the agents not in ABOVE_ZERO')
    parser.add_argument('--out', required=True, help='writes <out>.md')
    parser.add_argument('--screenshots_dir', default='', help='where to draw learning_<env>.png (none if empty)')
    parser.add_argument('--plot_ymin', type=float, default=None)
    parser.add_argument('--every_agent', action='store_true', help="a row for each of the zoo's agents without a run in the files")
    parser.add_argument('--notes', default='', help='markdown file of what each run tried and found, appended after the tables')
    return parser.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    results = [r for path in args.evaluations for r in learning.read_evaluations_csv(Path(path)) if r.run.environment == args.environment]
    if not results:
        raise SystemExit(f'error: no {args.environment} runs in {", ".join(args.evaluations)}')
    milestones = [float(text) for text in args.milestones.split(',') if text]
    lowest = LOWEST_SCORE.get(args.environment, math.nan)
    lines = [f'# {args.environment}: every agent\'s greedy evaluations', '', f'`python -m benchmarks.atari_results {" ".join(sys.argv[1:] if argv is None else argv)}`', '']
    lines += [
        f'From {", ".join(sorted(set(args.evaluations)))}. Each evaluation is the mean return of whole games; wall time is',
        'from process launch. Goal within the budget: a mean above 0, or for the agents issue 22 asks less of, a best',
        f'evaluation {args.gain:g} points above the lowest score and rising. Budget {args.budget:,} agent steps.',
        '',
    ]
    lines += run_table(results, milestones, args.budget, lowest, args.gain, args.every_agent)
    seeds_budget = args.seeds_budget or args.budget
    seeds = seeds_table(results, milestones[-1], seeds_budget) if milestones else []
    if seeds:
        lines += ['', f'Over seeds, within {seeds_budget:,} agent steps (a seed that did not reach {milestones[-1]:g} by then counts as {seeds_budget:,}):', ''] + seeds
    if args.notes:
        if not Path(args.notes).is_file():
            raise SystemExit(f'error: --notes={args.notes}: no such file')
        lines += ['', Path(args.notes).read_text(encoding='utf-8').rstrip('\n')]
    out = Path(args.out).with_suffix('.md')
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    paths = learning.plot(results, Path(args.screenshots_dir), args.plot_ymin) if args.screenshots_dir else []
    print('\n'.join(lines))
    print(f'wrote {out}' + ''.join(f', {path}' for path in paths))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
