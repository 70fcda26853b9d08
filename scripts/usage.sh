# Sourced by the project's shell scripts: `-h`/`--help` as the first argument prints the
# script's header comment (its usage) and exits 0, so asking a script for help never starts a
# build, a download or a run.
#   . "$(dirname "${BASH_SOURCE[0]}")/usage.sh" "$@"     (from scripts/)
case "${1:-}" in
-h | --help)
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
    exit 0
    ;;
esac
