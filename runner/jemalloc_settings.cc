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
//
// tcache_nslots_small_max:2000, lg_tcache_nslots_mul:3,
// tcache_gc_incr_bytes:1048576: each thread's cache of freed small objects
// holds up to 8 slabs' worth of a size class (2000 at most, where the
// defaults are 2 slabs and 200) and is trimmed after every MiB allocated
// (64 KiB by default). A simulation frees about four objects per event
// (closures, protocol records, DMA index nodes); with the default bins, about
// one free in a hundred found its bin full and flushed half of it to the
// arena, some 5,000 instructions each: 4.5 % of a 64-node parameter server's
// instructions. Measured in docs/PERFORMANCE.md ("jemalloc's thread cache"):
// 0.965x the instructions of that run, the 256-node one's wall time 0.96x
// (median of six pairs), peak memory unchanged, the model checker 0.996x.

extern "C" {
// Read by jemalloc by this name (it declares the symbol; ours takes its place).
__attribute__((used, visibility("default"))) const char* malloc_conf =
    "thp:always,tcache_nslots_small_max:2000,lg_tcache_nslots_mul:3,tcache_gc_incr_bytes:1048576";
}
