#!/usr/bin/env bash
# Create (or update) the virtual environment .venv with adaexplore installed in it.
#
#   ./install.sh          runtime dependencies
#   ./install.sh --dev    also the test and lint tools, and Debian's chromium for the browser tests
#
# Where python3 already has a CUDA build of torch, the environment sees and keeps it (and the Triton
# beside it); elsewhere torch, triton and numpy are pinned by constraints/cpu.txt.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
target="."
[ "${1:-}" = "--dev" ] && target=".[dev]"

if "$python" -c 'import torch, sys; sys.exit(0 if torch.version.cuda else 1)' 2>/dev/null; then
    echo "install.sh: keeping the CUDA torch of $python"
    [ -d .venv ] || "$python" -m venv --system-site-packages .venv
    .venv/bin/python -m pip install -q -e "$target"
else
    [ -d .venv ] || "$python" -m venv .venv
    .venv/bin/python -m pip install -q -c constraints/cpu.txt -e "$target"
fi
# The evaluator's workers import the package from this checkout inside a sandbox that may not write here, so
# Python cannot keep their bytecode for them: compiled now, each worker start skips compiling about a hundred
# modules from source (about 0.5 s of CPU a worker on 2 cores). A module edited later is compiled again in memory
# until the next ./install.sh.
.venv/bin/python -m compileall -q -j 0 adaexplore >/dev/null
echo "install.sh: adaexplore installed in .venv ($(.venv/bin/python -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'))"

# The FlashInfer-Bench tests read and write that format with the flashinfer-bench package's own models. The
# package's requirements pull in flashinfer itself (about 1.5 GB of CUDA libraries, and cuda-bindings 13, which the
# evaluator's cuda-bindings 12 pin excludes) that its data models never import; the tests take the package and the
# two small libraries its models use, and nothing else. `pip install 'adaexplore[flashinfer]'` takes it whole.
if [ "$target" = ".[dev]" ]; then
    .venv/bin/python -m pip install -q --no-deps "flashinfer-bench>=0.1.2,<0.2" "safetensors>=0.5" "docstring-parser>=0.16"
fi

# The browser tests of the report pages drive the system's Chromium through Playwright (never a browser
# build of Playwright's own): install Debian's package where it is missing and this user may.
if [ "$target" = ".[dev]" ] && ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        as_root=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root="sudo"
    else
        as_root="no"
    fi
    if [ "$as_root" != "no" ] && command -v apt-get >/dev/null 2>&1; then
        echo "install.sh: installing Debian's chromium for the browser tests"
        if ! { $as_root apt-get update -qq && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
            echo "install.sh: could not install chromium with apt-get; the browser tests will be skipped" >&2
        fi
    else
        echo "install.sh: chromium is missing, so the browser tests will be skipped; install it with" \
            "'sudo apt-get install chromium' (Debian, Ubuntu), or point ADAEXPLORE_CHROMIUM at a Chromium binary" >&2
    fi
fi

# The store's tests run against a real PostgreSQL server too, a throwaway one the tests start from Debian's
# postgresql binaries: install them where they are missing and this user may (else those tests are skipped).
if [ "$target" = ".[dev]" ] && ! .ci/postgres install >/dev/null; then
    echo "install.sh: PostgreSQL's server binaries are missing, so the PostgreSQL store tests will be skipped;" \
        "install them with 'sudo apt-get install postgresql' (Debian, Ubuntu)" >&2
fi
