"""Runs an entry point as `python -m` would, and holds its learner after the first iteration until a file appears:
a test can then act on the run (kill an actor, remove a node) at a point fixed by the run's own progress, not by how
fast the machine is.

    python -m unit_tests.paused_after_iteration GO_FILE MODULE [FLAGS...]

After iteration 0 has ended (evaluated, its checkpoint and results row written) the learner waits, polling every
50 ms, until GO_FILE exists, and goes on from there; its actors' calls already sent finish meanwhile. It gives up
with an error after 10 minutes.
"""

import os
import runpy
import sys
import time

from deep_rl_zoo import experiment

WAIT_SECONDS = 600.0


def main() -> None:
    go_file, module, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
    end_iteration = experiment.Experiment.end_iteration

    def end_iteration_then_wait(self: experiment.Experiment, iteration: int, *args, **kwargs):
        row = end_iteration(self, iteration, *args, **kwargs)
        if iteration == 0:
            deadline = time.monotonic() + WAIT_SECONDS
            while not os.path.exists(go_file):
                if time.monotonic() > deadline:
                    raise TimeoutError(f'paused_after_iteration: {go_file} did not appear within {WAIT_SECONDS:.0f} s')
                time.sleep(0.05)
        return row

    experiment.Experiment.end_iteration = end_iteration_then_wait
    sys.argv = [module, *flags]
    runpy.run_module(module, run_name='__main__', alter_sys=True)


if __name__ == '__main__':
    main()
