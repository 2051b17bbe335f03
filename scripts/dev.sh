#!/usr/bin/env bash
# kledger's developer entry point. On a fresh Debian machine with a Rust toolchain it installs
# what the build needs, then runs the demo or the tests.
#
#   scripts/dev.sh demo    run kledger on its embedded defaults with the bundled example stream
#   scripts/dev.sh test    run every test (what CI runs)
#   scripts/dev.sh lint    cargo fmt --check and cargo clippy -D warnings
#   scripts/dev.sh bench   the benchmarks (release build)
#   scripts/dev.sh harness [short|long]   the reliability harness (release build; summary table)
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kledger/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Debian packages the native dependencies need: librdkafka (gcc, make, zlib), RocksDB (g++,
# libclang for bindgen), tansu's sqlite (cmake for some builds).
PACKAGES=(build-essential g++ make cmake pkg-config zlib1g-dev libclang-dev)
# The tests also scrape kledger with a real Prometheus server and check the alert rules.
TEST_PACKAGES=(prometheus)

setup() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
  mkdir -p "$CARGO_TARGET_DIR"
}

# The Python extractor example's test needs Python 3 with examples/python/requirements.txt:
# a virtualenv under ~/.cache/kledger (python3 and python3-venv from apt when missing).
VENV="${KLEDGER_VENV:-$HOME/.cache/kledger/venv}"
setup_python() {
  if ! command -v python3 >/dev/null || ! python3 -m venv --help >/dev/null 2>&1; then
    echo "installing: python3 python3-venv" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
  fi
  local stamp="$VENV/.requirements"
  if ! cmp -s examples/python/requirements.txt "$stamp"; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r examples/python/requirements.txt
    cp examples/python/requirements.txt "$stamp"
  fi
  export EXAMPLES_PYTHON="$VENV/bin/python"
}

case "${1:-}" in
  demo)
    setup
    cargo build -p kledger-topology --bin kledger
    mkdir -p data
    # The embedded broker and state live under ./data; Ctrl-C stops, running again continues.
    # A read-API principal for the example's first user (see README, "Reading").
    export KLEDGER_API__PRINCIPALS__DEMO__TOKEN="${KLEDGER_API__PRINCIPALS__DEMO__TOKEN:-demo-token-u-alice-0001}"
    export KLEDGER_API__PRINCIPALS__DEMO__TENANT_ID="${KLEDGER_API__PRINCIPALS__DEMO__TENANT_ID:-t_acme}"
    export KLEDGER_API__PRINCIPALS__DEMO__OWNER_KIND="${KLEDGER_API__PRINCIPALS__DEMO__OWNER_KIND:-user}"
    export KLEDGER_API__PRINCIPALS__DEMO__OWNER_ID="${KLEDGER_API__PRINCIPALS__DEMO__OWNER_ID:-u_alice}"
    exec "$CARGO_TARGET_DIR/debug/kledger" run --demo examples/intents.jsonl
    ;;
  test)
    setup "${TEST_PACKAGES[@]}"
    setup_python
    cargo fmt --all -- --check
    cargo test --workspace
    ;;
  lint)
    setup
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    ;;
  bench)
    setup
    cargo bench -p kledger-processors --bench decide
    cargo bench -p kledger-topology --bench pipeline
    cargo bench -p kledger-topology --bench vectors
    cargo bench -p kledger-topology --bench rebuild
    ;;
  harness)
    setup
    cargo build --release -p kledger-topology --bin kledger -p kledger-testkit --bin harness
    exec "$CARGO_TARGET_DIR/release/harness" "${2:-short}" --kledger "$CARGO_TARGET_DIR/release/kledger"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
