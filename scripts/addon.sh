#!/usr/bin/env bash
# Packs the npm package as users install it: napi's per-platform layout, where `tenure` names a
# package per platform as an optional dependency and npm installs the one whose os, cpu and libc
# fit. The one place the npm artifacts are built: scripts/test-node.sh tests linux-x64-gnu and
# main, scripts/release.sh packs them all.
# Usage: scripts/addon.sh PLATFORM OUT_DIR, where PLATFORM is one of
#   linux-x64-gnu    the addon for glibc >= 2.17 on x86_64, built with zig (no container)
#   linux-x64-musl   the addon for musl (Alpine) on x86_64
#   linux-arm64-gnu  the addon for glibc >= 2.17 on 64-bit ARM
#   main             the package `tenure` (lib/, the generated loader and types), its
#                    optionalDependencies naming every platform package at its own version;
#                    needs one platform built first (for native/binding.js and binding.d.ts)
# Prints the tarball's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
platform=${1:?usage: scripts/addon.sh PLATFORM OUT_DIR}
out=${2:?usage: scripts/addon.sh PLATFORM OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
node_dir=bindings/node
command -v node > /dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null; }
[ -x "$node_dir/node_modules/.bin/napi" ] || (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)

# npm pack, printing the tarball's path.
pack() {
  echo "$out/$(cd "$1" && npm pack --silent --pack-destination "$out")"
}

if [ "$platform" = main ]; then
  for generated in binding.js binding.d.ts; do
    [ -f "$node_dir/native/$generated" ] \
      || { echo "scripts/addon.sh: build a platform first (native/$generated is made by its build)" >&2; exit 1; }
  done
  stage=target/node/stage-main
  rm -rf "$stage"
  mkdir -p "$stage/native"
  cp -r "$node_dir/lib" "$node_dir/package.json" "$stage/"
  cp "$node_dir/native/binding.js" "$node_dir/native/binding.d.ts" "$stage/native/"
  # As napi's prepublish does: the platform packages become optional dependencies at publish
  # time only (in the repository they would keep `npm ci` from finding them).
  node - "$stage/package.json" "$node_dir/npm" << 'EOF'
const fs = require('fs');
const path = require('path');
const [manifest, platforms] = process.argv.slice(2);
const main = JSON.parse(fs.readFileSync(manifest, 'utf8'));
main.optionalDependencies = {};
for (const dir of fs.readdirSync(platforms).sort()) {
  const platform = JSON.parse(fs.readFileSync(path.join(platforms, dir, 'package.json'), 'utf8'));
  if (platform.version !== main.version) {
    throw new Error(`${platform.name} is at ${platform.version}, tenure at ${main.version}: they must match`);
  }
  main.optionalDependencies[platform.name] = platform.version;
}
fs.writeFileSync(manifest, JSON.stringify(main, null, 2) + '\n');
EOF
  pack "$stage"
  exit 0
fi

case $platform in
  linux-x64-gnu) target=x86_64-unknown-linux-gnu.2.17 arch=x86_64 libc=gnu ;;
  linux-x64-musl) target=x86_64-unknown-linux-musl arch=x86_64 libc=musl ;;
  linux-arm64-gnu) target=aarch64-unknown-linux-gnu.2.17 arch=aarch64 libc=gnu ;;
  *)
    echo "scripts/addon.sh: unknown platform '$platform' (linux-x64-gnu, linux-x64-musl, linux-arm64-gnu, main)" >&2
    exit 2
    ;;
esac
. scripts/zig-env.sh
zig_target "${target%%.*}"
[ "$libc" != gnu ] || zig_linker "${target%%.*}" "${target#*.}" # (the wheel's: scripts/wheel.sh)
stage=target/node/stage-$platform
rm -rf "$stage"
mkdir -p "$stage/package"
(cd "$node_dir" && npx napi build --platform --release --cross-compile --target "$target" \
  --output-dir "$root/$stage" --js binding.js --dts binding.d.ts > /dev/null)
mkdir -p "$node_dir/native"
cp "$stage/binding.js" "$stage/binding.d.ts" "$node_dir/native/"
addon=$stage/package/tenure.$platform.node
mv "$stage/tenure.$platform.node" "$addon"
cp "$node_dir/npm/$platform/package.json" "$stage/package/"

# The addon must be what its package says: the machine, and no glibc newer than 2.17 (or none).
scripts/elf-check.sh "$addon" "$arch" "$libc"
pack "$stage/package"
