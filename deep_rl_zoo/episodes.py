"""Playing an actor in a vector environment: the step loop that training and evaluation share, and the scoring of
whole episodes within a step budget. Below both the experiment (which scores evaluations with `play_episodes`) and
the run loops (`main_loop`), which import it.
"""

from typing import Any, Callable, Iterator, Optional

from deep_rl_zoo import trackers
from deep_rl_zoo.gym_env import VectorEnvironment, VectorStep
from deep_rl_zoo.types import Actor


def run_env_loop(actor: Actor, env: VectorEnvironment, on_restart: Optional[Callable[[], None]] = None) -> Iterator[VectorStep]:
    """Resets `env`, then forever: one batched `act`, one vector `step`, `observe`, and yields the step.

    Environments reset themselves when an episode ends (same-step autoreset), so the loop never stops;
    callers take as many steps as they need with `itertools.islice`. An actor with a `reset()` method
    (a recurrent one, which carries state between steps) is reset with the environments.

    An actor whose `wants_new_episodes` is true after `observe` (REINFORCE after an update: the running games began
    with the old parameters) gets every environment reset before its next `act`; `on_restart()` then tells the
    caller that the running episodes were abandoned (their partial returns are no episode's score).
    """
    observation = env.reset()
    if hasattr(actor, 'reset'):
        actor.reset()
    while True:
        action = actor.act(observation)
        step = env.step(action)
        actor.observe(action, step)
        yield step
        observation = step.observation
        if getattr(actor, 'wants_new_episodes', False):
            observation = env.reset()
            actor.reset()
            if on_restart is not None:
                on_restart()


def play_episodes(
    actor: Actor,
    env: VectorEnvironment,
    num_steps: int,
    num_episodes: int = 0,
    stop: Optional[Callable[[], bool]] = None,
    max_episodes: int = 0,
    report: Optional[Callable[[int], None]] = None,
) -> dict[str, Any]:
    """Steps `env` with `actor` for `num_steps` env steps (or until `num_episodes` episodes end when > 0), or until
    `stop()` is true (a Ctrl-C during evaluation, a spent time budget), and at most until `max_episodes` episodes end
    when > 0; `report(steps)` follows the steps played (a progress line).

    Returns the finished episodes' raw returns and lengths. If no episode finished, the unfinished one of
    environment 0 is reported so a long game still gives a number (flagged by `partial`).
    """
    tracker = trackers.EpisodeTracker(env.num_envs)
    finished: list[tuple[float, int]] = []
    steps = 0
    for step in run_env_loop(actor, env):
        finished += tracker.step(step.raw_reward, step.terminated | step.truncated)
        steps += env.num_envs
        if report is not None:
            report(steps)
        if (num_episodes and len(finished) >= num_episodes) or (not num_episodes and steps >= num_steps):
            break
        if max_episodes and len(finished) >= max_episodes:
            break
        if stop is not None and stop():
            break
    partial = not finished
    if partial:
        finished = [tracker.current(0)]
    return {'finished': finished, 'partial': partial, 'steps': steps}
