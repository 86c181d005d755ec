#!/usr/bin/env bash
# Builds one portable wheel of the pip package `tenure` with maturin and zig (no container), and
# checks its platform tag with auditwheel. The one place wheels are built: scripts/test.sh tests
# the manylinux2014 x86_64 one, scripts/release.sh builds them all.
# Usage: scripts/wheel.sh PLATFORM OUT_DIR, where PLATFORM is one of
#   manylinux2014-x86_64   glibc >= 2.17 (RHEL/CentOS 7+, Amazon Linux 2, Debian 9+, Ubuntu 16.04+)
#   manylinux2014-aarch64  the same on 64-bit ARM
#   musllinux_1_2-x86_64   musl >= 1.2 (Alpine 3.13+)
#   sdist                  the source distribution (pip builds it where no wheel fits)
# Tools come from PyPI (scripts/zig-env.sh), the Rust target from rustup. Prints the artifact's
# path last.
set -euo pipefail
cd "$(dirname "$0")/.."
platform=${1:?usage: scripts/wheel.sh PLATFORM OUT_DIR}
out=${2:?usage: scripts/wheel.sh PLATFORM OUT_DIR}

. scripts/zig-env.sh
manifest=bindings/python/Cargo.toml
mkdir -p "$out"

case $platform in
  manylinux2014-x86_64) target=x86_64-unknown-linux-gnu compat=manylinux2014 tag=manylinux_2_17_x86_64 ;;
  manylinux2014-aarch64) target=aarch64-unknown-linux-gnu compat=manylinux2014 tag=manylinux_2_17_aarch64 ;;
  musllinux_1_2-x86_64) target=x86_64-unknown-linux-musl compat=musllinux_1_2 tag=musllinux_1_2_x86_64 ;;
  sdist)
    rm -f "$out"/tenure-*.tar.gz
    maturin sdist -m "$manifest" -o "$out" >&2
    ls "$out"/tenure-*.tar.gz
    exit 0
    ;;
  *)
    echo "scripts/wheel.sh: unknown platform '$platform' (manylinux2014-x86_64, manylinux2014-aarch64, musllinux_1_2-x86_64, sdist)" >&2
    exit 2
    ;;
esac

zig_target "$target"
[ "$compat" != manylinux2014 ] || zig_linker "$target" 2.17 # (the addon's: scripts/addon.sh)
rm -f "$out"/tenure-*"$tag"*.whl
maturin build -q --release --zig --target "$target" --compatibility "$compat" -m "$manifest" -o "$out" >&2
wheel=$(ls "$out"/tenure-*"$tag"*.whl)
if [ "$compat" = musllinux_1_2 ]; then
  # zig's musl names the C library `libc.so`; musl's own toolchain, as on Alpine, names it by its
  # soname, libc.musl-x86_64.so.1, the name auditwheel's musllinux policy allows. musl's loader
  # takes either as itself; the name is set to the soname so that the wheel is what auditwheel
  # (and a reader of its ELF file) expects.
  unpacked=$(mktemp -d)
  wheel unpack -d "$unpacked" "$wheel" > /dev/null
  for library in "$unpacked"/*/tenure/*.so; do
    patchelf --replace-needed libc.so libc.musl-x86_64.so.1 "$library"
  done
  rm "$wheel"
  wheel pack -d "$out" "$unpacked"/* > /dev/null
  rm -rf "$unpacked"
  wheel=$(ls "$out"/tenure-*"$tag"*.whl)
fi
# auditwheel reads the wheel's ELF file: the symbols it needs must fit the tag it carries.
shown=$(auditwheel show "$wheel")
if ! grep -q "\"$tag\"" <<< "$shown"; then
  echo "$shown" >&2
  echo "scripts/wheel.sh: auditwheel does not find $wheel consistent with $tag" >&2
  exit 1
fi
echo "$wheel"
