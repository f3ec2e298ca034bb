#!/usr/bin/env bash
# Run the README's test command in a fresh virtual environment, then lint the package.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${DPKNN_CI_VENV:-$(mktemp -d)/venv}"
python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet --upgrade pip

# torch for the DP-MisGAN tests, first and pinned: `pip install torch==2.13.0` takes the CPU wheel these
# machines keep on disk; any other torch requirement would pull a multi-GB CUDA build.
pip install --quiet torch==2.13.0

# The README's test command, exactly. pytest exits 5 when it collects no test; set -e fails on it.
pip install ".[test]" && pytest

ruff check dpknn tests benchmarks
