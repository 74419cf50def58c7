#!/usr/bin/env bash
# Helpers shared by the benchmark scripts (sourced, not run). They use $WORK where noted.

port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
free_port() { # free_port START [EXCLUDED...]
  local p="$1"; shift
  local i
  for ((i = 0; i < 200; i++)); do
    local taken=0 x
    for x in "$@"; do [[ "$p" == "$x" ]] && taken=1; done
    if [[ $taken -eq 0 ]] && ! port_in_use "$p"; then echo "$p"; return 0; fi
    p=$((p + 1))
  done
  return 1
}
to_seconds() { # 20s / 2m / 1h / 20 -> seconds
  local d="$1"
  case "$d" in
    *s) echo "${d%s}" ;; *m) echo $((${d%m} * 60)) ;; *h) echo $((${d%h} * 3600)) ;; *) echo "$d" ;;
  esac
}
cpu_machine() { awk '/^cpu / {busy = $2 + $3 + $4 + $9; print busy, busy + $5 + $6 + $7 + $8}' /proc/stat; }
snap_children() { times >"$WORK/times.txt"; }
children_secs() {
  sed -n 2p "$WORK/times.txt" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }'
}
req_s() { awk '/^Requests\/sec:/ {print $2}' "$1"; }
pct() { awk -v p="$2" '$1 == p {print $2}' "$1"; }  # pct FILE 50%
sock_err() { sed -n 's/^ *Socket errors: *//p' "$1"; }
