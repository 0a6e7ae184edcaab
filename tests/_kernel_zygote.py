"""The kernel zygote: a process that imports what every notebook kernel imports (the IPython kernel, the `anthropic`
SDK, numpy, pymongo) once, then forks one notebook kernel per request (tests/_forked_kernels.py sends them).

A kernel started by `python -m ipykernel_launcher` spends about three seconds on this machine on those imports
before its first cell runs (the SDK's 2,900 modules alone take two): across the fast set's 14 notebooks, about 40 s
of a worker's time. A forked kernel starts with those modules already imported (copy-on-write) and then runs
exactly what `ipykernel_launcher` runs, in the notebook's directory, with the environment jupyter_client built: a new
process, a fresh namespace, every cell executed, its own random state. What it shares with its siblings is the
imported third-party code and Python's string-hash seed (one per zygote, so per worker and run, where a started
kernel draws its own), and nothing of `helpers`: the zygote never imports it, so each kernel imports the package
under test itself.

Run as `python tests/_kernel_zygote.py SOCKET [MODULE,MODULE...]` (the modules replace PRELOAD). Protocol, on the
Unix socket: one JSON line {"argv", "cwd", "env"} in, one JSON line {"pid"} (or {"error"}) out. The
zygote exits when its stdin closes (the pytest worker that started it ended) and prints "ready" once imported.
Not a module of the package: a test-run speed-up, switched off with GTE_FORKED_KERNELS=0.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

# What every kernel imports before or in its first cell; none starts a thread or opens a socket at import.
PRELOAD = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.interactiveshell",
    "anthropic",
    "httpx",
    "numpy",
    "pymongo",
)


def preload(names: tuple[str, ...] = PRELOAD) -> None:
    import importlib

    for name in names:
        importlib.import_module(name)


def become_kernel(argv: list[str], cwd: str, env: dict[str, str]) -> None:
    """In the forked child: do what a fresh `python -m ipykernel_launcher -f FILE` would, then exit."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the zygote reaps its children; a kernel waits for its own
        os.setsid()  # its own process group, as jupyter_client starts kernels (interrupts signal the group)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        zygote = os.getppid()
        os.environ["JPY_PARENT_PID"] = str(zygote)
        import random

        random.seed()  # each kernel draws its own random state, as a freshly started one does
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        launcher = argv.index("ipykernel_launcher")
        import ipykernel_launcher

        # The kernel ends when the zygote does. Said on the command line: the app read JPY_PARENT_PID for its default
        # when the zygote imported it, before this kernel's environment existed.
        sys.argv = [ipykernel_launcher.__file__, *argv[launcher + 1 :], f"--IPKernelApp.parent_handle={zygote}"]
        del sys.path[0]  # the zygote's script dir; the kernel puts the notebook's dir ("") back, as the launcher does
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 (the child must never return into the zygote's loop)
        code = 1
    os._exit(code)


def parse(line: str) -> tuple[list[str], str, dict[str, str]]:
    """A request's command line, directory and environment, checked before anything is forked."""
    request = json.loads(line)
    argv, cwd, env = request["argv"], request["cwd"], request["env"]
    if not (isinstance(argv, list) and "ipykernel_launcher" in argv and all(isinstance(a, str) for a in argv)):
        raise ValueError("argv must be a kernel's command line (... -m ipykernel_launcher -f FILE)")
    if not (isinstance(cwd, str) and os.path.isdir(cwd)):
        raise ValueError(f"cwd must be a directory: {cwd!r}")
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise ValueError("env must map names to strings")
    return argv, cwd, env


def serve(path: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the operating system reaps the children: no zombies
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while True:
        readable, _, _ = select.select([listener, stdin], [], [])
        if stdin in readable and not os.read(stdin, 1024):
            return  # the worker ended
        if listener in readable:
            conn, _ = listener.accept()
            with conn:
                try:
                    argv, cwd, env = parse(conn.makefile("r").readline())
                except (ValueError, KeyError, TypeError) as bad:
                    conn.sendall((json.dumps({"error": f"bad request: {bad}"}) + "\n").encode())
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    become_kernel(argv, cwd, env)
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())


if __name__ == "__main__":
    preload(tuple(filter(None, sys.argv[2].split(","))) if len(sys.argv) > 2 else PRELOAD)  # "" preloads nothing
    try:
        serve(sys.argv[1])
    finally:
        try:
            os.unlink(sys.argv[1])
        except OSError:
            pass
