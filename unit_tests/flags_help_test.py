"""`--help` of the run scripts: this script's own flags grouped by theme with their defaults, exit 0; and the flags page
(docs/flags.md, which docs/generate_flags.py writes from the same help) names every flag those scripts define."""

import pytest
import os
import re
import subprocess

from unit_tests.helpers import REPO_ROOT, run_module

pytestmark = pytest.mark.slow  # end-to-end runs of the entry points (deselect with -m "not slow")

# Scripts that between them use every settings group of deep_rl_zoo/settings.py and the agents' own (APPO's Sample
# Factory names are documented in docs/appo.md too).
SCRIPTS = (
    'dqn.run_atari', 'ppo.run_continuous', 'sac.run_classic', 'rainbow.run_classic', 'iqn.run_classic', 'qr_dqn.run_classic',
    'impala.run_atari', 'drqn.run_classic', 'reinforce_baseline.run_classic', 'a2c.run_classic_grad', 'r2d2.run_classic',
    'ppo_icm.run_classic', 'ppo_rnd.run_classic', 'ngu.run_atari', 'agent57.run_classic',
)  # fmt: skip
FLAG_LINE = re.compile(r'^  --(\w+)=', re.M)


def helps() -> dict[str, subprocess.CompletedProcess]:
    """Every script's --help."""
    return {script: run_module(f'deep_rl_zoo.{script}', '--help') for script in SCRIPTS}


def test_help_lists_the_scripts_flags_by_theme_and_the_flags_page_names_every_one():
    with open(os.path.join(REPO_ROOT, 'docs', 'flags.md'), encoding='utf-8') as file:
        flags_section = file.read()
    missing = {}
    for script, proc in helps().items():
        assert proc.returncode == 0, f'{script} --help: exit {proc.returncode}\n{proc.stderr[-2000:]}'
        out = proc.stdout
        assert out.startswith('Train') or out.startswith('"'), out[:200]  # the script's docstring comes first
        headings = [line[:-1] for line in out.splitlines() if line and not line.startswith(' ') and line.endswith(':') and ' ' not in line.rstrip(':').replace(' and ', '')]
        assert headings[:3] == ['environment', 'training', 'agent'] and headings[-2:] == ['logging', 'checkpoints'], (script, headings)
        names = FLAG_LINE.findall(out)
        assert 'environment_name' in names and 'help' not in names and 'flagfile' not in names  # absl's own are left out
        assert '--seed=1 ' in out  # defaults as typed on the command line
        missing.update({name: script for name in names if f'`--{name}`' not in flags_section})
    assert not missing, f"docs/flags.md lacks {sorted(missing)} (defined by the scripts {sorted(set(missing.values()))})"
