#!/bin/sh
# test-arm.sh - the aarch64 proof behind `make test-arm`: installs a cross
# compiler and qemu-user with apt-get if they are missing, builds the library
# and the test suite for aarch64 into build-arm/ (the generic, NEON class
# only), and runs the suite under qemu-aarch64. The tuning database needs
# SQLite for arm64 too: libsqlite3-dev:arm64, a multiarch package, so dpkg
# is first told of the arm64 architecture (Debian's mirrors carry it;
# Ubuntu's arm64 packages live on ports.ubuntu.com). Emulation says whether
# the results are right, not how fast they come: timings there mean nothing.
# Arguments are suite names, as for build/tessel_tests.
set -eu
cd "$(dirname "$0")/.."

CROSS_CC=aarch64-linux-gnu-gcc
SYSROOT=/usr/aarch64-linux-gnu
ARM_LIBDIR=/usr/lib/aarch64-linux-gnu
MAKE=${MAKE:-make}

find_qemu() {
    for q in qemu-aarch64 qemu-aarch64-static; do
        if command -v "$q" >/dev/null 2>&1; then
            echo "$q"
            return
        fi
    done
}

missing=
command -v "$CROSS_CC" >/dev/null 2>&1 || missing="$missing gcc-aarch64-linux-gnu"
[ -f "$SYSROOT/include/stdio.h" ] || missing="$missing libc6-dev-arm64-cross"
[ -n "$(find_qemu)" ] || missing="$missing qemu-user-static"
[ -f "$ARM_LIBDIR/libsqlite3.so" ] || missing="$missing libsqlite3-dev:arm64"
if [ -n "$missing" ]; then
    echo "test-arm: installing$missing"
    sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    case "$missing" in
    *:arm64*)
        dpkg --print-foreign-architectures | grep -qx arm64 ||
            $sudo dpkg --add-architecture arm64
        ;;
    esac
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi
QEMU=$(find_qemu)

$MAKE CC="$CROSS_CC" BUILD=build-arm build-arm/tessel_tests
# The binary runs on the arm64 multiarch runtime, libc6:arm64, which
# libsqlite3-0:arm64 brings: qemu finds its loader, libc and libsqlite3 at
# their own paths, all of one glibc build. The cross sysroot is for
# building only: with QEMU_LD_PREFIX pointing there, its loader found the
# multiarch libc first (/lib/aarch64-linux-gnu comes before /lib), and
# that mix of two glibc builds hung in pthread_create and fork.
# TESSEL_TEST_EMULATED tells the suite that timings describe the emulator
# (test_hw then only checks that the measurement ran).
unset QEMU_LD_PREFIX
export TESSEL_TEST_EMULATED=1
exec "$QEMU" build-arm/tessel_tests "$@"
