#!/usr/bin/env python3
"""How much user-space code run between two system calls slows the kernel's
work in the soft-RoCE test VM, against the same on the host.

Why this exists: in the VM (QEMU without KVM, TCG) tensorwire's ibv_post_send
calls take several times as long as perftest's for the same kernel work
(docs/PERFORMANCE.md). This isolates the suspected cause without RDMA: a
program times one loopback UDP sendto (a long kernel path, like rxe's send
path inside ibv_post_send) after calling N distinct small functions in user
space. On real hardware N changes nothing; under TCG every vCPU has a cache of
recently run translated code that the user-space code evicts, so the kernel
path after it runs slower.

    bench/vm_code_footprint.py                 # host, then the VM (scripts/with_rdma.sh)
    bench/vm_code_footprint.py --host-only

The program is generated and compiled on the host into build/bench-footprint/
(cc -O2); the VM runs the same binary. Each N runs once per round, three rounds;
prints the median over rounds of each run's median sendto time, and its ratio
to N = 0, for the host and the VM.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

FUNCTIONS = 6000
FOOTPRINTS = [0, 250, 1000, 3000, 6000]
ITERATIONS = 2000
ROUNDS = 3  # every N once per round, rounds one after the other; the median of the rounds

PROGRAM = r'''
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long (*fn)(unsigned long);
%(functions)s
static const fn fns[] = {%(table)s};

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* argv[1]: how many distinct functions to call before each sendto. */
int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: %%s N\n", argv[0]); return 2; }
  const int n = atoi(argv[1]);
  if (n < 0 || n > %(count)d) { fprintf(stderr, "N must be 0..%(count)d\n"); return 2; }
  const int s = socket(AF_INET, SOCK_DGRAM, 0), r = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof to;
  if (s < 0 || r < 0 || bind(r, (struct sockaddr*)&to, sizeof to) != 0 ||
      getsockname(r, (struct sockaddr*)&to, &len) != 0) {
    perror("socket/bind/getsockname");
    return 1;
  }
  char buf[64] = {0};
  double* took = malloc(sizeof(double) * %(iterations)d);
  unsigned long acc = 1;
  for (int i = 0; i < %(iterations)d; ++i) {
    for (int k = 0; k < n; ++k) acc = fns[k](acc);
    const double t0 = now_us();
    if (sendto(s, buf, 51, 0, (struct sockaddr*)&to, sizeof to) != 51) { perror("sendto"); return 1; }
    took[i] = now_us() - t0;
    if (recv(r, buf, sizeof buf, 0) < 0) { perror("recv"); return 1; }
  }
  qsort(took, %(iterations)d, sizeof(double), by_value);
  /* acc is printed so the calls cannot be optimized away. */
  printf("footprint %%d median_us %%.2f (acc %%lu)\n", n, took[%(iterations)d / 2], acc & 1);
  return 0;
}
'''


def build(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    source = os.path.join(out_dir, "footprint.c")
    binary = os.path.join(out_dir, "footprint")
    functions = "\n".join(
        f"__attribute__((noinline)) static unsigned long f{i}(unsigned long x) "
        f"{{ return x * {2 * i + 1}u ^ (x >> {i % 13 + 1}); }}" for i in range(FUNCTIONS))
    table = ", ".join(f"f{i}" for i in range(FUNCTIONS))
    with open(source, "w") as f:
        f.write(PROGRAM % {"functions": functions, "table": table, "count": FUNCTIONS,
                           "iterations": ITERATIONS})
    subprocess.run(["cc", "-O2", "-o", binary, source], check=True)
    return binary


def medians(text):
    rounds = {}
    for m in re.finditer(r"footprint (\d+) median_us ([0-9.]+)", text):
        rounds.setdefault(int(m.group(1)), []).append(float(m.group(2)))
    return {n: statistics.median(got) for n, got in rounds.items() if len(got) == ROUNDS}


def run_all(command_prefix, binary, root):
    script = " && ".join(f"{binary} {n}" for _ in range(ROUNDS) for n in FOOTPRINTS)
    done = subprocess.run(command_prefix + ["sh", "-c", script], capture_output=True, text=True,
                          cwd=root)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"{' '.join(command_prefix) or 'host'}: exited with {done.returncode}")
    return medians(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host-only", action="store_true", help="skip the VM")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = build(os.path.join(root, "build", "bench-footprint"))
    where = {"host": run_all([], binary, root)}
    if not args.host_only:
        where["VM (TCG)"] = run_all([os.path.join(root, "scripts", "with_rdma.sh")], binary, root)
    print("| functions run before each sendto | " +
          " | ".join(f"{w}: median (us) | {w}: / none" for w in where) + " |")
    print("| --- |" + " --- | --- |" * len(where))
    for n in FOOTPRINTS:
        cells = []
        for got in where.values():
            if n not in got or 0 not in got:
                raise SystemExit(f"no result for {n} functions")
            cells.append(f"{got[n]:.1f} | {got[n] / got[0]:.2f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
