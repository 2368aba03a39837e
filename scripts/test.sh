#!/usr/bin/env bash
# The tests on a fresh machine, in one command: installs what the consumer tests need into a local
# virtual environment (.venv/, or $REVISIT_VENV): pyarrow and DuckDB, and pyspark when a Java
# runtime is on the PATH (set REVISIT_SPARK=0 to leave Spark out); then runs `cargo test --release`
# with that environment's python (REVISIT_PYTHON), and the solver's unit tests at each narrower
# vector width. Arguments go to cargo test (and leave the narrower widths out):
#
#   scripts/test.sh                 # everything
#   scripts/test.sh --test inputs   # one file of tests
#
# Needs a Rust toolchain and python3 with its venv module.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${REVISIT_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
packages=("pyarrow>=15" "duckdb>=1.0")
if [ "${REVISIT_SPARK:-1}" != 0 ] && command -v java >/dev/null; then
  packages+=("pyspark>=3.5")
fi
# quiet, and quick when everything is there already
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${packages[@]}"
# -s: the venv's own python, not the interpreter its symlink points at (which lacks the packages)
REVISIT_PYTHON=$(realpath -s "$venv/bin/python")
export REVISIT_PYTHON
cargo test --release "$@"
# The solver's loops run on the CPU's widest vector instructions; with no arguments, its unit tests
# run again at each narrower width, where every loop must give the same bits (REVISIT_VECTORS).
if [ $# -eq 0 ]; then
  for width in avx2 baseline; do
    echo "solver unit tests with REVISIT_VECTORS=$width"
    REVISIT_VECTORS=$width cargo test --release -q -p revisit-core --lib
  done
fi
