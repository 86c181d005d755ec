#!/usr/bin/env bash
# The npm package as users get it: builds the portable addon in its platform package and packs the
# package `tenure` (scripts/addon.sh), installs both tarballs into a fresh directory and runs the suite there (node's test runner, every store), type-checks a TypeScript
# file written against the installed types with `tsc --strict`, and loads the package through
# both `require` and `import`. Prints the directory holding the installed node_modules last.
# --install builds, packs and installs only (what the interop stage needs when it runs alone);
# --test runs the suite on what an earlier --install printed (scripts/test.sh builds while other
# tests run).
# Usage: scripts/test-node.sh [--install | --test NODE_MODULES]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
command -v node > /dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null; }
node --version
install=target/node/install

# The artifacts users install: the portable linux-x64-gnu addon (glibc >= 2.17, release) in its
# platform package, and the package `tenure` naming it as an optional dependency; installed into
# a fresh directory.
install_packages() {
  rm -f target/node/tenure-*.tgz
  local addon tarball packed
  addon=$(scripts/addon.sh linux-x64-gnu target/node | tail -1)
  tarball=$(scripts/addon.sh main target/node | tail -1)
  rm -rf "$install"
  mkdir -p "$install"
  cp -r bindings/node/test "$install/test"
  (cd "$install" && echo '{"private": true, "type": "module"}' > package.json \
    && npm install --no-audit --no-fund --loglevel=error "$tarball" "$addon" \
      @opentelemetry/api@1.9.1 @opentelemetry/sdk-metrics@2.12.1 @opentelemetry/sdk-trace-base@2.12.1)
  # The addon comes from its platform package, not from the main one.
  [ -f "$install/node_modules/tenure-linux-x64-gnu/tenure.linux-x64-gnu.node" ]
  if tar -tzf "$tarball" | grep '\.node$'; then echo "the package tenure carries an addon of its own" >&2; exit 1; fi
  for packed in "$tarball" "$addon"; do
    echo "installed $(basename "$packed") ($(du -h "$packed" | cut -f1)): $(tar -tzf "$packed" | tr '\n' ' ')"
  done
}

case $mode in
  --install)
    install_packages
    echo "$root/$install/node_modules"
    exit 0
    ;;
  --test)
    [ "${2:-}" = "$root/$install/node_modules" ] \
      || { echo "scripts/test-node.sh: --test takes $root/$install/node_modules (what --install printed)" >&2; exit 2; }
    [ -d "$install/node_modules/tenure" ] || { echo "scripts/test-node.sh: nothing installed in $install" >&2; exit 2; }
    ;;
  all) install_packages ;;
  *) sed -n 2,11p "$0" >&2; exit 2 ;;
esac
(cd "$install" && node -e "require('tenure').memoryBackend()" \
  && node --input-type=module -e "import { Lock, memoryBackend } from 'tenure'; new Lock('x', memoryBackend());")
(cd "$install/test" && "$root/bindings/node/node_modules/.bin/tsc" -p tsconfig.json)
(cd "$install" && node --test test/*.test.mjs)
# The README's Node example, run as a user would paste it.
scripts/readme-example.sh js > "$install/readme_quickstart.cjs"
(cd "$install" && node readme_quickstart.cjs)
rm -f /tmp/tenure-quickstart-node.db*

# What the suite left on the machine's stores.
scripts/clean-stores.sh 'tenure-node_*' node
echo "$root/$install/node_modules"
