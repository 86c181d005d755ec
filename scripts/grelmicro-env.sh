#!/usr/bin/env bash
# (A copy of shared/tools/grelmicro-env.sh, so that a clean clone can run the interop tests.)
# Builds a Python 3.14 virtual environment with the reference implementation, grelmicro 0.44, so
# tests can prove that Tenure and grelmicro coordinate on the same Redis / PostgreSQL / SQLite store.
# grelmicro 0.44 needs Python >= 3.14, which Debian 12 lacks: the interpreter is unpacked from
# Debian unstable's packages into a private root (nothing on the system changes).
# Usage: grelmicro-env.sh [DIR]   (default DIR: /tmp/grelmicro-env)  ->  DIR/venv/bin/python
set -euo pipefail
dir=${1:-/tmp/grelmicro-env}
py=$dir/venv/bin/python
if [ -x "$py" ] && "$py" -c 'import grelmicro' 2>/dev/null; then echo "$py"; exit 0; fi
command -v patchelf >/dev/null || { apt-get update -qq && apt-get install -y -qq patchelf >/dev/null; }
apt=$dir/apt debs=$dir/debs root=$dir/py314root
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/state" "$debs" "$root"
touch "$apt/state/status"
echo 'deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main' > "$apt/sources.list"
o=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$apt/lists"
   -o Dir::Cache="$apt/cache" -o Dir::State::status="$apt/state/status" -o APT::Architecture=amd64 -o APT::Architectures=amd64)
apt-get "${o[@]}" -qq update
(cd "$debs" && apt-get "${o[@]}" -qq download python3.14-minimal libpython3.14-minimal libpython3.14-stdlib python3.14 \
  python3.14-venv libc6 libssl3t64 libexpat1 zlib1g libffi8 libsqlite3-0 libzstd1 liblzma5 libbz2-1.0 libuuid1 \
  libncursesw6 libtinfo6 libreadline8t64 libdb5.3t64 libgcc-s1 libstdc++6 python3-pip-whl)
for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$root"; done
patchelf --set-interpreter "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --force-rpath \
  --set-rpath "$root/usr/lib/x86_64-linux-gnu" "$root/usr/bin/python3.14"
"$root/usr/bin/python3.14" -m venv --without-pip "$dir/venv"
"$py" "$(ls "$root"/usr/share/python-wheels/pip-*.whl)/pip" install -q pip
"$dir/venv/bin/pip" install -q "grelmicro[redis,postgres,sqlite]==0.44.0"
echo "$py"
