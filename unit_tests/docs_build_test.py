"""The documentation site (mkdocs.yml, docs/) builds without a warning: `mkdocs build --strict` into a temporary
directory, as `.venv/bin/mkdocs build` would. Strict mode fails on a link to a page, file or anchor that does not exist
(the docs' links into benchmarks/ and screenshots/ included, which docs/hooks.py serves) and on a page left out of the
navigation; the test also fails on any other WARNING line MkDocs prints."""

import os
import subprocess
import sys

import pytest

from unit_tests.helpers import REPO_ROOT


@pytest.mark.slow
def test_the_site_builds_strictly_without_warnings(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING='1')  # Material's notice about MkDocs 2.0, not about this site
    proc = subprocess.run(
        [sys.executable, '-m', 'mkdocs', 'build', '--strict', '--site-dir', str(tmp_path / 'site'), '--config-file', os.path.join(REPO_ROOT, 'mkdocs.yml')],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    warnings = [line for line in output.splitlines() if 'WARNING' in line]
    assert not warnings, '\n'.join(warnings)
    site = tmp_path / 'site'
    for page in ('index.html', 'training/index.html', 'flags/index.html', 'distributed/index.html', 'appo/index.html', 'repo/benchmarks/NOTEBOOK/index.html'):
        assert (site / page).is_file(), page
    assert (site / 'repo' / 'screenshots' / 'learning_CartPole-v1.png').is_file()  # the plots the pages show
