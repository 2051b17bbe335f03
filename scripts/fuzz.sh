#!/usr/bin/env bash
# Runs kledger's fuzz targets (testkit/fuzz: codec, decide) for a bounded time each, from a
# seed corpus of generated records. Needs a nightly toolchain; installs cargo-fuzz if missing.
# Not part of CI. Usage: scripts/fuzz.sh [seconds per target, default 120]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-120}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kledger/target}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
CORPUS="$CARGO_TARGET_DIR/fuzz-corpus"
cargo run -q -p kledger-testkit --example fuzz_corpus -- "$CORPUS"
cd testkit
for target in codec decide; do
  mkdir -p "fuzz/corpus/$target"
  # The run's own target dir: sanitizer builds must not mix with the workspace's.
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/fuzz" cargo +nightly fuzz run "$target" "fuzz/corpus/$target" "$CORPUS/$target" \
    -- -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=4096 -print_final_stats=1 2>&1 | grep -E "^#[0-9]+ +(DONE|INITED)|^Done|stat::number_of_executed_units|panicked|crash-|SUMMARY"
done
