"""The Sample Factory model card's config starts under the usual limit of 1,024 open files (`ulimit -n`).

Every shared-memory tensor keeps a file descriptor open, and the card's 16 workers x 8 rollout buffers x 10 fields
were 1,280 tensors ("Too many open files" before the first rollout); the buffers of one field of one worker are now
one tensor (`distributed.make_rollout_buffers`)."""

import csv
import os
import subprocess

import pytest

from deep_rl_zoo import checkpoint
from deep_rl_zoo.appo import sample_factory_config
from unit_tests.helpers import TRACEBACK, python_executable, run_environment

CARD = os.path.join(os.path.dirname(sample_factory_config.__file__), 'configs', 'atari_amidar.json')
OPEN_FILES = 1024
# The card's rollout (128) and minibatch (1,024 samples) both divided by 16: every count the buffers follow from is the
# card's (16 workers x 2 environments, 2 policies, 8 minibatches, 2 batches to accumulate), so a batch is still 64
# rollouts and each worker still gets 8 buffers, while the first update needs 1,024 agent steps instead of 16,384.
SCALE = 16
ROLLOUT, BATCH_SIZE = 128 // SCALE, 1024 // SCALE
AGENT_STEPS = 64 * ROLLOUT * 2  # one batch: 64 rollouts of 2 environments
# --train_for_env_steps counts emulator frames (frameskip 4) per policy (2): one batch of agent steps.
TRAIN_FOR_ENV_STEPS = AGENT_STEPS * 4 // 2


@pytest.mark.slow
def test_the_model_cards_config_starts_and_updates_under_a_limit_of_1024_open_files(tmp_path):
    command = (
        python_executable(), '-m', 'deep_rl_zoo.appo.run_atari', f'--config_json={CARD}', '--environment_name=atari_amidar',
        f'--rollout={ROLLOUT}', f'--batch_size={BATCH_SIZE}', f'--train_for_env_steps={TRAIN_FOR_ENV_STEPS}', '--num_eval_steps=10',
        f'--train_dir={tmp_path}/train', '--nouse_tensorboard', '--noprogress', '--learner_threads=1',
    )  # fmt: skip
    proc = subprocess.run(
        ('bash', '-c', f'ulimit -Sn {OPEN_FILES} && exec "$@"', 'bash', *command),
        cwd=str(tmp_path), env=run_environment(), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TRACEBACK not in proc.stderr
    directory = tmp_path / 'train' / 'APPO_Amidar'
    with open(directory / 'APPO_Amidar_results.csv', newline='') as file:
        (row,) = list(csv.DictReader(file))
    assert (row['env_steps'], row['learner_steps']) == (str(AGENT_STEPS), '1')  # the first learner update, then the budget's stop
    flags = checkpoint.load_checkpoint(str(directory / 'APPO_Amidar_0.ckpt'), agent_name='APPO', environment_name='Amidar')['flags']
    buffers = (flags['num_workers'], flags['num_envs_per_worker'], flags['num_policies'], flags['batch_rollouts'], flags['num_buffers_per_actor'])
    assert buffers == (16, 2, 2, 64, 8)  # the card's shared memory: 16 x 8 rollout buffers
