#!/usr/bin/env bash
# The npm package as users get it: builds the addon, packs the tarball, installs it into a fresh
# directory and runs the suite there (node's test runner, every store), type-checks a TypeScript
# file written against the installed types with `tsc --strict`, and loads the package through
# both `require` and `import`. Prints the directory holding the installed node_modules last.
# Usage: scripts/test-node.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
command -v node > /dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null; }
node --version

cd bindings/node
npm ci --no-audit --no-fund --loglevel=error
# The debug profile shares the workspace's test build; `npm run build` makes the release addon.
npx napi build --platform --output-dir native --js binding.js --dts binding.d.ts > /dev/null
mkdir -p "$root/target/node"
rm -f "$root"/target/node/tenure-*.tgz
tarball=$(npm pack --silent --pack-destination "$root/target/node")
cd "$root"

install=target/node/install
rm -rf "$install"
mkdir -p "$install"
cp -r bindings/node/test "$install/test"
(cd "$install" && echo '{"private": true, "type": "module"}' > package.json \
  && npm install --no-audit --no-fund --loglevel=error "../$tarball")
echo "installed $(du -h "target/node/$tarball" | cut -f1) tarball: $(tar -tzf "target/node/$tarball" | tr '\n' ' ')"

(cd "$install" && node -e "require('tenure').memoryBackend()" \
  && node --input-type=module -e "import { Lock, memoryBackend } from 'tenure'; new Lock('x', memoryBackend());")
(cd "$install/test" && "$root/bindings/node/node_modules/.bin/tsc" -p tsconfig.json)
(cd "$install" && node --test test/*.test.mjs)
# The README's Node quick start, run as a user would paste it.
awk '/^```js$/{p=1;next} /^```$/{p=0} p' README.md > "$install/readme_quickstart.cjs"
(cd "$install" && node readme_quickstart.cjs)
rm -f /tmp/tenure-quickstart-node.db*

# What the suite left on the machine's stores.
scripts/clean-stores.sh 'tenure-node_*' node
echo "$root/$install/node_modules"
