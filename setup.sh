#!/usr/bin/env bash
# Creates ./.venv with the pinned dependencies (idempotent: a second run only checks them): the library's
# (requirements.txt), the optional Ray backend's and the documentation site's, which the test suite exercises.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-ray.txt -r requirements-docs.txt 2>.venv/pip-errors.log; then
  cat .venv/pip-errors.log >&2
  exit 1
fi
.venv/bin/python -c "import torch, gymnasium, ale_py; print(f'ready: torch {torch.__version__}, gymnasium {gymnasium.__version__}, ale-py {ale_py.__version__}')"
