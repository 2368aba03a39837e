# Sourced by the scripts here: sets $bin to the revisit binary they run, one way for all of them:
# $REVISIT_BIN if set (e.g. an older build to compare with), else the release build of this
# checkout, built first if needed (honouring CARGO_TARGET_DIR).
if [ -n "${REVISIT_BIN:-}" ]; then
  bin=$(realpath -m "$REVISIT_BIN")
else
  cargo build --release --quiet --manifest-path "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml"
  bin=$(realpath -m "${CARGO_TARGET_DIR:-$(dirname "${BASH_SOURCE[0]}")/../target}/release/revisit")
fi
[ -x "$bin" ] || { echo "$(basename "$0"): no revisit binary at $bin" >&2; exit 2; }
