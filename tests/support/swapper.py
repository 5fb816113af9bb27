#!/usr/bin/env python3
"""Swaps two paths atomically, over and over, for the fs sandbox's race tests.

    swapper.py A B [C D ...]
                          exchange A and B (and C and D, ...) with renameat2(RENAME_EXCHANGE)
                          in a tight loop, pair after pair, on one core; prints "ready" after
                          the first exchange of every pair, and when stdin closes (or after
                          60 s, a leak guard) prints "swaps <n>" and exits 0
    swapper.py --probe D  creates D/a (a file) and D/b (a symlink), exchanges them once,
                          prints "ok" and exits 0, or prints what is missing and exits 3

Either name may be a file, a directory or a symlink: RENAME_EXCHANGE swaps the two
directory entries in one step, so at every instant each name exists, as one or the other.
Exit code 3 with a reason on stderr: renameat2 (or RENAME_EXCHANGE on this file system)
is not available.
"""
import ctypes
import os
import platform
import sys
import threading
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2
# renameat2's syscall number, for a libc without the wrapper (glibc < 2.28, some musl).
SYSCALL_NUMBERS = {'x86_64': 316, 'aarch64': 276, 'riscv64': 276, 'i386': 353, 'i686': 353, 'armv7l': 382, 'ppc64le': 357, 's390x': 347}


def exchanger():
    libc = ctypes.CDLL(None, use_errno=True)
    wrapper = getattr(libc, 'renameat2', None)
    if wrapper is not None:
        wrapper.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        wrapper.restype = ctypes.c_int
        call = lambda a, b: wrapper(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    else:
        number = SYSCALL_NUMBERS.get(platform.machine())
        if number is None:
            return None, 'renameat2: no libc wrapper and no known syscall number for ' + platform.machine()
        libc.syscall.restype = ctypes.c_long
        call = lambda a, b: libc.syscall(ctypes.c_long(number), ctypes.c_int(AT_FDCWD), ctypes.c_char_p(a), ctypes.c_int(AT_FDCWD), ctypes.c_char_p(b), ctypes.c_uint(RENAME_EXCHANGE))

    def exchange(a, b):
        if call(a, b) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno))

    return exchange, None


def unsupported(reason):
    print('renameat2(RENAME_EXCHANGE) unavailable: ' + reason, file=sys.stderr, flush=True)
    sys.exit(3)


def main(argv):
    if sys.platform != 'linux':
        unsupported('not Linux (' + sys.platform + ')')
    exchange, why = exchanger()
    if exchange is None:
        unsupported(why)
    if len(argv) == 3 and argv[1] == '--probe':
        a, b = os.path.join(argv[2], 'a'), os.path.join(argv[2], 'b')
        with open(a, 'w') as file:
            file.write('a')
        os.symlink(a, b)
        try:
            exchange(os.fsencode(a), os.fsencode(b))
        except OSError as error:
            unsupported('renameat2 failed: ' + str(error))
        print('ok', flush=True)
        return
    if len(argv) < 3 or len(argv) % 2 != 1:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    pairs = [(os.fsencode(argv[i]), os.fsencode(argv[i + 1])) for i in range(1, len(argv), 2)]
    for a, b in pairs:
        try:
            exchange(a, b)
        except OSError as error:
            unsupported('renameat2 failed: ' + str(error))
    swaps = len(pairs)
    print('ready', flush=True)
    stop = threading.Event()

    def wait_for_stdin():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_stdin, daemon=True).start()
    deadline = time.monotonic() + 60
    while not stop.is_set():
        for a, b in pairs:
            for _ in range(128):
                exchange(a, b)
            swaps += 128
        if time.monotonic() > deadline:
            break
    print('swaps %d' % swaps, flush=True)


if __name__ == '__main__':
    main(sys.argv)
