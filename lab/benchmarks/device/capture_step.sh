# Sourced by the capture scripts of lab/benchmarks/device/ (capture_profile_diff.sh, capture_target_diff.sh).
# step NAME TIMEOUT CMD...: run CMD under a timeout, keep $DIR/NAME.out and $DIR/NAME.err, and append the command,
# its exit code, wall time and output sizes to $LOG.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$DIR/$name.out" 2> "$DIR/$name.err"
  local rc=$?
  printf '$ %s\n# rc=%s wall=%ss stdout=%sB stderr=%sB\n' "$*" "$rc" "$((SECONDS - t0))" \
    "$(stat -c %s "$DIR/$name.out")" "$(stat -c %s "$DIR/$name.err")" >> "$LOG"
}
