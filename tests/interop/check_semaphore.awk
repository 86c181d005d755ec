# Checks a log of sections written by holders of one semaphore's permits: lines `in <fence> <who>`
# and `out <fence>`. Never more than `permits` inside at once; no fencing token granted twice;
# holders shared the semaphore at least once; every kind of process in `kinds` held a permit.
# Usage: awk -v store=NAME -v permits=N -v want=SECTIONS -v kinds="tenure python" -f check_semaphore.awk LOG
$1 == "in" {
  inside++; if (inside > most) most = inside
  if (inside > permits) { print "line " NR ": " inside " holders of " permits " permits: " $0; bad = 1 }
  if ($2 in seen) { print "line " NR ": fencing token " $2 " granted twice"; bad = 1 }
  seen[$2] = 1; held[$3]++; sections++
}
$1 == "out" { inside-- }
END {
  n = split(kinds, kind, " ")
  summary = ""
  for (i = 1; i <= n; i++) summary = summary sprintf(" %s %d", kind[i], held[kind[i]])
  printf "%s semaphore: %d sections (%s ), at most %d holders of %d permits at once, %s\n", store, sections, summary, most, permits, bad ? "VIOLATIONS above" : "every fencing token granted once"
  if (sections != want) { print "expected " want " sections"; bad = 1 }
  for (i = 1; i <= n; i++) if (!held[kind[i]]) { print "expected sections from " kind[i]; bad = 1 }
  if (most < 2) { print "holders never shared the semaphore"; bad = 1 }
  exit bad
}
