# Checks a log of read and write sections written by grelmicro's and tenure's workers on one
# read-write lock: lines `read <generation> <who>`, `done-read <generation>`, `write <fence>
# <who>`, `done-write <fence>`. Never a writer beside a reader or another writer; write fences
# strictly increase; a reader reads the last write's fence; readers overlapped at least once;
# both libraries read and wrote (and, with -v also=python, the Python package too).
# Usage: awk -v store=NAME -v want=N [-v also=python] -f check_rw.awk LOG
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
  printf "%s: %d sections (grelmicro %d reads %d writes, tenure CLI %d reads %d writes, python %d reads %d writes), at most %d readers at once, last write fence %d, %s\n", store, sections, reads["grelmicro"], writes["grelmicro"], reads["tenure"], writes["tenure"], reads["python"], writes["python"], most, last, bad ? "VIOLATIONS above" : "write fences strictly increasing, no writer beside anyone"
  if (sections != want) { print "expected " want " sections"; bad = 1 }
  if (!reads["grelmicro"] || !writes["grelmicro"] || !reads["tenure"] || !writes["tenure"]) { print "expected reads and writes from both"; bad = 1 }
  if (also != "" && (!reads[also] || !writes[also])) { print "expected reads and writes from " also; bad = 1 }
  if (most < 2) { print "readers never shared the lock"; bad = 1 }
  exit bad
}
