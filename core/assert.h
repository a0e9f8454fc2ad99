// Always-on assertions (TigerBeetle's habit): a broken TW_ASSERT prints file,
// line and the condition that failed, then aborts, in every build type. They
// state what must hold; they are not error handling (outside input gets a
// Status, never an assertion).
#pragma once

namespace tensorwire {

[[noreturn]] void assertion_failed(const char* condition, const char* file, int line,
                                   const char* why);

}  // namespace tensorwire

#define TW_ASSERT(condition)                                                   \
  do {                                                                         \
    if (!(condition)) [[unlikely]] {                                           \
      ::tensorwire::assertion_failed(#condition, __FILE__, __LINE__, nullptr); \
    }                                                                          \
  } while (false)

// With a literal saying why it must hold.
#define TW_ASSERT_MSG(condition, why)                                       \
  do {                                                                      \
    if (!(condition)) [[unlikely]] {                                        \
      ::tensorwire::assertion_failed(#condition, __FILE__, __LINE__, why);  \
    }                                                                       \
  } while (false)

// For branches that cannot be reached if the code is right.
#define TW_UNREACHABLE(why) ::tensorwire::assertion_failed("unreachable", __FILE__, __LINE__, why)

// For the simulator's per-event paths (the event queue, the NIC ports' fair
// sharing, the RC transport, the registration checks), which run tens of
// millions of times a second: on in debug and sanitizer builds, where the
// whole test suite runs with them, and compiled out of release builds
// (TENSORWIRE_HOT_ASSERTS=0, set by meson.build), where they cost about 11%
// of the simulator's event rate (docs/PERFORMANCE.md). Off, the condition is
// still compiled, so it cannot rot.
#ifndef TENSORWIRE_HOT_ASSERTS
#define TENSORWIRE_HOT_ASSERTS 1
#endif
#if TENSORWIRE_HOT_ASSERTS
#define TW_ASSERT_HOT(condition) TW_ASSERT(condition)
#define TW_ASSERT_HOT_MSG(condition, why) TW_ASSERT_MSG(condition, why)
#else
#define TW_ASSERT_HOT(condition) \
  do {                           \
    (void)sizeof(condition);     \
  } while (false)
#define TW_ASSERT_HOT_MSG(condition, why) \
  do {                                    \
    (void)sizeof(condition);              \
    (void)sizeof(why);                    \
  } while (false)
#endif
