# Sourced by the scripts that compare two builds of revisit: `two_builds "$@"` sets $before and
# $after to the absolute paths of the binaries its first two arguments name (each checked to be
# an executable); the caller then shifts them off.
two_builds() {
  local name bin
  name=$(basename "$0")
  before=$(realpath -m "${1:?usage: $name BEFORE_BIN AFTER_BIN [WORKLOAD...]}")
  after=$(realpath -m "${2:?usage: $name BEFORE_BIN AFTER_BIN [WORKLOAD...]}")
  for bin in "$before" "$after"; do
    [ -x "$bin" ] || { echo "$name: no executable $bin" >&2; exit 2; }
  done
}
