# Sourced by the scripts that install tools (scripts/zig-env.sh, scripts/kotlin-build.sh and the
# scripts that run what it builds): where they keep them. Outside target/, so that a clean clone
# or `cargo clean` finds them again, as cargo keeps its registry: $TENURE_TOOLS, else
# ~/.cache/tenure. Each tool's folder names its version; delete the folder to install it again.
tools_dir=${TENURE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tenure}
kotlin_version=2.4.20
kotlin_home=${KOTLIN_HOME:-$tools_dir/kotlin-compiler-$kotlin_version/package}
