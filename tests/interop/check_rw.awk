# Checks a log of read and write sections written by grelmicro's and tenure's workers on one
# read-write lock: lines `read <generation> <who>`, `done-read <generation>`, `write <fence>
# <who>`, `done-write <fence>`. Never a writer beside a reader or another writer; write fences
# strictly increase; a reader reads the last write's fence; readers overlapped at least once;
# both libraries read and wrote (and every front end named in -v also, "python kotlin", too).
# Usage: awk -v store=NAME -v want=N [-v also="python kotlin"] -f check_rw.awk LOG
$1 == "read" {
  if (writing) { print "line " NR ": a reader inside a write section: " $0; bad = 1 }
  if ($2 + 0 != last) { print "line " NR ": read generation " $2 ", the last write's fence is " last; bad = 1 }
  readers++; if (readers > most) most = readers; reads[$3]++; sections++
}
$1 == "done-read" { readers-- }
$1 == "write" {
  if (writing || readers > 0) { print "line " NR ": a writer beside " readers " readers or a writer: " $0; bad = 1 }
  if ($2 + 0 <= last) { print "line " NR ": fencing token " $2 " after " last; bad = 1 }
  writing = 1; last = $2 + 0; writes[$3]++; sections++
}
$1 == "done-write" { writing = 0 }
END {
  printf "%s: %d sections (grelmicro %d reads %d writes, tenure CLI %d reads %d writes, python %d reads %d writes, kotlin %d reads %d writes), at most %d readers at once, last write fence %d, %s\n", store, sections, reads["grelmicro"], writes["grelmicro"], reads["tenure"], writes["tenure"], reads["python"], writes["python"], reads["kotlin"], writes["kotlin"], most, last, bad ? "VIOLATIONS above" : "write fences strictly increasing, no writer beside anyone"
  if (sections != want) { print "expected " want " sections"; bad = 1 }
  if (!reads["grelmicro"] || !writes["grelmicro"] || !reads["tenure"] || !writes["tenure"]) { print "expected reads and writes from both"; bad = 1 }
  n = split(also, extra, " ")
  for (i = 1; i <= n; i++) if (!reads[extra[i]] || !writes[extra[i]]) { print "expected reads and writes from " extra[i]; bad = 1 }
  if (most < 2) { print "readers never shared the lock"; bad = 1 }
  exit bad
}
