#!/usr/bin/env bash
# Builds every artifact of a release into one folder and prints each one's name, size and
# platform tag:
#   - the crates for crates.io (`cargo publish --dry-run` of the public crates first, and every
#     package checked as packed, together, each resolving the others to their packed sources);
#   - the pip package's wheels (manylinux2014 x86_64 and aarch64, musllinux_1_2 x86_64) and its
#     sdist (scripts/wheel.sh);
#   - the npm package `tenure` and its platform packages (linux-x64-gnu, linux-x64-musl,
#     linux-arm64-gnu; scripts/addon.sh);
#   - the JVM package's jar (linux-x86-64 and linux-aarch64, glibc >= 2.17; scripts/kotlin-build.sh);
#   - the `tenure` command, static (musl) for x86_64 and aarch64;
# then runs what this machine cannot run natively (scripts/smoke-platforms.sh).
# Nothing is published: the folder is what a maintainer uploads.
#
# --dry-run (what CI runs) checks what a release checks and builds no cross-compiled artifact:
# the versions agree, the changelog has a section for them, `cargo publish --dry-run` passes, the
# sdist is built and its sources resolve and compile; the artifacts scripts/test.sh built and
# tested (the manylinux2014 x86_64 wheel, the linux-x64-gnu npm packages, the jar) are collected
# if present; the others are listed with the command that builds them.
# Usage: scripts/release.sh [--dry-run] [OUT_DIR]   (OUT_DIR: target/release-artifacts)
set -euo pipefail
cd "$(dirname "$0")/.."
dry=false
[ "${1:-}" = --dry-run ] && { dry=true; shift; }
out=${1:-target/release-artifacts}
rm -rf "$out"
mkdir -p "$out"

step() { printf '\n--> %s\n' "$*" >&2; }
fail() { echo "scripts/release.sh: $*" >&2; exit 1; }

step "one version everywhere"
version=$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
versions = {p["name"]: p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] != "tenure-fuzz"}
if len(set(versions.values())) != 1:
    sys.exit(f"the crates disagree on their version: {versions}")
