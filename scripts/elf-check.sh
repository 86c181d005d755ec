#!/usr/bin/env bash
# Checks that a built library or executable is what its package says: the ELF machine, and no
# glibc symbol version newer than 2.17 (gnu), or no glibc at all (musl). Used where auditwheel
# does not look: the npm addons (scripts/addon.sh) and the jar's libraries (scripts/kotlin-build.sh).
# Usage: scripts/elf-check.sh FILE x86_64|aarch64 gnu|musl
set -euo pipefail
file=${1:?usage: scripts/elf-check.sh FILE ARCH LIBC}
arch=${2:?usage: scripts/elf-check.sh FILE ARCH LIBC}
libc=${3:?usage: scripts/elf-check.sh FILE ARCH LIBC}
case $arch in
  x86_64) machine='X86-64' ;;
  aarch64) machine='AArch64' ;;
  *) echo "scripts/elf-check.sh: unknown arch '$arch' (x86_64, aarch64)" >&2; exit 2 ;;
esac
readelf -h "$file" | grep -q "Machine:.*$machine" || { echo "scripts/elf-check.sh: $file is not for $arch" >&2; exit 1; }
newest=$( (readelf -V "$file" | grep -o 'GLIBC_[0-9.]*' || true) | sed 's/GLIBC_//' | sort -uV | tail -1)
case $libc in
  gnu)
    if [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -1)" != 2.17 ]; then
      echo "scripts/elf-check.sh: $file needs glibc $newest, newer than 2.17" >&2
      exit 1
    fi
    ;;
  musl)
    [ -z "$newest" ] || { echo "scripts/elf-check.sh: $file, built for musl, needs glibc $newest" >&2; exit 1; }
    ;;
  *) echo "scripts/elf-check.sh: unknown libc '$libc' (gnu, musl)" >&2; exit 2 ;;
esac
