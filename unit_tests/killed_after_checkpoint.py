"""Runs an entry point as `python -m` would, and kills it with SIGKILL right after a periodic checkpoint: a kill -9 in
the middle of an iteration at a point fixed by the run's own counters, not by how fast the machine is.

    python -m unit_tests.killed_after_checkpoint EVERY_ENV_STEPS KILL_AT_ENV_STEPS MODULE [FLAGS...]

Periodic checkpoints are asked for every EVERY_ENV_STEPS env steps instead of every --save_every_sec of the clock
(the clock's rule has its own unit test); the process kills itself as soon as one of at least KILL_AT_ENV_STEPS is on
disk, so the run can neither end before the kill nor be killed before a checkpoint, however fast or slow it runs.
"""

import os
import runpy
import signal
import sys

from deep_rl_zoo import experiment


def main() -> None:
    every, kill_at, module, flags = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    saved_at = {'env_steps': 0}
    save_periodic = experiment.Experiment.save_periodic

    def periodic_save_due(self: experiment.Experiment) -> bool:
        return self.env_steps - saved_at['env_steps'] >= every

    def save_then_die(self: experiment.Experiment, *args, **kwargs) -> str:
        path = save_periodic(self, *args, **kwargs)
        saved_at['env_steps'] = self.env_steps
        if self.env_steps >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    experiment.Experiment.periodic_save_due = periodic_save_due
    experiment.Experiment.save_periodic = save_then_die
    sys.argv = [module, *flags]
    runpy.run_module(module, run_name='__main__', alter_sys=True)


if __name__ == '__main__':
    main()
