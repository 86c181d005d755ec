# Checks a log of critical sections written by a peer's workers (grelmicro's, or with -v
# peer=etcdctl `etcdctl lock`'s) and tenure's: lines `start <fence> <who>` and `end <fence>` must
# alternate (no section inside another), fencing tokens must strictly increase, and `want`
# sections must come from both. With -v also="node python kotlin" those contenders must have written
# sections too.
# Usage: awk -v want=N -v store=NAME [-v peer=WHO] [-v also=WHO...] -f check_sections.awk LOG
BEGIN { if (peer == "") peer = "grelmicro" }
NR % 2 == 1 {
  if ($1 != "start") { print "line " NR ": a section started inside another: " $0; bad = 1 }
  if ($2 + 0 <= last) { print "line " NR ": fencing token " $2 " after " last; bad = 1 }
  last = $2 + 0; fence = $2; who[$3]++
}
NR % 2 == 0 {
  if ($1 != "end" || $2 != fence) { print "line " NR ": sections interleaved: " $0; bad = 1 }
}
END {
  sections = NR / 2
  printf "%s: %d sections (%s %d, tenure CLI %d, node %d, python %d, kotlin %d), fencing tokens strictly increasing up to %d, none overlapping\n", store, sections, peer, who[peer], who["tenure"], who["node"], who["python"], who["kotlin"], last
  if (sections != want || who[peer] == 0 || who["tenure"] == 0) { print "expected " want " sections from " peer " and tenure"; bad = 1 }
  n = split(also, others, " ")
  for (i = 1; i <= n; i++) if (who[others[i]] == 0) { print "expected sections from " others[i]; bad = 1 }
  exit bad
}
