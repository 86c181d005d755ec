#!/usr/bin/env bash
# Prints the README's example for LANG: the one fenced block whose info string is LANG (bash for
# the CLI, rust, python, js, kotlin, java). The test command runs each as a user would paste it;
# a README with no such block, or with two, fails here rather than testing the wrong one.
# Usage: scripts/readme-example.sh LANG [README]
set -euo pipefail
lang=${1:?usage: scripts/readme-example.sh LANG [README]}
readme=${2:-$(dirname "$0")/../README.md}
count=$(grep -c "^\`\`\`$lang\$" "$readme" || true)
[ "$count" = 1 ] || { echo "scripts/readme-example.sh: $readme has $count \`\`\`$lang blocks; the test command runs exactly one" >&2; exit 1; }
awk -v fence="\`\`\`$lang" '$0 == fence { p = 1; next } /^```$/ { p = 0 } p' "$readme"