print(versions["tenure"])')
for manifest in bindings/node/package.json bindings/node/npm/*/package.json; do
  found=$(node -p "require('./$manifest').version")
  [ "$found" = "$version" ] || fail "$manifest is at $found, the workspace at $version"
done
grep -q '^dynamic = \["version"\]' bindings/python/pyproject.toml || fail "pyproject.toml must take its version from Cargo.toml"
grep -Eq "^## \[($version|Unreleased)\]" CHANGELOG.md || fail "CHANGELOG.md has no section for $version"
echo "$version" >&2

step "crates: cargo publish --dry-run of every public crate, and its packages compiled together"
publishable=$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
print(" ".join(p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))')
# (Named, not --workspace: a private crate that needs another private one, as tests/jepsen needs
# tests/conformance, cannot be prepared for a registry, and need not be.)
packages=()
for crate in $publishable; do packages+=(-p "$crate"); done
# The dry run checks what a registry would refuse; cargo's own verification (each package built
# alone, the others' builds again each time: minutes) is replaced by one check of every package
# as packed, together, against each other's packed sources (what a user's build resolves): a
# file a package needs and does not carry fails it as it would fail cargo's.
cargo publish --dry-run --no-verify --locked "${packages[@]}" >&2
cargo package -q --no-verify --locked "${packages[@]}" >&2
verify=target/package-check
rm -rf "$verify"
mkdir -p "$verify"
{
  echo '[workspace]'
  echo 'resolver = "3"'
  printf 'members = ['
  for crate in $publishable; do printf '"%s-%s", ' "$crate" "$version"; done
  echo ']'
  echo '[patch.crates-io]'
  for crate in $publishable; do echo "$crate = { path = \"$crate-$version\" }"; done
} > "$verify/Cargo.toml"
for crate in $publishable; do
  tar -xzf "target/package/$crate-$version.crate" -C "$verify"
  cp "target/package/$crate-$version.crate" "$out/"
done
# (The workspace's lock file, so that nothing resolves to another version; --offline: as the
# sdist's check below.)
cp Cargo.lock "$verify/"
(cd "$verify" && CARGO_TARGET_DIR=$OLDPWD/target cargo check -q --offline --workspace) >&2

step "the sdist: built, and its sources resolve and compile on their own"
sdist=$(scripts/wheel.sh sdist "$out" | tail -1)
unpacked=target/sdist-check
rm -rf "$unpacked"
mkdir -p "$unpacked"
tar -xzf "$sdist" -C "$unpacked"
# (--offline, not --locked: the sdist holds fewer crates than the workspace, so cargo prunes its
# lock file, as it does when pip builds it; no version can change.)
(cd "$unpacked"/tenure-"$version" && CARGO_TARGET_DIR=$OLDPWD/target cargo check -q --offline \
  --manifest-path "$(python3 -c 'import sys, tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["tool"]["maturin"]["manifest-path"])')") >&2

wheels=(manylinux2014-x86_64 manylinux2014-aarch64 musllinux_1_2-x86_64)
addons=(linux-x64-gnu linux-x64-musl linux-arm64-gnu)
clis=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
if $dry; then
  step "collected from scripts/test.sh, where present"
  cp target/wheels/tenure-"$version"-*manylinux*x86_64*.whl target/node/tenure-"$version".tgz \
    target/node/tenure-linux-x64-gnu-"$version".tgz "$out/" 2> /dev/null || true
  [ -f target/kotlin/debug/tenure.jar ] && cp target/kotlin/debug/tenure.jar "$out/tenure-$version.jar"
  step "a full run also builds"
  for platform in "${wheels[@]}"; do echo "  scripts/wheel.sh $platform $out" >&2; done
  for platform in "${addons[@]}" main; do echo "  scripts/addon.sh $platform $out" >&2; done
  echo "  scripts/kotlin-build.sh portable" >&2
  for target in "${clis[@]}"; do echo "  cargo zigbuild --release -p tenure-cli --target $target" >&2; done
else
  step "wheels"
  for platform in "${wheels[@]}"; do scripts/wheel.sh "$platform" "$out" > /dev/null; done
  step "npm packages"
  for platform in "${addons[@]}" main; do scripts/addon.sh "$platform" "$out" > /dev/null; done
  step "the JVM package"
  scripts/kotlin-build.sh portable > /dev/null
  cp target/kotlin/portable/tenure.jar "$out/tenure-$version.jar"
  step "the tenure command"
  . scripts/zig-env.sh
  for target in "${clis[@]}"; do
    zig_target "$target"
    cargo zigbuild -q --release --locked -p tenure-cli --target "$target" >&2
    exe=target/$target/release/tenure
    scripts/elf-check.sh "$exe" "${target%%-*}" musl
    tar -czf "$out/tenure-$version-$target.tar.gz" -C "target/$target/release" tenure
  done
  # The static x86_64 command runs here whatever the libc: the main job on a fresh state folder.
  state=$(mktemp -d)
  "target/${clis[0]}/release/tenure" --version >&2
  XDG_STATE_HOME=$state "target/${clis[0]}/release/tenure" demo --workers 2 >&2
  rm -rf "$state"
  step "the aarch64 and musl artifacts, run under qemu and on a musl CPython"
  scripts/smoke-platforms.sh "$out" >&2
fi

step "artifacts in $out"
for artifact in "$out"/*; do
  name=$(basename "$artifact")
  case $name in
    *.crate) tag="crates.io" ;;
    *.whl) tag=$(cut -d- -f3- <<< "${name%.whl}") ;;
    *.tar.gz) [[ $name == tenure-"$version".tar.gz ]] && tag="sdist (any platform, builds with a Rust toolchain)" \
      || tag="static executable, $(sed -e "s/^tenure-$version-//" -e 's/.tar.gz$//' <<< "$name")" ;;
    *.tgz) tag=$(tar -xzOf "$artifact" package/package.json | node -e '
      const p = JSON.parse(require("fs").readFileSync(0));
      console.log(p.os ? `npm, ${p.os}-${p.cpu}-${p.libc}` : `npm, loads its platform package (${Object.keys(p.optionalDependencies).length} platforms)`)') ;;
    *.jar) tag="JVM, native library for $(python3 -c 'import sys, zipfile; print(" ".join(sorted({n.split("/")[0] for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".so")})))' "$artifact")" ;;
    *) tag="" ;;
  esac
  printf '%-62s %8s  %s\n' "$name" "$(du -h "$artifact" | cut -f1)" "$tag"
done
