// jemalloc's settings for the programs that link it (the tensorwire command
// and tensorwire_bench: meson.build's malloc_dep compiles this file into
// each of them, never into a library). jemalloc reads `malloc_conf` once, when
// it starts; the MALLOC_CONF environment variable is read after it and wins
// (MALLOC_CONF=thp:default turns the setting below off for one run).
//
// thp:always: jemalloc asks the kernel for transparent huge pages (2 MiB)
// for its heap. A large simulated cluster's working set is hundreds of MiB
// touched a few bytes at a time (every channel's control ring, the protocol's
// tables, the queue pairs): in 4 KiB pages its events miss the TLB, and
// each first touch costs a page fault, which on a virtual machine is dear.
// Measured in docs/PERFORMANCE.md ("Huge pages for the heap"): the
// parameter server on 256 nodes 0.76x the wall time, 1024 nodes 0.85x,
// 8 nodes 0.79x, the model checker unchanged; peak memory 22 to 34% more.
// Where the kernel has transparent huge pages off, it changes nothing.

extern "C" {
// Read by jemalloc by this name (it declares the symbol; ours takes its place).
__attribute__((used, visibility("default"))) const char* malloc_conf = "thp:always";
}
